// teach.browser.mjs - the teaching views of the editor (README "Teaching") end to end, in
// Debian's Chromium driven by playwright-core, on a real `blockflow serve` with the pages of
// examples/teach: for a Conv2DBackpropFilter and a Conv2DBackpropInput block, click an element,
// read the lit operand cells and their values from the page and check that the products sum to
// the clicked value; the padding view of SAME on an odd size shows the ring after the data
// only, and the hovered corner element's taps that fell on it (explain's padded_taps); a
// constant typed into its grid re-runs the page and the explanation follows; the
// gradient check reports a pass; "Add gradient blocks" lays the gradients out beside the
// forward block. A screenshot of each step goes to BF_SCREENSHOTS (default
// build/teach-screenshots). Exit 77 (ctest: skipped) without Chromium.
import {cpSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {CHROMIUM, launchChromium, makeShot, repo, requireBrowser, screenshotDir, startServer,
        wireLabels,
        tempPages} from './harness.mjs';

const SHOTS = screenshotDir('teach-screenshots');
requireBrowser(CHROMIUM, 'chromium');

const {tmp, pages} = tempPages('bf-teach-');
for (const f of ['stride2_odd_input.json', 'valid_vs_same.json', 'finite_difference_check.json',
                 'depthwise_multiplier2.json']) {
  cpSync(join(repo, 'examples/teach', f), join(pages, f));
}

const token = 'teach-test-token-0123';
const {server, port, stderr: serverErr} = await startServer(pages, token);

const browser = await launchChromium();
const page = await browser.newPage({viewport: {width: 1440, height: 900}});
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));
const reqLog = [];
page.on('response', (r) => { reqLog.push(`${r.status()} ${r.request().method()} ${r.url().replace(/^http:\/\/[^/]*/, '')}`); if (r.status() >= 400) consoleErrors.push(`${r.status()} ${r.url()}`); });
const shot = makeShot(page, SHOTS);


/* the lit cells of tensor `name` in the Teach tab: [{index, value, term}] */
const lit = (name) => page.locator(`[data-testid="lit-${name}"]`).evaluateAll((els) =>
  els.map((e) => ({index: e.dataset.index, value: Number(e.dataset.value),
                   term: Number(e.dataset.term)})));

/* select a block: show the Problems tab (a smaller panel) and fit the page in view first */
async function select(id) {
  await page.getByRole('tab', {name: /Problems/}).click();
  await page.locator('.react-flow__controls-fitview').click();
  await page.getByTestId(`block-${id}`).click();
  await page.getByRole('heading', {level: 2}).first().waitFor();
  assert.equal(await page.getByTestId('block-id').inputValue(), id, `${id} is selected`);
}

let home = `http://127.0.0.1:${port}/`;

async function openTeach(pageName, block) {
  await page.goto(home); /* the editor's own address (the login cookie is scoped to it) */
  await page.getByRole('button', {name: pageName}).click();
  await page.getByTestId(`block-${block}`).waitFor();
  await select(block);
  await page.getByTestId('teach-tab').click();
  await page.getByTestId('terms-table').waitFor();
  /* the taller panel must not hide the block being explained: it stays on the canvas */
  const inView = async () => {
    const c = await page.getByTestId('canvas').boundingBox();
    const b = await page.getByTestId(`block-${block}`).boundingBox();
    return b.x >= c.x && b.y >= c.y && b.x + b.width <= c.x + c.width &&
           b.y + b.height <= c.y + c.height;
  };
  for (let i = 0; i < 40 && !(await inView()); i++) await page.waitForTimeout(50);
  assert.ok(await inView(), `${block} stays in view on the canvas with the Teach tab open`);
}

/* click element `index` of the block's map; check what lights up against the terms */
async function clickAndCheck(block, index, a, b) {
  const cell = page.locator(`[data-testid="grid-${block}"] g[data-index="${index.join(',')}"]`);
  const clicked = Number(await cell.getAttribute('data-value'));
  await cell.click();
  await page.getByTestId('sum-line').filter({hasText: `${block}[${index.join(', ')}] =`}).waitFor();
  await page.getByTestId('explain-busy').waitFor({state: 'detached'});
  await page.waitForFunction((n) => document.querySelectorAll(`[data-testid="lit-${n}"]`).length > 0, a);
  const rows = await page.getByTestId('term').count();
  const la = await lit(a);
  const lb = await lit(b);
  assert.equal(la.length, rows, `${a}: one lit cell per term`);
  assert.equal(lb.length, rows, `${b}: one lit cell per term`);
  let sum = 0;
  for (let k = 0; k < rows; k++) {
    const x = la.find((c) => c.term === k);
    const y = lb.find((c) => c.term === k);
    assert.ok(x && y, `term ${k} lit on both operands`);
    sum += x.value * y.value;
  }
  assert.ok(Math.abs(sum - clicked) <= 1e-4 * Math.max(1, Math.abs(clicked)),
            `${block}[${index}] = ${clicked}: the lit products sum to ${sum}`);
  console.log(`ok - ${block}[${index}] = ${clicked} = sum of ${rows} lit products ${a} x ${b}`);
  return {clicked, rows};
}

/* move the pointer to the palette (no hover explains there) and let a pending explain end */
async function park() {
  await page.mouse.move(100, 880);
  await page.waitForTimeout(400); /* past TeachPanel's 250 ms hover delay */
  await page.getByTestId('explain-busy').waitFor({state: 'detached'});
}

let failed = false;
try {
  /* 1. open with the token */
  await page.goto(`http://127.0.0.1:${port}/?token=${token}`);
  home = page.url();
  await page.getByRole('button', {name: 'stride2_odd_input'}).waitFor();

  /* 2. BackpropFilter: click dW[1,0,0,0]; its input and out_backprop elements light up */
  await openTeach('stride2_odd_input', 'dw');
  await clickAndCheck('dw', [1, 0, 0, 0], 'input', 'out_backprop');
  /* the explains ran dw and its inputs (the first when the tab opened, this one reused
   * them): they light up on the canvas as in a run; conv was not needed, and no page run is
   * claimed */
  await page.waitForFunction(() => ['finished', 'cached'].includes(
    document.querySelector('[data-testid="block-dw"]').dataset.state));
  for (const id of ['x', 'fs', 'dy']) {
    const st = await page.getByTestId(`block-${id}`).getAttribute('data-state');
    assert.ok(['finished', 'cached'].includes(st), `${id} ran for the explain (${st})`);
  }
  const convState = await page.getByTestId('block-conv').getAttribute('data-state');
  assert.ok(!['finished', 'cached'].includes(convState), `conv did not run (${convState})`);
  assert.equal(await page.getByTestId('run-state').count(), 0, 'no page run is shown');
  await shot('backprop-filter-contributions');
  /* every wire label is whole or a "⋯" (blocks side by side leave no room here); pointing at
   * a "⋯" shows the label on top */
  const labels = await wireLabels(page);
  assert.deepEqual(labels.covered, [], 'no wire label is cut by a block');
  assert.ok(labels.compact.includes('wire-conv.input'), `x -> conv is cramped: ${labels.compact}`);
  const cramped = page.getByTestId('wire-conv.input');
  await cramped.hover();
  const full = cramped.locator('.full');
  await full.filter({hasText: 'float32[1,5,5,1]'}).waitFor({state: 'visible'});
  const fb = await full.boundingBox();
  assert.ok(await page.evaluate(([x, y]) => !!document.elementFromPoint(x, y).closest(
    '[data-testid="wire-conv.input"]'), [fb.x + fb.width / 2, fb.y + fb.height / 2]),
            'the pointed-at label is on top of the blocks');
  await park();

  /* 3. BackpropInput: dX[0,2,2,0] from out_backprop x filter */
  await select('dx');
  await page.getByTestId('teach-tab').click();
  await page.getByTestId('sum-line').filter({hasText: 'dx[0, 0, 0, 0]'}).waitFor();
  await clickAndCheck('dx', [0, 2, 2, 0], 'out_backprop', 'filter');
  await clickAndCheck('dx', [0, 3, 2, 0], 'out_backprop', 'filter');
  await shot('backprop-input-contributions');

  /* 4. depthwise filter gradient: per channel and multiplier */
  await openTeach('depthwise_multiplier2', 'dw');
  const own = page.locator('.tensor-map').first(); /* dW [fh, fw, C, M]: pick c = 1, m = 1 */
  await own.getByLabel('channel', {exact: true}).fill('1');
  await own.getByLabel('multiplier').fill('1');
  await clickAndCheck('dw', [1, 0, 1, 1], 'input', 'out_backprop');
  await page.getByTestId('depthwise-note').filter({hasText: 'channel 3 = input channel 1 × 2 + multiplier 1'}).waitFor();
  await shot('depthwise-filter-gradient');

  /* 5. the padding view: SAME on a 5x5 image with a 2x2 filter pads 0 before, 1 after */
  await openTeach('valid_vs_same', 'same');
  const pv = page.getByTestId('padding-view');
  await pv.getByTestId('padding-text').filter({hasText: 'top 0, bottom 1, left 0, right 1'}).waitFor();
  const ring = await pv.locator('[data-testid^="ring-"]').evaluateAll((els) =>
    els.map((e) => [e.dataset.testid, Number(e.dataset.row), Number(e.dataset.col)]));
  assert.equal(ring.length, 11, 'one row below and one column right of 5x5: 6+6-1 cells');
  assert.ok(ring.every(([, r, c]) => r === 5 || c === 5), 'the ring is after the data only');
  assert.ok(ring.every(([k]) => k === 'ring-odd'), "every ring cell is SAME's odd pixel");
  await pv.getByTestId('size-formula').filter({hasText: 'height: out = ⌈in / stride⌉ = ⌈5 / 1⌉ = 5'}).waitFor();
  /* the bottom-right output reads one data pixel; three taps fell in the padding */
  await page.locator('[data-testid="grid-same"] g[data-index="0,4,4,0"]').hover();
  await page.getByTestId('sum-line').filter({hasText: 'same[0, 4, 4, 0] = 25'}).waitFor();
  await page.getByTestId('sum-line').filter({hasText: '3 taps fell in the padding'}).waitFor();
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="tap-x"]')]
    .map((e) => e.dataset.index).join(' ') === '0,4,4,0');
  /* ... and those three are outlined where they fell: on SAME's odd column and row, numbered
   * p1..p3 in explain's order, each with the filter tap it would have met */
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="padtap-x"]').length === 3);
  const ringTaps = await pv.locator('[data-testid="padtap-x"]').evaluateAll((els) =>
    els.map((e) => ({at: `${e.dataset.row},${e.dataset.col}`, taps: e.dataset.taps,
                     ring: e.parentElement.dataset.testid, label: e.textContent})));
  ringTaps.sort((p, q) => Number(p.taps) - Number(q.taps));
  assert.deepEqual(ringTaps.map((t) => t.at), ['4,5', '5,4', '5,5'], 'the corner window\'s ring taps');
  assert.deepEqual(ringTaps.map((t) => t.taps), ['0', '1', '2']);
  assert.ok(ringTaps.every((t) => t.ring === 'ring-odd'), 'each on a ring cell (the odd pixel)');
  assert.ok(ringTaps.every((t, k) => t.label.includes(`p${k + 1}`) && t.label.includes('reads 0')),
            'numbered and marked "reads 0": ' + ringTaps.map((t) => t.label).join(' | '));
  const list = await pv.getByTestId('padtap-list-x').innerText();
  for (const want of ['p1 at (4, 5) reads 0 × filter[0,1,0,0] = 2', 'p2 at (5, 4) reads 0 × filter[1,0,0,0] = 3',
                      'p3 at (5, 5) reads 0 × filter[1,1,0,0] = 4']) {
    assert.ok(list.includes(want), `the list says "${want}": ${list}`);
  }
  /* park the pointer off the grid first: scrolling under it would hover (and explain) another
   * element while the screenshots are taken */
  await park();
  await pv.scrollIntoViewIfNeeded();
  await shot('padding-view-corner-ring-taps');
  await pv.screenshot({path: join(SHOTS, 'padding-view-corner-ring-taps-detail.png')});
  await page.getByTestId('sum-line').filter({hasText: 'same[0, 4, 4, 0] = 25'}).waitFor();
  await page.locator('[data-testid="grid-same"] g[data-index="0,2,1,0"]').hover();
  await page.getByTestId('sum-line').filter({hasText: 'same[0, 2, 1, 0]'}).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="tap-x"]').length === 4);
  assert.equal(await pv.locator('[data-testid="padtap-x"]').count(), 0, 'an inner window reads no padding');
  await park();
  await pv.scrollIntoViewIfNeeded();
  await shot('padding-view-same-odd');

  /* 6. type a number into the constant x: the page re-runs and the explanation follows */
  await page.getByRole('button', {name: '▶ Run', exact: true}).click();
  await page.getByTestId('run-state').filter({hasText: 'finished'}).waitFor();
  await select('x');
  await page.getByRole('button', {name: 'Dismiss'}).click();
  const c00 = page.getByTestId('cell-x[0,0,0,0]');
  await c00.fill('100');
  await c00.press('Enter');
  await page.getByTestId('message').filter({hasText: 'Run finished'}).waitFor();
  await select('same');
  await page.getByTestId('teach-tab').click();
  await page.locator('[data-testid="grid-same"] g[data-index="0,0,0,0"]').click();
  /* same[0,0,0,0] = 100*1 + 2*2 + 6*3 + 7*4 = 150 */
  await page.getByTestId('sum-line').filter({hasText: 'same[0, 0, 0, 0] = 150'}).waitFor();
  await shot('constant-edited');

  /* 7. Add gradient blocks beside the forward block */
  await page.getByTestId('add-gradients').click();
  await page.getByTestId('block-same_grad_filter').waitFor();
  await page.getByTestId('block-same_grad_input').waitFor();
  const f = await page.getByTestId('block-same').boundingBox();
  const g = await page.getByTestId('block-same_grad_filter').boundingBox();
  assert.ok(g.x > f.x + f.width / 2, 'the gradient blocks are laid out to the right');
  await shot('gradient-blocks-added');

  /* 8. the gradient check of a filter gradient passes */
  await openTeach('finite_difference_check', 'dw');
  await page.getByTestId('gradcheck-button').click();
  await page.getByTestId('gradcheck-verdict').filter({hasText: /^PASS/}).waitFor({timeout: 60000});
  assert.equal(await page.getByTestId('gradcheck').getAttribute('data-pass'), 'true');
  await shot('gradient-check-pass');

  assert.deepEqual(consoleErrors, [], 'no errors in the browser console');
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  await page.screenshot({path: join(SHOTS, 'failure.png')}).catch(() => {});
  if (consoleErrors.length) console.error('browser console:', consoleErrors.join('\n'));
  if (serverErr()) console.error('server stderr:', serverErr().slice(-20000));
  if (process.env.BF_TEACH_DEBUG) console.error(reqLog.join('\n'));
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
