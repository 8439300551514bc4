// train.browser.mjs - live training in the editor (README "Serve": training) end to end, in
// Debian's Chromium driven by playwright-core, on a real `blockflow serve` with
// examples/train/learn_a_filter.json: the Training tab shows w (zeros) and its gradient; two
// single steps (⏭) shape the filter; Play at 20 steps/s shows it converging; at full speed the
// loss drops 100x; Alt+P pauses; the plot has points, the step count stays put while paused, ⏭
// adds exactly one step; the filter tiles' cells equal the Sobel filter within 1e-2 (read from
// the page); a learning-rate change with the Inspector's slider while playing keeps the step
// count and the loss curve; the Teach tab explains conv's filter gradient while paused; "Check
// backward pass" marks the gradient block green; ⟲ goes back to step 0; and on the forward
// page, "Build backward pass" with SGD from the Training tab adds the update and it trains:
// the tiles of w (zeros drawn as "0") and of its gradient follow the page changed while open
// (issue 24), undo takes them away (and the server's watch with them), redo brings them back
// and ⟲ then ⏭ shows zeros, then the first step. Screenshots at 1280x720 and 1920x1080 go to BF_SCREENSHOTS (default
// build/train-screenshots). Exit 77 (ctest: skipped) without Chromium.
import {cpSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {CHROMIUM, launchChromium, makeShot, repo, requireBrowser, screenshotDir, startServer,
        tempPages} from './harness.mjs';

const SHOTS = screenshotDir('train-screenshots');
requireBrowser(CHROMIUM, 'chromium');
const WAIT = 30000;
const SOBEL = [-1, 0, 1, -2, 0, 2, -1, 0, 1];

const {tmp, pages} = tempPages('bf-train-');
cpSync(join(repo, 'examples/train/learn_a_filter.json'), join(pages, 'learn_a_filter.json'));
cpSync(join(repo, 'examples/train/learn_a_filter.forward.json'), join(pages, 'forward.json'));
const token = 'train-test-token-0123';
const {server, port, stderr: serverErr} = await startServer(pages, token);
const browser = await launchChromium();
const page = await browser.newPage({viewport: {width: 1280, height: 720}});
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));
page.on('response', (r) => { if (r.status() >= 400) consoleErrors.push(`${r.status()} ${r.url()}`); });
const shot = makeShot(page, SHOTS);

const stepCount = async () => Number(await page.getByTestId('train-step-count').textContent());
const metrics = () => page.getByTestId('metrics').evaluate((e) => ({
  points: Number(e.dataset.points), first: Number(e.dataset.first), last: Number(e.dataset.last),
  firstStep: Number(e.dataset.firstStep)}));
const tile = (name) => page.getByTestId(`tile-${name}-0-0`).evaluate((e) => JSON.parse(e.dataset.values));
/* the numbers drawn in a tile's cells, as a person reads them */
const drawn = (name) => page.getByTestId(`tile-${name}-0-0`).evaluate((e) =>
  JSON.parse(e.dataset.numbers || '[]').map((n) => n[0]));
/* wait until tile `name` shows 9 values: all zero ('zero'), some not zero ('trained'), or all
 * within 1e-2 of `near` */
const tileShows = (name, want, near = null) => page.waitForFunction(([n, w, s]) => {
  const e = document.querySelector(`[data-testid="tile-${n}-0-0"]`);
  const v = e && e.dataset.values ? JSON.parse(e.dataset.values) : [];
  if (v.length !== 9 || !v.every(Number.isFinite)) return false;
  return w === 'zero' ? v.every((x) => x === 0) : w === 'trained' ? v.some((x) => x !== 0)
    : v.every((x, i) => Math.abs(x - s[i]) < 1e-2);
}, [name, want, near], {timeout: WAIT});
/* the refs the server's job of page `name` copies while it trains */
const serverWatch = (name) => page.evaluate(async (n) =>
  (await (await fetch(`api/pages/${n}/train`)).json()).watch, name);
const waitFor = (fn, arg) => page.waitForFunction(fn, arg, {timeout: WAIT});
/* select a block by keyboard (focus its node, Enter), as a person without a mouse does: at
 * the fitted zoom of this wide page a block is a few pixels tall and a click may land on a
 * port; retried until the Inspector shows it */
async function selectBlock(id) {
  for (let i = 0; i < 5; i++) {
    await page.locator(`.react-flow__node[data-id="${id}"]`).focus();
    await page.keyboard.press('Enter');
    const ok = await page.waitForFunction((b) => {
      const e = document.querySelector('[data-testid="block-id"]');
      return e && e.value === b;
    }, id, {timeout: 2000}).then(() => true, () => false);
    if (ok) return;
  }
  throw new Error(`could not select ${id}`);
}

let failed = false;
try {
  await page.goto(`http://127.0.0.1:${port}/?token=${token}`);
  const home = page.url(); /* the editor's own folder (the login cookie is scoped to it) */
  await page.getByRole('button', {name: 'learn_a_filter'}).click();
  await page.getByTestId('block-w').waitFor();
  await page.getByTestId('training-tab').click();
  await page.getByTestId('train-play').waitFor();
  assert.equal(await stepCount(), 0);
  await page.getByTestId('tile-w-0-0').waitFor({timeout: WAIT});
  assert.deepEqual(await tile('w'), new Array(9).fill(0), 'w starts at zeros');
  assert.deepEqual(await drawn('w'), new Array(9).fill('0'), 'a zero reads "0" (not "0e0")');
  await shot('before-training-w-is-zero');

  /* two single steps, by pointer: the filter takes shape */
  for (const n of [1, 2]) {
    await page.getByTestId('train-step').click();
    await waitFor((k) => document.querySelector('[data-testid="train-step-count"]').textContent === String(k), n);
  }
  await waitFor(() => { const e = document.querySelector('[data-testid="tile-w-0-0"]');
    return e && JSON.parse(e.dataset.values).some((v) => v !== 0); });
  assert.equal((await metrics()).points, 2, 'two points on the plot');
  await shot('two-steps-filter-taking-shape');

  /* play slowly enough to watch (20 steps/s), then at full speed until the loss drops 100x */
  await page.getByTestId('train-speed').selectOption('20');
  await page.getByTestId('train-play').click();
  await page.getByTestId('train-pause').waitFor();
  await waitFor(() => Number(document.querySelector('[data-testid="train-step-count"]').textContent) >= 8);
  await shot('playing-20-steps-per-second');
  await page.getByTestId('train-speed').selectOption('0');
  await waitFor(() => { const e = document.querySelector('[data-testid="metrics"]');
    return Number(e.dataset.last) <= Number(e.dataset.first) / 100; });
  /* pause with the keyboard */
  await page.keyboard.press('Alt+P');
  await page.getByTestId('train-play').waitFor({timeout: WAIT});
  const m = await metrics();
  assert.ok(m.points > 3, `the plot has points (${m.points})`);
  assert.ok(m.last <= m.first / 100, `loss dropped 100x: ${m.first} -> ${m.last}`);
  const paused = await stepCount();
  await page.waitForTimeout(600);
  assert.equal(await stepCount(), paused, 'the step count is stable while paused');
  await shot('paused-loss-dropped-100x');

  /* ⏭ adds exactly one step (by keyboard focus and Enter this time) */
  await page.getByTestId('train-step').focus();
  await page.keyboard.press('Enter');
  await waitFor((k) => document.querySelector('[data-testid="train-step-count"]').textContent === String(k), paused + 1);
  await page.waitForTimeout(400);
  assert.equal(await stepCount(), paused + 1, '⏭ advanced exactly one step');

  /* the filter tiles read from the page: the Sobel filter */
  await waitFor((s) => { const e = document.querySelector('[data-testid="tile-w-0-0"]');
    return e && JSON.parse(e.dataset.values).every((v, i) => Math.abs(v - s[i]) < 1e-2); }, SOBEL);
  const w = await tile('w');
  w.forEach((v, i) => assert.ok(Math.abs(v - SOBEL[i]) < 1e-2, `w[${i}] = ${v} vs ${SOBEL[i]}`));
  await shot('filter-equals-sobel');
  await page.setViewportSize({width: 1920, height: 1080});
  await page.waitForTimeout(300);
  await shot('filter-equals-sobel-1920');
  await page.setViewportSize({width: 1280, height: 720});

  /* change the learning rate with its slider while playing: the step count and the curve go on */
  await page.getByTestId('train-speed').selectOption('100');
  await page.getByTestId('train-play').click();
  await page.getByTestId('train-pause').waitFor();
  await page.locator('.react-flow__controls-fitview').click();
  await selectBlock('learning_rate');
  const slider = page.getByTestId('slider-learning_rate');
  await slider.waitFor();
  const before = await stepCount();
  const pointsBefore = (await metrics()).points;
  await slider.focus();
  for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowLeft');
  await waitFor(() => Number(document.querySelector('[data-testid="slider-value"]').textContent) < 0.5);
  const lr = Number(await page.getByTestId('slider-value').textContent());
  await page.waitForTimeout(700);
  assert.ok(await stepCount() > before, 'training went on after the change');
  const after = await metrics();
  assert.ok(after.points >= pointsBefore && after.firstStep === 1,
            `the curve was kept (${pointsBefore} -> ${after.points}, from step ${after.firstStep})`);
  await page.getByTestId('train-pause').click();
  await page.getByTestId('train-play').waitFor({timeout: WAIT});
  /* the server's session holds the new rate */
  const sess = await page.evaluate(async () => (await fetch('api/pages/learn_a_filter?view=session')).json());
  assert.equal(sess.session_page.blocks.find((b) => b.id === 'learning_rate').attrs.value, lr);
  await shot('learning-rate-changed-while-playing');
  /* any scalar can be plotted from its block: the learning rate itself */
  await page.getByTestId('plot-block').click();
  await page.getByRole('button', {name: 'learning_rate ×'}).waitFor({timeout: WAIT});
  const lrStep = await stepCount();
  await page.getByTestId('train-step').click();
  await waitFor((k) => document.querySelector('[data-testid="train-step-count"]').textContent === String(k),
                lrStep + 1);

  /* paused: the Teach tab explains an element of the filter's gradient for this batch */
  await selectBlock('predictions_grad_filter');
  await page.getByTestId('teach-tab').click();
  await page.getByTestId('terms-table').waitFor({timeout: WAIT});
  await shot('teach-tab-while-paused');

  /* "Check backward pass": the gradient block is marked green with its relative error */
  await page.getByTestId('training-tab').click();
  await page.getByTestId('check-backward').click();
  await page.getByTestId('check-result').waitFor({timeout: WAIT});
  const mark = page.getByTestId('mark-predictions_grad_filter');
  await mark.waitFor({timeout: WAIT});
  assert.match(await mark.textContent(), /✓ gradient check · rel\. error/);
  await shot('backward-pass-checked');

  /* ⟲: back to step 0, the curve and the filter with it */
  await page.getByTestId('train-reset').click();
  await waitFor(() => document.querySelector('[data-testid="train-step-count"]').textContent === '0');
  await waitFor(() => Number(document.querySelector('[data-testid="metrics"]').dataset.points) === 0);
  await waitFor(() => { const e = document.querySelector('[data-testid="tile-w-0-0"]');
    return e && JSON.parse(e.dataset.values).every((v) => v === 0); });
  await shot('reset-to-step-0');

  /* the forward page: build its backward pass with SGD from the Training tab, then train */
  await page.goto(home);
  await page.getByRole('button', {name: 'forward'}).click();
  await page.getByTestId('block-w').waitFor();
  await page.getByTestId('training-tab').click();
  assert.equal(await page.getByTestId('train-play').count(), 0, 'no training bar without updates');
  await page.getByLabel('Optimizer').selectOption('sgd');
  await page.getByLabel('Learning rate').fill('0.5');
  await page.getByRole('button', {name: /Build backward pass/}).click();
  await page.getByTestId('block-w_update').waitFor({timeout: WAIT});
  await page.getByTestId('train-play').waitFor();
  /* the update blocks came while the page was open: w and its gradient are watched now */
  await tileShows('w', 'zero');
  const wBefore = await tile('w');
  assert.deepEqual(wBefore, new Array(9).fill(0), 'the forward page\'s w starts at zeros');
  assert.deepEqual(await drawn('w'), new Array(9).fill('0'));
  /* the page has doubled: it is framed whole, and no block is under the minimap */
  let framing = null;
  for (let k = 0; k < 60; k++) {
    framing = await page.evaluate(() => {
      const pane = document.querySelector('.react-flow__pane').getBoundingClientRect();
      const mm = document.querySelector('.react-flow__minimap');
      const m = mm ? mm.getBoundingClientRect() : null;
      const bad = [];
      for (const n of document.querySelectorAll('.react-flow__node')) {
        const b = n.getBoundingClientRect();
        if (b.left < pane.left - 1 || b.right > pane.right + 1 || b.top < pane.top - 1 || b.bottom > pane.bottom + 1) bad.push(`${n.dataset.id} out of view`);
        else if (m && b.left < m.right && m.left < b.right && b.top < m.bottom && m.top < b.bottom) bad.push(`${n.dataset.id} under the minimap`);
      }
      return bad;
    });
    if (!framing.length) break;
    await page.waitForTimeout(50);
  }
  assert.deepEqual(framing, [], 'after the backward pass is built, the whole page is in view');
  await shot('forward-page-backward-built');
  await page.getByTestId('train-speed').selectOption('0');
  await page.getByTestId('train-play').click();
  await waitFor(() => { const e = document.querySelector('[data-testid="metrics"]');
    return e && Number(e.dataset.points) > 5 && Number(e.dataset.last) <= Number(e.dataset.first) / 100; });
  await page.keyboard.press('Alt+P');
  await page.getByTestId('train-play').waitFor({timeout: WAIT});
  /* the tiles show the trained filter and this step's gradient (issue 24: they showed w's
   * zeros and "after the next step" for the gradient) */
  await tileShows('w', 'near', SOBEL);
  const wAfter = await tile('w');
  assert.ok(wAfter.some((v, i) => v !== wBefore[i]) && wAfter.some((v) => v !== 0),
            `w trained: ${wAfter}`);
  await tileShows('predictions_grad_filter', 'trained');
  const gradGrid = page.getByTestId('grid-predictions_grad_filter');
  assert.doesNotMatch(await gradGrid.textContent(), /after the next step/);
  assert.ok((await drawn('predictions_grad_filter')).every((t) => /^-?[0-9.]+(e-?[0-9]+)?$/.test(t)),
            'the gradient\'s cells show numbers');
  await shot('forward-page-trained');


  /* undo the backward pass: its tiles go (no errors); redo: they come back and follow the
   * steps again (the watch is sent once the server holds the blocks again) */
  await page.locator('button[data-action="undo"]').click();
  await page.getByText('This page has no update blocks yet').waitFor({timeout: WAIT});
  assert.equal(await page.getByTestId('grid-w').count(), 0, 'the tiles went with the updates');
  assert.equal(await page.getByTestId('train-play').count(), 0, 'and the training bar');
  /* and the server no longer copies tensors of blocks that are gone */
  await page.waitForFunction(async () => (await (await fetch('api/pages/forward/train')).json())
    .watch.length === 0, null, {timeout: WAIT}).catch(() => {});
  assert.deepEqual(await serverWatch('forward'), [], 'nothing watched without update blocks');
  await shot('forward-page-backward-undone');
  await page.locator('button[data-action="redo"]').click();
  await page.getByTestId('train-reset').waitFor({timeout: WAIT});
  await page.getByTestId('train-reset').click();
  await waitFor(() => document.querySelector('[data-testid="train-step-count"]').textContent === '0');
  await tileShows('w', 'zero');
  assert.deepEqual(await serverWatch('forward'), ['w', 'predictions_grad_filter'], 'watched again');
  await page.getByTestId('train-step').click();
  await waitFor(() => document.querySelector('[data-testid="train-step-count"]').textContent === '1');
  await tileShows('w', 'trained');
  await tileShows('predictions_grad_filter', 'trained');
  await waitFor(() => document.querySelector('[data-testid="metrics"]').dataset.points === '1');
  await page.waitForTimeout(300); /* the plot redraws at most every 200 ms */
  await shot('forward-page-redone-one-step');

  assert.deepEqual(consoleErrors, [], 'no errors in the browser console');
  console.log('train.browser: all checks passed');
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  await page.screenshot({path: join(SHOTS, 'failure.png')}).catch(() => {});
  if (consoleErrors.length) console.error('browser console:', consoleErrors.join('\n'));
  if (serverErr()) console.error('server stderr:', serverErr().slice(-5000));
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
