// editor.firefox.mjs - the editor end to end in Debian's Firefox ESR, driven over WebDriver BiDi
// by puppeteer-core (playwright-core cannot drive a stock Firefox): a real `blockflow serve` on
// an ephemeral loopback port with a temporary pages folder; open the editor with the token,
// load an example (nchw), see the wire labels (dtype[shape]), change an attribute and see the
// labels change and a problem marked, fix it, run and see every block finish, read a heatmap
// value on hover, save with Ctrl+S, and check that `blockflow run` on the saved file gives the
// value the heatmap showed. Any error in the browser console fails it. A screenshot of each
// step goes to BF_SCREENSHOTS (default build/editor-firefox-screenshots). No browser download:
// it runs /usr/bin/firefox-esr (BF_FIREFOX) headless with a fresh profile and its background
// network features off. Exit 77 (ctest: skipped) without Firefox.
import {spawnSync} from 'node:child_process';
import {cpSync, mkdirSync, readFileSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {BINARY, makeShot, readNpy, repo, requireBrowser, screenshotDir, startServer,
        tempPages} from './harness.mjs';
/* Firefox, with its background network features off (firefox.mjs) */
import {FIREFOX, launchFirefox} from './firefox.mjs';

const SHOTS = screenshotDir('editor-firefox-screenshots');
const WAIT = 30000; /* ms for any one expectation: the machine may be busy */
requireBrowser(FIREFOX, 'firefox-esr');

const {tmp, pages} = tempPages('bf-editor-ff-');
const profile = join(tmp, 'profile');
mkdirSync(profile);
for (const f of ['filter_grad_same.json', 'filter_grad_valid.json', 'nchw.json']) {
  cpSync(join(repo, 'examples', f), join(pages, f));
}

const token = 'editor-firefox-token-0123';
const {server, port, stderr: serverErr} = await startServer(pages, token);

let browser;
let page;
const consoleErrors = [];
let failed = false;
try {
  browser = await launchFirefox(profile);
  page = (await browser.pages())[0] || await browser.newPage();
  await page.setViewport({width: 1440, height: 900});
  page.setDefaultTimeout(WAIT);
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));

  const shot = makeShot(page, SHOTS);
  /* the first element matching a CSS selector whose text contains `text` (or matches it) */
  const byText = async (sel, text) => {
    const h = await page.waitForFunction((s, t, re) => {
      const m = re ? new RegExp(t) : null;
      return [...document.querySelectorAll(s)].find((e) => (m ? m.test(e.textContent)
                                                              : e.textContent.includes(t)));
    }, {polling: 100, timeout: WAIT}, sel, text instanceof RegExp ? text.source : text,
    text instanceof RegExp);
    return h.asElement();
  };
  const tid = (id) => `[data-testid="${id}"]`;
  const label = (id, text) => byText(tid(`wire-${id}`), text);
  const attr = (sel, name) => page.$eval(sel, (e, n) => e.getAttribute(n), name);
  const clickPane = async () => {
    const b = await (await page.$('.react-flow__pane')).boundingBox();
    await page.mouse.click(b.x + 5, b.y + 5);
  };
  const ctrl = async (key) => {
    await page.keyboard.down('Control');
    await page.keyboard.press(key);
    await page.keyboard.up('Control');
  };

  /* 1. open with the token: the cookie is set, the token leaves the address bar */
  await page.goto(`http://127.0.0.1:${port}/?token=${token}`);
  await page.waitForSelector('.page-list button[data-page="filter_grad_same"]');
  assert.ok(!page.url().includes('token='), 'the token stays out of the address bar');
  await shot('welcome');

  /* 2. load an example: wires labelled with the server's inferred dtype and shape */
  await page.click('.page-list button[data-page="nchw"]');
  await page.waitForSelector(tid('block-dx'));
  await label('y.input', 'float32[1,2,6,6]');
  await label('y.filter', 'float32[3,3,2,3]');
  await label('dx.out_backprop', 'float32[1,3,3,3]');
  await label('dx.input_sizes', 'int32[4]');
  await page.waitForSelector(tid('no-problems'));
  await shot('example-opened');

  /* 3. change an attribute (x's shape): the labels downstream change, and dx, whose
   * input_sizes no longer match, shows the problem; then fix xs to match */
  const setText = async (sel, text) => {
    const box = await page.waitForSelector(sel);
    await box.click();
    await box.evaluate((e) => e.select());
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
  };
  await page.click(tid('block-x'));
  await setText('#attr-x-shape', '1, 2, 8, 8');
  await label('y.input', 'float32[1,2,8,8]');
  await label('dx.out_backprop', 'float32[1,3,4,4]');
  await page.waitForSelector(tid('problems-dx'));
  await byText('.topbar', '●'); /* unsaved */
  await shot('attribute-changed-problem-marked');
  await page.click(tid('block-xs'));
  await setText('#attr-xs-value', '1, 2, 8, 8');
  await page.waitForSelector(tid('no-problems'));
  await byText(tid('block-dx'), 'float32[1,2,8,8]');
  await shot('attribute-changed');

  /* 4. run, and see every block finish */
  await clickPane();
  await (await byText('.topbar button', '▶ Run')).click();
  await byText(tid('run-state'), 'finished');
  for (const id of ['x', 'w', 'y', 'xs', 'dx']) {
    const st = await attr(tid(`block-${id}`), 'data-state');
    assert.ok(['finished', 'cached'].includes(st), `${id} finished (${st})`);
  }
  assert.equal(await attr(tid('block-dx'), 'data-state'), 'finished');
  await byText(tid('run-dx'), /cpu · .* ms/);
  await shot('run-finished');

  /* 5. inspect dx: summary and heatmap (NCHW: batch 0, channel 0, 8x8); read a value */
  await page.click(tid('block-dx'));
  await (await byText('button[role="tab"]', 'Output')).click();
  await byText(tid('summary'), '[1, 2, 8, 8]');
  const heat = await page.waitForSelector(tid('heatmap'));
  /* the 8x8 map and its colour scale fit the Output panel: nothing to scroll */
  const hb = await heat.boundingBox();
  assert.ok(hb.width > 0 && hb.height > 0, 'the heatmap has a size');
  const fits = await page.evaluate(() => {
    const body = document.querySelector('section.bottom .tab-body');
    return body.scrollHeight <= body.clientHeight + 1;
  });
  assert.ok(fits, 'the Output panel shows the whole heatmap without scrolling');
  const [hx, hy] = [hb.x + hb.width * (1.5 / 8), hb.y + hb.height * (0.5 / 8)]; /* row 0, col 1 */
  assert.ok(await page.evaluate((x, y) => document.elementFromPoint(x, y)?.dataset.testid,
                                hx, hy) === 'heatmap', 'the cell is visible under the pointer');
  await page.mouse.move(hx, hy);
  const hover = await (await byText(tid('hover-value'), 'dx[0, 0, 0, 1]'))
    .evaluate((e) => e.textContent);
  const shown = Number(hover.split('=')[1]);
  assert.ok(Number.isFinite(shown), `a number under the pointer: ${hover}`);
  await shot('heatmap-hover');

  /* 6. save with Ctrl+S: the unsaved mark goes; the file is the CLI's page format, and
   * blockflow run on it gives the number the heatmap showed */
  await clickPane();
  await ctrl('s');
  await byText(tid('message'), 'Saved');
  assert.equal(await page.$$eval('.topbar .dirty', (l) => l.length), 0,
               'no unsaved mark after saving');
  await shot('saved');
  const saved = JSON.parse(readFileSync(join(pages, 'nchw.json'), 'utf8'));
  assert.equal(saved.format, 'blockflow.page');
  assert.deepEqual(saved.blocks.find((b) => b.id === 'x').attrs.shape, [1, 2, 8, 8]);
  const out = join(tmp, 'out');
  const r = spawnSync(BINARY, ['run', join(pages, 'nchw.json'), '--out', out],
                      {encoding: 'utf8'});
  assert.equal(r.status, 0, r.stderr);
  const dx = readNpy(join(out, 'dx.npy'));
  assert.deepEqual(dx.shape, [1, 2, 8, 8]);
  assert.ok(Math.abs(shown - dx.data[1]) <= 1e-5 * Math.max(1e-3, Math.abs(dx.data[1])),
            `hover shows dx[0,0,0,1] = ${dx.data[1]} (to 6 digits), not ${shown}`);
  console.log(`ok - heatmap hover in Firefox (${hover}) equals blockflow run's dx.npy[0,0,0,1]`);
  assert.deepEqual(consoleErrors, [], 'no errors in the browser console');
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  if (page) await page.screenshot({path: join(SHOTS, 'failure.png')}).catch(() => {});
  if (consoleErrors.length) console.error('browser console:', consoleErrors.join('\n'));
  if (serverErr()) console.error('server stderr:', serverErr().slice(-20000));
} finally {
  if (browser) await browser.close().catch((e) => console.error('closing Firefox:', e));
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
