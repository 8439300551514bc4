// editor.browser.mjs - the editor end to end, in Debian's Chromium driven by playwright-core:
// a real `blockflow serve` on an ephemeral loopback port with a temporary pages folder; open
// the editor with the token, load an example, add a block from the palette, wire it, change an
// attribute and see the wire labels change, break a wire and see the error, run and see every
// block finish, read a heatmap value on hover and compare it with the CLI's .npy output, save,
// reload, and run the saved file with `blockflow run`. A screenshot of each step goes to
// BF_SCREENSHOTS (default build/editor-screenshots). Exit 77 (ctest: skipped) without Chromium.
import {spawnSync} from 'node:child_process';
import {cpSync, readFileSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {BINARY, CHROMIUM, launchChromium, makeShot, readNpy, repo, requireBrowser, screenshotDir,
        startServer, tempPages, wireLabels} from './harness.mjs';

const SHOTS = screenshotDir('editor-screenshots');
requireBrowser(CHROMIUM, 'chromium');

const {tmp, pages} = tempPages('bf-editor-');
for (const f of ['filter_grad_same.json', 'filter_grad_valid.json', 'nchw.json']) {
  cpSync(join(repo, 'examples', f), join(pages, f));
}

const token = 'editor-test-token-0123';
const {server, port, stderr: serverErr} = await startServer(pages, token);

const browser = await launchChromium();
const page = await browser.newPage({viewport: {width: 1440, height: 900}});
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));
const shot = makeShot(page, SHOTS);
const label = (id) => page.getByTestId(`wire-${id}`);
const mod = process.platform === 'darwin' ? 'Meta' : 'Control';

let failed = false;
try {
  /* 1. open with the token: the cookie is set, the token leaves the address bar */
  await page.goto(`http://127.0.0.1:${port}/?token=${token}`);
  await page.getByRole('button', {name: 'filter_grad_same'}).waitFor();
  assert.ok(!page.url().includes('token='), 'the token stays out of the address bar');
  await shot('welcome');

  /* 2. load an example: wires labelled with the server's inferred dtype and shape */
  await page.getByRole('button', {name: 'filter_grad_same'}).click();
  await page.getByTestId('block-dw').waitFor();
  await assert.doesNotReject(label('dw.input').filter({hasText: 'float32[1,5,5,1]'}).waitFor());
  await label('dw.filter_sizes').filter({hasText: 'int32[4]'}).waitFor();
  await page.getByTestId('block-dw').getByText('float32[3,3,1,1]').waitFor();
  await page.getByTestId('no-problems').waitFor();
  assert.deepEqual((await wireLabels(page)).covered, [], 'no wire label is cut by a block');
  await shot('example-opened');

  /* 3. add a block from the palette (drag and drop) */
  await page.getByLabel('Search blocks').fill('identity');
  const box = await page.getByTestId('canvas').boundingBox();
  await page.locator('.palette-item[data-type="Identity"]').dragTo(page.getByTestId('canvas'), {
    targetPosition: {x: box.width * 0.8, y: box.height * 0.8}});
  await page.getByTestId('block-identity').waitFor();
  await page.getByLabel('Search blocks').fill('');

  /* 4. wire dw's output into it */
  const src = page.getByTestId('block-dw').locator('.react-flow__handle.source');
  const dst = page.getByTestId('block-identity').locator('.react-flow__handle.target');
  await src.dragTo(dst);
  await label('identity.input').filter({hasText: 'float32[3,3,1,1]'}).waitFor();
  await shot('block-added-and-wired');

  /* a wire that cannot type-check is refused, with the reason */
  await page.getByTestId('block-fs').locator('.react-flow__handle.source')
    .dragTo(page.getByTestId('block-identity').locator('.react-flow__handle.target'));
  await page.getByTestId('message').filter({hasText: /cycle|refused|takes/}).waitFor()
    .catch(() => {}); /* Identity takes every dtype: the wire is allowed and replaces */
  await page.keyboard.press(`${mod}+z`);
  await label('identity.input').filter({hasText: 'float32[3,3,1,1]'}).waitFor();

  /* 5. change an attribute (fs's value: the filter size) and see the labels change */
  await page.getByTestId('block-fs').click();
  const value = page.locator('#attr-fs-value');
  await value.fill('2, 2, 1, 1');
  await value.press('Enter');
  await label('identity.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await page.getByTestId('block-dw').getByText('float32[2,2,1,1]').waitFor();
  await shot('attribute-changed');

  /* 6. break a wire: the problem is marked on the block and port, and listed */
  await page.getByTestId('block-dw').click();
  await page.getByRole('button', {name: 'Disconnect out_backprop'}).click();
  await page.getByTestId('problems-dw').filter({hasText: 'out_backprop'}).waitFor();
  await page.getByTestId('problems').filter({hasText: 'dw.out_backprop'}).waitFor();
  /* downstream, identity's input is still wired, only its type is unknown now */
  const idIn = page.getByTestId('block-identity').locator('.port.in .port-type');
  assert.equal((await idIn.textContent()).trim(), '?', 'a wired port of unknown type reads "?"');
  await shot('wire-broken-error-marked');
  await page.locator('.react-flow__pane').click({position: {x: 5, y: 5}});
  await page.keyboard.press(`${mod}+z`); /* undo brings the wire back */
  await page.getByTestId('no-problems').waitFor();

  /* 7. make the new block an output too, run, and see every block finish */
  await page.getByTestId('block-identity').click();
  await page.getByLabel(/an output of the page/).check();
  await page.getByRole('button', {name: '▶ Run', exact: true}).click();
  await page.getByTestId('run-state').filter({hasText: 'finished'}).waitFor();
  for (const id of ['x', 'fs', 'dy', 'dw', 'identity']) {
    const st = await page.getByTestId(`block-${id}`).getAttribute('data-state');
    assert.ok(['finished', 'cached'].includes(st), `${id} finished (${st})`);
  }
  assert.equal(await page.getByTestId('block-dw').getAttribute('data-state'), 'finished');
  await page.getByTestId('run-dw').filter({hasText: /cpu · .* ms/}).waitFor();
  await shot('run-finished');

  /* 8. inspect dw: summary and heatmap; read a value on hover */
  await page.getByTestId('block-dw').click();
  await page.getByRole('tab', {name: /Output/}).click();
  await page.getByTestId('summary').filter({hasText: '[2, 2, 1, 1]'}).waitFor();
  const heat = page.getByTestId('heatmap');
  await heat.waitFor();
  const hb = await heat.boundingBox();
  await page.mouse.move(hb.x + hb.width * 0.75, hb.y + hb.height * 0.25); /* row 0, col 1 */
  const hover = await page.getByTestId('hover-value').filter({hasText: 'dw[0, 1, 0, 0]'})
    .textContent();
  const shown = Number(hover.split('=')[1]);
  await shot('heatmap-hover');
  /* the Output tab is tall enough for the whole heatmap; the splitter above the panel
   * resizes it, by keyboard and by dragging, and the height is remembered per tab */
  const panel = page.locator('section.bottom');
  const heightOf = async (l) => (await l.boundingBox()).height;
  const pb = await panel.boundingBox();
  const hm = await heat.boundingBox();
  assert.ok(hm.y + hm.height <= pb.y + pb.height, 'the heatmap is not cut by the panel');
  const splitter = page.getByRole('separator', {name: /Height of the panel/});
  const h0 = await heightOf(panel);
  await splitter.focus();
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowDown');
  assert.equal(await heightOf(panel), h0 - 72, 'three ArrowDowns: 72 px less');
  const sb = await splitter.boundingBox();
  await page.mouse.move(sb.x + sb.width / 2, sb.y + sb.height / 2);
  await page.mouse.down();
  await page.mouse.move(sb.x + sb.width / 2, sb.y + sb.height / 2 - 100, {steps: 5});
  await page.mouse.up();
  assert.equal(await heightOf(panel), h0 + 28, 'dragged 100 px up: 100 px more');
  assert.equal(await splitter.getAttribute('aria-valuenow'), String(h0 + 28));
  await page.getByRole('tab', {name: /Problems/}).click();
  assert.equal(await heightOf(panel), 260, 'the Problems tab keeps its own height');
  await page.getByRole('tab', {name: /Output/}).click();
  assert.equal(await heightOf(panel), h0 + 28, 'and the Output tab its chosen one');
  await shot('output-panel-resized');

  /* 9. save (Ctrl+S), reload, and the page comes back as saved */
  await page.locator('.react-flow__pane').click({position: {x: 5, y: 5}});
  await page.keyboard.press(`${mod}+s`);
  await page.getByTestId('message').filter({hasText: 'Saved'}).waitFor();
  assert.equal(await page.locator('.topbar .dirty').count(), 0, 'no unsaved mark after saving');
  await page.reload(); /* the open page is in the address bar: it opens again */
  await page.getByTestId('docname').filter({hasText: 'filter_grad_same.json'}).waitFor();
  await page.getByTestId('block-identity').waitFor();
  await label('identity.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await page.getByTestId('block-dw').click();
  await page.getByRole('tab', {name: /Output/}).click();
  assert.equal(await heightOf(panel), h0 + 28, 'the chosen height outlives a reload');
  await page.getByRole('tab', {name: /Problems/}).click();
  await shot('saved-and-reloaded');

  /* 10. the saved file is the CLI's page format: blockflow run gives the same numbers */
  const saved = JSON.parse(readFileSync(join(pages, 'filter_grad_same.json'), 'utf8'));
  assert.equal(saved.format, 'blockflow.page');
  assert.ok(saved.blocks.find((b) => b.id === 'identity').ui, 'positions are kept in ui');
  const out = join(tmp, 'out');
  const r = spawnSync(BINARY, ['run', join(pages, 'filter_grad_same.json'), '--out', out],
                      {encoding: 'utf8'});
  assert.equal(r.status, 0, r.stderr);
  const dw = readNpy(join(out, 'dw.npy'));
  assert.deepEqual(dw.shape, [2, 2, 1, 1]);
  assert.equal(shown, dw.data[1], `hover shows dw[0,1,0,0] = ${dw.data[1]}`);
  const ident = readNpy(join(out, 'identity.npy'));
  assert.deepEqual(ident.data, dw.data);
  console.log(`ok - heatmap hover ${shown} equals blockflow run's dw.npy[0,1,0,0]`);
  assert.deepEqual(consoleErrors, [], 'no errors in the browser console');
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  await page.screenshot({path: join(SHOTS, 'failure.png')}).catch(() => {});
  if (consoleErrors.length) console.error('browser console:', consoleErrors.join('\n'));
  if (serverErr()) console.error('server stderr:', serverErr().slice(-20000));
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
