// editor.actions.mjs - the editor's promised interactions, driven as a person would in Debian's
// Chromium (playwright-core) against a real `blockflow serve` on an ephemeral loopback port
// with a temporary pages folder, each checked on the page AND on disk or through the API:
//   pages      new, rename, duplicate, delete (the page list, the files), open from the list
//   dirty      the unsaved mark appears on an edit and goes away on Ctrl+S (and the file has it)
//   undo/redo  Ctrl+Z / Ctrl+Shift+Z restore wire labels and attribute values (and the session)
//   blocks     Ctrl+C / Ctrl+V gives a new id with the same attributes; Delete removes a block
//              and its wires; one Ctrl+Z brings both back
//   conflict   the file changed on disk behind the editor's back: Ctrl+S asks; Cancel leaves
//              the file as written, "Load the disk version" shows it, "Overwrite" writes ours
//   run to     runs only the selected block's upstream (block states and the server's events)
//   cancel     a long run (a chain of 7x7 convolutions) ends cancelled soon after Cancel, and
//              the page stays usable (an edit, then a run)
//   keyboard   Tab reaches the toolbar, the palette search, a palette item and a block, each
//              with a visible focus ring; Enter opens a page, adds a block, selects a block;
//              the Inspector's list of an input's possible sources wires it
// A screenshot of each step goes to BF_SCREENSHOTS (default build/editor-actions-screenshots).
// Waits are for conditions, never for times. Exit 77 (ctest: skipped) without Chromium.
import {cpSync, existsSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {CHROMIUM, launchChromium, makeShot, repo, requireBrowser, screenshotDir, startServer,
        tempPages} from './harness.mjs';

const SHOTS = screenshotDir('editor-actions-screenshots');
requireBrowser(CHROMIUM, 'chromium');

/* ---- the pages folder ------------------------------------------------------------------ */
const {tmp, pages} = tempPages('bf-actions-');
const file = (name) => join(pages, `${name}.json`);
const readPage = (name) => JSON.parse(readFileSync(file(name), 'utf8'));
const writePage = (name, p) => writeFileSync(file(name), JSON.stringify(p, null, 2) + '\n');

const base = JSON.parse(readFileSync(join(repo, 'examples/filter_grad_same.json'), 'utf8'));
cpSync(join(repo, 'examples/filter_grad_same.json'), file('filter_grad_same'));
/* edits: filter_grad_same with an Identity after dw, whose wire label follows fs's value */
const edits = structuredClone(base);
edits.name = 'edits';
edits.blocks.push({id: 'id1', type: 'Identity', inputs: {input: 'dw'}});
edits.outputs = ['dw', 'id1'];
writePage('edits', edits);
writePage('conflict', {...structuredClone(edits), name: 'conflict'});
/* chain: x -> a -> b, and c on its own; running to a must leave b and c alone */
writePage('chain', {
  format: 'blockflow.page', version: 1, name: 'chain',
  blocks: [
    {id: 'x', type: 'Const', attrs: {dtype: 'float32', shape: [1, 4, 4, 1], value: 2}},
    {id: 'a', type: 'Identity', inputs: {input: 'x'}},
    {id: 'b', type: 'Identity', inputs: {input: 'a'}},
    {id: 'c', type: 'Const', attrs: {dtype: 'float32', shape: [2], value: 1}},
  ],
  outputs: ['b', 'c'],
});
/* slow: 24 SAME 7x7x64x64 convolutions of a 256x256x64 image, each some 100s of ms on a CPU */
const N_SLOW = 24;
const slowBlocks = [
  {id: 'img', type: 'Const', attrs: {dtype: 'float32', shape: [1, 256, 256, 64], value: 1},
   ui: {x: 0, y: 0}},
  {id: 'w', type: 'Const', attrs: {dtype: 'float32', shape: [7, 7, 64, 64], value: 0.0003},
   ui: {x: 0, y: 160}},
];
for (let i = 1; i <= N_SLOW; i++) { /* six to a row, so that the whole page fits the view */
  slowBlocks.push({id: `c${i}`, type: 'Conv2D',
                   inputs: {input: i === 1 ? 'img' : `c${i - 1}`, filter: 'w'},
                   attrs: {strides: [1, 1, 1, 1], padding: 'SAME'},
                   ui: {x: 300 + ((i - 1) % 6) * 300, y: Math.floor((i - 1) / 6) * 160}});
}
writePage('slow', {format: 'blockflow.page', version: 1, name: 'slow', blocks: slowBlocks,
                   outputs: [`c${N_SLOW}`]});

/* ---- the server ------------------------------------------------------------------------ */
const token = 'editor-actions-token-0123';
const {server, port, stderr: serverErr} = await startServer(pages, token);
const origin = `http://127.0.0.1:${port}`;
/** The API as a program calls it (Bearer token), for checks behind the editor's back. */
async function api(method, path, body) {
  const r = await fetch(origin + path, {
    method, headers: {Authorization: `Bearer ${token}`,
                      ...(body ? {'Content-Type': 'application/json'} : {})},
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(data)}`);
  return data;
}
const sessionPage = async (name) => (await api('GET', `/api/pages/${name}?view=session`))
  .session_page;
const blockOf = (p, id) => p.blocks.find((b) => b.id === id);

/* ---- the browser ----------------------------------------------------------------------- */
const browser = await launchChromium();
const page = await browser.newPage({viewport: {width: 1440, height: 900}});
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));
const badResponses = [];
page.on('response', (r) => {
  if (r.status() >= 400) badResponses.push(`${r.status()} ${r.request().method()} ${r.url()}`);
});
/* the server's run events, as the editor's WebSocket receives them (in arrays: /ws?batch=1) */
const events = [];
page.on('websocket', (ws) => ws.on('framereceived', (f) => {
  try { events.push(...[].concat(JSON.parse(f.payload))); } catch (e) { /* not JSON: not an event */ }
}));
const shot = makeShot(page, SHOTS);
const mod = process.platform === 'darwin' ? 'Meta' : 'Control';
const label = (id) => page.getByTestId(`wire-${id}`);
const block = (id) => page.getByTestId(`block-${id}`);
const topButton = (name) => page.locator('header.topbar').getByRole('button', {name, exact: true});
const docname = page.getByTestId('docname');
const dirtyMark = page.locator('.topbar .dirty');
const message = (re) => page.getByTestId('message').filter({hasText: re}).waitFor();
const dialog = page.getByRole('dialog');
/** Click the empty canvas: nothing selected, the keyboard goes to the page, not a field. */
const clickPane = () => page.locator('.react-flow__pane').click({position: {x: 5, y: 5}});
/** Open a page from the top bar's page picker, as a person picks it. */
async function openFromPicker(name) {
  await page.getByLabel('Open a page').selectOption(name);
  await docname.filter({hasText: `${name}.json`}).waitFor();
  await page.getByTestId('message').filter({hasText: `Opened ${name}.`}).waitFor();
}
/** Wait until `fn` (sync or async) returns something truthy: for states outside the page. */
async function until(what, fn, timeoutMs = 20000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
const pageList = async () => (await api('GET', '/api/pages')).pages;
const pickerOptions = () => page.getByLabel('Open a page').locator('option')
  .evaluateAll((os) => os.map((o) => o.value).filter(Boolean));
/** Set a text attribute in the inspector (the block must be selected) and commit it. */
async function setAttr(blockId, attr, text) {
  const f = page.locator(`#attr-${blockId}-${attr}`);
  await f.fill(text);
  await f.press('Enter');
}

/** Ctrl+S, then wait until the file satisfies `ok` and the unsaved mark is gone (the toast
 * may still show an earlier save's identical text, so it is no sign of this one). */
async function saveAndWait(name, ok) {
  await page.keyboard.press(`${mod}+s`);
  await until(`${name}.json saved`, async () => {
    try {
      if (!ok(readPage(name))) return false;
    } catch (e) {
      return false; /* not there yet */
    }
    return (await dirtyMark.count()) === 0;
  });
  await message(new RegExp(`Saved ${name}\\.json`));
}

/** The value a tensor attribute's field shows, parsed. */
const attrJson = async (blockId, attr) =>
  JSON.parse(await page.locator(`#attr-${blockId}-${attr}`).inputValue());

let failed = false;
try {
  /* ---- 1. open the editor; open a page from the welcome list -------------------------- */
  await page.goto(`${origin}/?token=${token}`);
  await page.getByRole('button', {name: 'edits', exact: true}).waitFor();
  await shot('welcome');

  /* ---- 2. pages: new, rename, duplicate, delete --------------------------------------- */
  await page.getByRole('button', {name: '+ New page'}).click();
  await dialog.getByRole('heading', {name: 'New page'}).waitFor();
  await dialog.getByLabel('Page name').fill('scratch');
  await shot('new-page-dialog');
  await dialog.getByRole('button', {name: 'OK'}).click();
  await docname.filter({hasText: 'scratch.json'}).waitFor();
  assert.equal(readPage('scratch').format, 'blockflow.page', 'the new page is on disk');
  assert.deepEqual(readPage('scratch').blocks, []);
  assert.ok((await pageList()).includes('scratch'));
  await until('scratch in the picker', async () => (await pickerOptions()).includes('scratch'));
  /* a block from the palette (Enter on it), then Ctrl+S: the file holds it */
  await page.getByLabel('Search blocks').fill('RandomNormal');
  await page.locator('.palette-item[data-type="RandomNormal"]').press('Enter');
  await block('random_normal').waitFor();
  await dirtyMark.waitFor();
  await clickPane();
  await saveAndWait('scratch', (p) => p.blocks.length === 1);
  assert.deepEqual(readPage('scratch').blocks.map((b) => b.type), ['RandomNormal']);
  await shot('new-page-saved');

  await topButton('Rename').click();
  await dialog.getByRole('heading', {name: 'Rename page'}).waitFor();
  await dialog.getByLabel('Page name').fill('renamed');
  await dialog.getByLabel('Page name').press('Enter');
  await docname.filter({hasText: 'renamed.json'}).waitFor();
  await block('random_normal').waitFor();
  assert.ok(!existsSync(file('scratch')) && existsSync(file('renamed')), 'renamed on disk');
  assert.deepEqual(readPage('renamed').blocks.map((b) => b.type), ['RandomNormal']);
  await until('the picker after rename', async () => {
    const o = await pickerOptions();
    return o.includes('renamed') && !o.includes('scratch');
  });
  assert.deepEqual((await pageList()).filter((n) => /scratch|renamed/.test(n)), ['renamed']);
  await shot('page-renamed');

  await topButton('Duplicate').click();
  await dialog.getByRole('heading', {name: 'Duplicate page'}).waitFor();
  assert.equal(await dialog.getByLabel('Page name').inputValue(), 'renamed-copy');
  await dialog.getByRole('button', {name: 'OK'}).click();
  await docname.filter({hasText: 'renamed-copy.json'}).waitFor();
  await block('random_normal').waitFor();
  assert.ok(existsSync(file('renamed')), 'the original stays');
  assert.deepEqual(readPage('renamed-copy').blocks, readPage('renamed').blocks);
  await until('the copy in the picker', async () => (await pickerOptions()).includes('renamed-copy'));
  await shot('page-duplicated');

  await topButton('Delete').click();
  await dialog.getByText('renamed-copy.json').waitFor();
  await shot('delete-confirm');
  /* the harmless choice has the focus: a reflexive Enter must not delete */
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Cancel');
  await dialog.getByRole('button', {name: 'Delete'}).click();
  await message(/Deleted renamed-copy\.json/);
  await page.getByRole('heading', {name: 'Open a page'}).waitFor(); /* back to the welcome */
  assert.ok(!existsSync(file('renamed-copy')), 'deleted on disk');
  assert.ok(existsSync(file('renamed')));
  assert.ok(!(await pageList()).includes('renamed-copy'));
  assert.ok(!(await pickerOptions()).includes('renamed-copy'));
  assert.equal(await page.locator('.welcome [data-page="renamed-copy"]').count(), 0);
  await page.locator('.welcome [data-page="renamed"]').waitFor();
  await shot('page-deleted');

  /* ---- 3. unsaved mark, undo and redo ------------------------------------------------- */
  await openFromPicker('edits');
  await label('id1.input').filter({hasText: 'float32[3,3,1,1]'}).waitFor();
  assert.equal(await dirtyMark.count(), 0, 'no unsaved mark on a freshly opened page');
  await block('fs').click();
  await setAttr('fs', 'value', '2, 2, 1, 1');
  await label('id1.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await dirtyMark.waitFor();
  assert.match(await page.title(), /^● edits/);
  await topButton('Save ●').waitFor();
  await shot('edited-unsaved-mark');
  /* a second edit: cut id1's wire */
  await block('id1').click();
  await page.getByRole('button', {name: 'Disconnect input'}).click();
  await until('id1.input cut', async () => (await label('id1.input').count()) === 0);
  await until('the session without the wire', async () =>
    !blockOf(await sessionPage('edits'), 'id1').inputs);
  await clickPane();
  /* undo: the wire and its label come back; undo again: fs's value and the label */
  await page.keyboard.press(`${mod}+z`);
  await label('id1.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await page.keyboard.press(`${mod}+z`);
  await label('id1.input').filter({hasText: 'float32[3,3,1,1]'}).waitFor();
  await block('dw').getByText('float32[3,3,1,1]').waitFor();
  await block('fs').click();
  assert.deepEqual(await attrJson('fs', 'value'), [3, 3, 1, 1]);
  await until('the session undone', async () => {
    const s = await sessionPage('edits');
    return JSON.stringify(blockOf(s, 'fs').attrs.value) === '[3,3,1,1]' &&
      blockOf(s, 'id1').inputs && blockOf(s, 'id1').inputs.input === 'dw';
  });
  await shot('undone');
  /* redo (Ctrl+Shift+Z) twice: the value, then the cut */
  await clickPane();
  await page.keyboard.press(`${mod}+Shift+z`);
  await label('id1.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await block('fs').click();
  assert.deepEqual(await attrJson('fs', 'value'), [2, 2, 1, 1]);
  await clickPane();
  await page.keyboard.press(`${mod}+Shift+z`);
  await until('id1.input cut again', async () => (await label('id1.input').count()) === 0);
  await until('the session redone', async () => {
    const s = await sessionPage('edits');
    return JSON.stringify(blockOf(s, 'fs').attrs.value) === '[2,2,1,1]' && !blockOf(s, 'id1').inputs;
  });
  await shot('redone');
  /* one more undo puts the wire back; Ctrl+S clears the mark and writes it all */
  await page.keyboard.press(`${mod}+z`);
  await label('id1.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await saveAndWait('edits', (p) => blockOf(p, 'fs').attrs.value[0] === 2);
  assert.ok(!/●/.test(await page.title()), 'no mark in the title after saving');
  await topButton('Save').waitFor();
  let disk = readPage('edits');
  assert.deepEqual(blockOf(disk, 'fs').attrs.value, [2, 2, 1, 1]);
  assert.equal(blockOf(disk, 'id1').inputs.input, 'dw');
  await shot('saved-mark-gone');

  /* ---- 4. copy, paste and delete blocks ----------------------------------------------- */
  await block('dw').click();
  await page.keyboard.press(`${mod}+c`);
  await message(/Copied 1 block/);
  await page.keyboard.press(`${mod}+v`);
  await block('dw_copy').waitFor();
  await page.getByTestId('block-id').and(page.locator('[value="dw_copy"]')).waitFor();
  await shot('block-pasted');
  let sess = await until('dw_copy in the session', async () => {
    const s = await sessionPage('edits');
    return blockOf(s, 'dw_copy') ? s : null;
  });
  assert.equal(blockOf(sess, 'dw_copy').type, 'Conv2DBackpropFilter');
  assert.deepEqual(blockOf(sess, 'dw_copy').attrs, blockOf(sess, 'dw').attrs,
                   'the copy has the same attributes');
  assert.equal(blockOf(sess, 'dw_copy').inputs, undefined, 'wires from outside stay behind');
  /* the copy's attributes in the inspector are the original's */
  assert.equal(await page.locator('#attr-dw_copy-padding').inputValue(), 'SAME');

  /* delete the original with the Delete key: it goes, with its wires in and out (a person
   * sees it selected first: on a loaded machine the key could otherwise reach the copy) */
  await block('dw').click();
  await page.getByTestId('block-id').and(page.locator('[value="dw"]')).waitFor();
  await page.keyboard.press('Delete');
  await until('dw gone', async () => (await block('dw').count()) === 0);
  for (const w of ['dw.input', 'dw.filter_sizes', 'dw.out_backprop', 'id1.input']) {
    assert.equal(await label(w).count(), 0, `wire ${w} is gone`);
  }
  await block('dw_copy').waitFor();
  sess = await until('dw gone from the session', async () => {
    const s = await sessionPage('edits');
    return blockOf(s, 'dw') ? null : s;
  });
  assert.equal(blockOf(sess, 'id1').inputs, undefined, 'the wire out of dw is gone');
  await page.getByTestId('problems').filter({hasText: 'id1.input'}).waitFor();
  await shot('block-deleted');
  /* one Ctrl+Z brings the block and all its wires back */
  await page.keyboard.press(`${mod}+z`);
  await block('dw').waitFor();
  await label('id1.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await label('dw.out_backprop').filter({hasText: 'float32[1,5,5,1]'}).waitFor();
  await block('dw_copy').waitFor();
  await shot('delete-undone');
  await page.keyboard.press(`${mod}+z`); /* and the paste */
  await until('dw_copy gone', async () => (await block('dw_copy').count()) === 0);
  await page.getByTestId('no-problems').waitFor();
  await saveAndWait('edits', (p) => !blockOf(p, 'dw_copy') && blockOf(p, 'dw'));
  disk = readPage('edits');
  assert.deepEqual(disk.blocks.map((b) => b.id).sort(), ['dw', 'dy', 'fs', 'id1', 'x']);

  /* ---- 5. a save conflict asks instead of overwriting --------------------------------- */
  await openFromPicker('conflict');
  await block('fs').click();
  await setAttr('fs', 'value', '2, 2, 1, 1');
  await label('id1.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  await clickPane();
  /* someone else writes the file: a new block and a new description */
  const theirs = readPage('conflict');
  theirs.description = 'changed on disk by someone else';
  theirs.blocks.push({id: 'disk_only', type: 'Identity', inputs: {input: 'x'}});
  writePage('conflict', theirs);
  const theirsText = readFileSync(file('conflict'), 'utf8');
  await page.keyboard.press(`${mod}+s`);
  await dialog.getByRole('heading', {name: 'The file changed on disk'}).waitFor();
  await shot('conflict-dialog');
  /* a reflexive Enter must not overwrite someone else's file */
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Cancel');
  await dialog.getByRole('button', {name: 'Cancel'}).click();
  await dialog.waitFor({state: 'detached'});
  assert.equal(readFileSync(file('conflict'), 'utf8'), theirsText, 'Cancel wrote nothing');
  await dirtyMark.waitFor(); /* still unsaved */
  assert.equal(await block('disk_only').count(), 0);
  /* again, and load the disk version: their block and description, our edit gone */
  await page.keyboard.press(`${mod}+s`);
  await dialog.getByRole('button', {name: 'Load the disk version'}).click();
  await block('disk_only').waitFor();
  await label('id1.input').filter({hasText: 'float32[3,3,1,1]'}).waitFor();
  await until('no unsaved mark', async () => (await dirtyMark.count()) === 0);
  assert.equal(await page.getByLabel('Page description').inputValue(),
               'changed on disk by someone else');
  assert.equal(readFileSync(file('conflict'), 'utf8'), theirsText);
  await block('fs').click();
  assert.deepEqual(await attrJson('fs', 'value'), [3, 3, 1, 1]);
  sess = await sessionPage('conflict');
  assert.ok(blockOf(sess, 'disk_only'), 'the session holds the disk version');
  assert.deepEqual(blockOf(sess, 'fs').attrs.value, [3, 3, 1, 1]);
  await shot('conflict-loaded-disk-version');
  /* edit again, they write again, and this time overwrite: the file is ours */
  await setAttr('fs', 'value', '1, 1, 1, 1');
  await label('id1.input').filter({hasText: 'float32[1,1,1,1]'}).waitFor();
  await clickPane();
  const theirs2 = readPage('conflict');
  theirs2.description = 'changed on disk again';
  writePage('conflict', theirs2);
  await page.keyboard.press(`${mod}+s`);
  await dialog.getByRole('heading', {name: 'The file changed on disk'}).waitFor();
  await dialog.getByRole('button', {name: 'Overwrite the file'}).click();
  await dialog.waitFor({state: 'detached'});
  await until('the overwrite', async () => (await dirtyMark.count()) === 0 &&
    blockOf(readPage('conflict'), 'fs').attrs.value[0] === 1);
  await message(/Saved conflict\.json/);
  disk = readPage('conflict');
  assert.deepEqual(blockOf(disk, 'fs').attrs.value, [1, 1, 1, 1], 'our edit is on disk');
  assert.equal(disk.description, 'changed on disk by someone else', 'theirs2 is overwritten');
  assert.ok(blockOf(disk, 'disk_only'), 'the loaded disk version is what we edited');
  /* and a later save needs no overwrite: the editor holds the new revision */
  await block('fs').click();
  await setAttr('fs', 'value', '2, 2, 1, 1');
  await clickPane();
  await saveAndWait('conflict', (p) => blockOf(p, 'fs').attrs.value[0] === 2);
  assert.equal(await dialog.count(), 0);
  assert.deepEqual(blockOf(readPage('conflict'), 'fs').attrs.value, [2, 2, 1, 1]);
  await shot('conflict-overwritten');

  /* ---- 6. run only up to the selected block ------------------------------------------- */
  await openFromPicker('chain');
  await block('a').click();
  const nBefore = events.length;
  await topButton('▶ Run to “a”').click();
  await page.getByTestId('run-state').filter({hasText: 'finished'}).waitFor();
  assert.equal(await block('x').getAttribute('data-state'), 'finished');
  assert.equal(await block('a').getAttribute('data-state'), 'finished');
  assert.equal(await block('b').getAttribute('data-state'), '', 'b is downstream: not run');
  assert.equal(await block('c').getAttribute('data-state'), '', 'c is elsewhere: not run');
  let runEvents = events.slice(nBefore).filter((e) => e.page === 'chain');
  const ran = (evs, type) => evs.filter((e) => e.type === type).map((e) => e.block).sort();
  assert.deepEqual(ran(runEvents, 'block_finished'), ['a', 'x'], 'the server ran x and a only');
  assert.deepEqual(ran(runEvents, 'block_started'), ['a', 'x']);
  assert.equal(runEvents.filter((e) => e.type === 'run_finished').length, 1);
  await shot('run-to-selected');
  /* the whole page now: x and a are reused, b and c run */
  const nBefore2 = events.length;
  await clickPane();
  await topButton('▶ Run').click();
  await until('the full run', () => events.slice(nBefore2).some((e) => e.type === 'run_finished'));
  await page.getByTestId('run-state').filter({hasText: 'finished'}).waitFor();
  await until('b finished', async () => (await block('b').getAttribute('data-state')) === 'finished');
  runEvents = events.slice(nBefore2);
  assert.deepEqual(ran(runEvents, 'block_finished'), ['b', 'c']);
  assert.deepEqual(ran(runEvents, 'block_cached'), ['a', 'x'].filter((id) =>
    runEvents.some((e) => e.type === 'block_cached' && e.block === id)));
  assert.ok(!ran(runEvents, 'block_started').includes('x'), 'x is not run again');
  await shot('run-all-after-run-to');

  /* ---- 7. cancel a long run ----------------------------------------------------------- */
  await openFromPicker('slow');
  const nSlow = events.length;
  await topButton('▶ Run').click();
  await page.getByTestId('run-state').filter({hasText: 'running'}).waitFor();
  await until('the first convolution to start', () =>
    events.slice(nSlow).some((e) => e.type === 'block_started' && e.block === 'c1'));
  await block('c1').locator('[data-testid="run-c1"]').waitFor();
  await shot('long-run-running');
  const cancelAt = Date.now();
  await topButton('■ Cancel').click();
  await page.getByTestId('run-state').filter({hasText: 'cancelled'}).waitFor();
  const cancelMs = Date.now() - cancelAt;
  await message(/Run cancelled/);
  runEvents = events.slice(nSlow);
  assert.equal(runEvents.filter((e) => e.type === 'run_cancelled').length, 1);
  assert.ok(!runEvents.some((e) => e.type === 'run_finished'), 'the run did not finish');
  const done = ran(runEvents, 'block_finished').filter((id) => /^c\d+$/.test(id));
  assert.ok(done.length < N_SLOW, `cancelled before the end (${done.length} convolutions ran)`);
  assert.notEqual(await block(`c${N_SLOW}`).getAttribute('data-state'), 'finished');
  /* the convolution the Cancel stopped shows as cancelled, not failed, and nothing runs on */
  const stopped = runEvents.filter((e) => e.type === 'block_failed').map((e) => e.block);
  for (const id of stopped) {
    assert.equal(await block(id).getAttribute('data-state'), 'cancelled', `${id} cancelled`);
    await page.getByTestId(`run-${id}`).filter({hasText: 'cancelled'}).waitFor();
  }
  assert.equal(await page.locator('[data-state="running"], [data-state="failed"]').count(), 0,
               'no block left running or marked failed');
  assert.ok(cancelMs < 10000, `cancelled within 10 s (${cancelMs} ms)`);
  console.log(`ok - cancelled ${cancelMs} ms after the click, ${done.length}/${N_SLOW} ran`);
  assert.ok(await topButton('■ Cancel').isDisabled(), 'Cancel is off once the run ended');
  assert.ok(await topButton('▶ Run').isEnabled(), 'Run is on again');
  await shot('long-run-cancelled');
  /* the page stays usable: an edit goes through (no "busy"), and a run to c1 finishes. The
   * whole page in view first, as a person would do (the fit-view control) */
  await page.locator('.react-flow__controls-fitview').click();
  await block(`c${N_SLOW}`).waitFor({state: 'visible'});
  await block(`c${N_SLOW}`).click();
  await page.getByRole('button', {name: 'Disconnect input'}).click();
  await until('the cut in the session', async () =>
    !blockOf(await sessionPage('slow'), `c${N_SLOW}`).inputs.input);
  await page.getByRole('tab', {name: /Problems/}).click();
  await page.getByTestId('problems').filter({hasText: `c${N_SLOW}.input`}).waitFor();
  await clickPane();
  await page.keyboard.press(`${mod}+z`);
  await until('the wire back in the session', async () =>
    blockOf(await sessionPage('slow'), `c${N_SLOW}`).inputs.input === `c${N_SLOW - 1}`);
  await block('c1').click();
  const nAfter = events.length;
  await topButton('▶ Run to “c1”').click();
  /* one of these convolutions takes ~20 s in the sanitizer build (Debug, ASan): the wait is
   * about usability after a cancel, not speed */
  await until('run to c1', () => events.slice(nAfter).some((e) => e.type === 'run_finished'),
              180000);
  await page.getByTestId('run-state').filter({hasText: 'finished'}).waitFor();
  assert.ok(['finished', 'cached'].includes(await block('c1').getAttribute('data-state')));
  assert.equal(await block('c2').getAttribute('data-state'), '');
  assert.ok(!/busy/.test(await page.getByTestId('message').textContent()));
  await shot('usable-after-cancel');

  /* ---- 8. the keyboard: Tab reaches every control, with a visible focus ---------------- */
  /* the welcome screen: the editor's folder without ?page= (a reload reopens the page) */
  await page.goto(new URL('./', page.url()).href);
  await page.getByRole('button', {name: 'edits', exact: true}).waitFor();
  const focused = () => page.evaluate(() => {
    const e = document.activeElement;
    const cs = getComputedStyle(e);
    const cls = e.getAttribute('class') || '';
    /* a ring (outline or box-shadow); a wire (SVG) shows its focus in its stroke instead */
    let visible = (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0) ||
                  (cs.boxShadow && cs.boxShadow !== 'none');
    const path = cls.includes('react-flow__edge') && e.querySelector('.react-flow__edge-path');
    const stroke = path ? getComputedStyle(path).stroke : '';
    if (path && stroke === 'rgb(255, 152, 0)') visible = true;
    return {
      tag: e.tagName, text: (e.textContent || '').trim().slice(0, 40),
      label: e.getAttribute('aria-label') || '', cls,
      type: e.getAttribute('data-type') || '', id: e.getAttribute('data-id') || '',
      inTopbar: !!e.closest('header.topbar'), visible,
      outline: `${cs.outlineStyle} ${cs.outlineWidth} ${cs.outlineColor}`, shadow: cs.boxShadow,
      stroke,
    };
  });
  /** Press Tab until `want(focused)` holds; every stop on the way must show its focus. */
  async function tabTo(what, want, max = 200) {
    for (let i = 0; i < max; i++) {
      await page.keyboard.press('Tab');
      const f = await focused();
      if (f.tag !== 'BODY') {
        assert.ok(f.visible, `focus is visible on ${JSON.stringify(f)}`);
      }
      if (want(f)) return f;
    }
    throw new Error(`Tab never reached ${what}`);
  }
  /* open a page with the keyboard alone: Tab to its button on the welcome, Enter */
  await tabTo('the welcome list', (f) => f.tag === 'BUTTON' && f.text === 'edits');
  await page.keyboard.press('Enter');
  await docname.filter({hasText: 'edits.json'}).waitFor();
  await block('dw').waitFor();
  await page.locator('body').focus();
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await tabTo('the New button', (f) => f.inTopbar && f.text === 'New');
  await tabTo('the Save button', (f) => f.inTopbar && /^Save/.test(f.text));
  await tabTo('the Run button', (f) => f.inTopbar && f.text === '▶ Run');
  await shot('focus-run-button');
  await tabTo('the palette search', (f) => f.label === 'Search blocks');
  await shot('focus-palette-search');
  await page.keyboard.type('identity');
  const item = await tabTo('a palette item', (f) => f.type === 'Identity');
  assert.ok(item.cls.includes('palette-item'));
  await page.keyboard.press('Enter'); /* adds it */
  await block('identity').waitFor();
  await dirtyMark.waitFor();
  /* wire it without a mouse: the Inspector offers, for each input of the selected block, the
   * outputs that may feed it, labelled with what they carry (Identity takes any dtype, so
   * every other block; the dtype filter has its unit test) */
  await until('the inspector showing identity', async () =>
    (await page.getByTestId('block-id').inputValue().catch(() => '')) === 'identity');
  const wireInput = page.getByLabel('Wire input from');
  const offered = await wireInput.locator('option').allTextContents();
  assert.deepEqual(offered.map((t) => t.split(/\s+/)[0]),
                   ['—', 'x', 'fs', 'dy', 'dw', 'id1'], `offered: ${offered}`);
  assert.ok(offered.includes('dw  float32[2,2,1,1]'), `dw's label: ${offered}`);
  await tabTo("identity's input wiring", (f) => f.label === 'Wire input from');
  await page.keyboard.type('dw'); /* the list's type-ahead picks dw */
  await label('identity.input').filter({hasText: 'float32[2,2,1,1]'}).waitFor();
  assert.equal(await wireInput.inputValue(), 'dw');
  await shot('wired-by-keyboard');
  await page.keyboard.press(`${mod}+z`); /* one undo takes the wire away again */
  await until('the wire undone', async () => (await label('identity.input').count()) === 0);
  /* Tab to a block and press Enter to select it. A check result that lands meanwhile can
   * re-render the canvas and drop the focus (seen about once in ten runs; a person sees the
   * focus ring vanish and tabs again): the test does the same, at most three times. */
  let node = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    node = await tabTo('a block on the canvas', (f) => f.cls.includes('react-flow__node'));
    if (attempt === 0) await shot('focus-block');
    await page.keyboard.press('Enter'); /* selects it */
    const shown = await until(`the inspector showing ${node.id}`, async () =>
      (await page.getByTestId('block-id').inputValue().catch(() => '')) === node.id, 3000)
      .then(() => true, () => false);
    if (shown) break;
    if (attempt === 2) throw new Error(`Enter on the focused block ${node.id} did not select it`);
    console.log(`note - the focus left block ${node.id} before Enter; tabbing again`);
  }
  await block(node.id).and(page.locator('.selected')).waitFor();
  await shot('block-selected-by-keyboard');
  /* Escape closes a dialog, and the focus goes into it first */
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await tabTo('the Rename button', (f) => f.inTopbar && f.text === 'Rename');
  await page.keyboard.press('Enter');
  await dialog.getByRole('heading', {name: 'Rename page'}).waitFor();
  assert.equal((await focused()).label, 'Page name', 'the name field takes the focus');
  await page.keyboard.press('Escape');
  await dialog.waitFor({state: 'detached'});
  assert.ok(existsSync(file('edits')));

  /* the only failed requests are the three conflicting saves, which the browser logs */
  /* (the editor is served under the server's random path /s/RANDOM/: left out here) */
  assert.deepEqual(badResponses.map((r) => r.replace(/http:\/\/[^/]+(\/s\/[0-9a-f]+)?/, '')),
                   Array(3).fill('409 PUT /api/pages/conflict'));
  const expected409 = /Failed to load resource: .* status of 409 \(Conflict\)/;
  assert.equal(consoleErrors.filter((m) => expected409.test(m)).length, 3);
  assert.deepEqual(consoleErrors.filter((m) => !expected409.test(m)), [],
                   'no other errors in the browser console');
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  await page.screenshot({path: join(SHOTS, 'failure.png')}).catch(() => {});
  if (consoleErrors.length) console.error('browser console:', consoleErrors.join('\n'));
  if (badResponses.length) console.error('HTTP errors:', badResponses.join('\n'));
  if (serverErr()) console.error('server stderr:', serverErr().slice(-20000));
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
