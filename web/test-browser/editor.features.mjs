// editor.features.mjs - what node-editor users expect (issue 24), done as a person does it in
// Debian's Chromium against a real `blockflow serve`, checked on the page and through the
// server's session or the file on disk:
//   1  the minimap shows a page of more than 20 blocks (none over a small page)
//   2  right-click the canvas > Tidy up: no block on another; one Ctrl+Z puts them back
//   3  right-click a block > Duplicate (lands clear of the others); a wire > Delete the wire;
//      the canvas > Paste here
//   4  double-click a block, type its new id, Enter: renamed
//   5  Ctrl+A selects every block; the right panel sums the selection up
//   6  arrow keys nudge the selection; one Ctrl+Z undoes the presses
//   7  a block dropped on another and a paste land in free space
//   8  a Placeholder fed from an uploaded .npy; Run
//   9  the palette shows whole names (two long ones read differently), the formula on hover
//  10  a Placeholder fed from a .npy of the pages folder (one in a subfolder) picked from a
//      list; one of the wrong shape refused with the reason; Run
// Screenshots in BF_SCREENSHOTS (default build/editor-features-screenshots). ITEMS=1,2 runs some.
import assert from 'node:assert/strict';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {mod, npyBytes, runItems, startWorld, until} from './person.mjs';

const P = (name, blocks, outputs) => ({format: 'blockflow.page', version: 1, name, blocks, outputs});
const c2 = (id, value, x, y) => ({id, type: 'Const', ui: {x, y},
                                  attrs: {dtype: 'float32', shape: [2, 2], value}});

const w = await startWorld('editor-features-screenshots', (w) => {
  /* a messy page: blocks piled up */
  w.writePage('messy', P('messy', [
    c2('a', 1, 0, 0), c2('b', 2, 30, 20),
    {id: 's', type: 'Add', inputs: {x: 'a', y: 'b'}, ui: {x: 60, y: 40}},
    {id: 'n', type: 'Neg', inputs: {x: 's'}, ui: {x: 90, y: 10}},
    {id: 'o', type: 'Identity', inputs: {input: 'n'}, ui: {x: 20, y: 60}},
  ], ['o']));
  w.writePage('tidy', P('tidy', [
    c2('a', 1, 0, 0), c2('b', 2, 0, 200),
    {id: 's', type: 'Add', inputs: {x: 'a', y: 'b'}, ui: {x: 380, y: 100}},
    {id: 'o', type: 'Identity', inputs: {input: 's'}, ui: {x: 740, y: 100}},
  ], ['o']));
  w.writePage('many', P('many', Array.from({length: 30}, (_, i) => c2(`k${i}`, i, (i % 6) * 300, Math.floor(i / 6) * 160)), []));
  w.writePage('fed', P('fed', [
    {id: 'ph', type: 'Placeholder', ui: {x: 0, y: 0}, attrs: {dtype: 'float32', shape: [2, 3]}},
    {id: 'neg', type: 'Neg', inputs: {x: 'ph'}, ui: {x: 380, y: 0}},
  ], ['neg']));
  writeFileSync(join(w.tmp, 'six.npy'), npyBytes([2, 3], [1, 2, 3, 4, 5, 6]));
  mkdirSync(join(w.pages, 'data'));
  writeFileSync(join(w.pages, 'data', 'tens.npy'), npyBytes([2, 3], [10, 20, 30, 40, 50, 60]));
  writeFileSync(join(w.pages, 'nine.npy'), npyBytes([3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]));
});
const {page} = w;
const ui = (p, id) => p.blocks.find((b) => b.id === id).ui;
/** Screen boxes of every block that meet another: ["a/b", ...]. */
const overlaps = () => page.evaluate(() => {
  const r = [...document.querySelectorAll('.react-flow__node')]
    .map((n) => ({id: n.getAttribute('data-id'), b: n.getBoundingClientRect()}));
  const out = [];
  for (let i = 0; i < r.length; i++) {
    for (let j = i + 1; j < r.length; j++) {
      const a = r[i].b, b = r[j].b;
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) out.push(`${r[i].id}/${r[j].id}`);
    }
  }
  return out;
});
const pane = () => page.locator('.react-flow__pane');
/** Right-click at a free spot of the canvas (its top-left corner area). */
const paneMenu = async () => {
  const b = await pane().boundingBox();
  await page.mouse.click(b.x + 12, b.y + 12, {button: 'right'});
  await page.getByTestId('context-menu').waitFor();
};
const menuItem = (name) => page.getByTestId('context-menu').locator(`button[data-action="${name}"]`);

await runItems(w, {
  1: async () => {
    await w.open('tidy');
    assert.equal(await page.locator('.react-flow__minimap').count(), 0, 'no minimap over a small page');
    await w.open('many');
    const mini = page.locator('.react-flow__minimap');
    await mini.waitFor();
    assert.equal(await mini.locator('.react-flow__minimap-node').count(), 30);
    await w.shot('1-minimap');
  },

  2: async () => {
    await w.open('messy');
    assert.ok((await overlaps()).length > 0, 'the page starts piled up');
    await paneMenu();
    await w.shot('2-canvas-menu');
    await menuItem('tidy').click();
    await until('no overlaps after tidying', async () => (await overlaps()).length === 0);
    await w.settle();
    /* left to right along the wires */
    const x = async (id) => (await w.box(id)).x;
    assert.ok(await x('a') < await x('s') && await x('s') < await x('n') && await x('n') < await x('o'));
    await w.shot('2-tidied');
    await w.save('messy', (p) => ui(p, 'o').x > 200);
    await w.clickPane();
    await page.keyboard.press(`${mod}+z`);
    await until('one undo puts them back', async () => {
      const s = await w.sessionPage('messy');
      return ui(s, 'o').x === 20 && ui(s, 'n').x === 90;
    });
  },

  3: async () => {
    await w.open('tidy');
    await w.block('s').click({button: 'right'});
    await page.getByTestId('context-menu').waitFor();
    await w.shot('3-block-menu');
    assert.ok(await menuItem('runTo').isEnabled());
    await menuItem('duplicate').click();
    await w.block('s_copy').waitFor();
    await w.settle();
    assert.deepEqual(await overlaps(), [], 'the copy is clear of the others');
    const copy = (await w.sessionPage('tidy')).blocks.find((b) => b.id === 's_copy');
    assert.deepEqual(copy.inputs, {x: 'a', y: 'b'}, 'the copy reads the same inputs');
    /* a wire's menu (right-click its label): cut it */
    await page.getByTestId('wire-o.input').click({button: 'right'});
    await page.getByTestId('context-menu').waitFor();
    await w.shot('3-wire-menu');
    await menuItem('deleteWire').click();
    await until('the wire cut', async () =>
      !((await w.sessionPage('tidy')).blocks.find((b) => b.id === 'o').inputs || {}).input);
    /* copy a, then Paste here on the canvas */
    await w.block('a').click();
    await page.keyboard.press(`${mod}+c`);
    await paneMenu();
    await menuItem('paste').click();
    await w.block('a_copy').waitFor();
    await w.settle();
    assert.deepEqual(await overlaps(), []);
    await w.shot('3-pasted-here');
    await w.save('tidy', (p) => p.blocks.some((b) => b.id === 'a_copy') && p.blocks.some((b) => b.id === 's_copy'));
  },

  4: async () => {
    await w.open('tidy');
    await w.block('b').dblclick();
    await until('the id field focused', async () => page.evaluate(() =>
      document.activeElement && document.activeElement.getAttribute('data-testid') === 'block-id'));
    await page.keyboard.type('bee');
    await page.keyboard.press('Enter');
    await w.block('bee').waitFor();
    await w.save('tidy', (p) => p.blocks.some((b) => b.id === 'bee') && p.blocks.find((b) => b.id === 's').inputs.y === 'bee');
  },

  5: async () => {
    await w.open('tidy');
    await w.clickPane();
    await page.keyboard.press(`${mod}+a`);
    const n = w.readPage('tidy').blocks.length;
    await until('all selected', async () => (await page.locator('.block.selected').count()) === n);
    const sum = page.getByTestId('selection-summary');
    await sum.getByRole('heading', {name: `${n} blocks selected`}).waitFor();
    assert.match(await sum.textContent(), /Const/);
    await w.shot('5-select-all-summary');
    await w.clickPane();
  },

  6: async () => {
    await w.open('tidy');
    const x0 = ui(await w.sessionPage('tidy'), 'o').x;
    await w.block('o').click();
    await w.clickPane();
    await page.keyboard.press(`${mod}+a`);
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
    await until('moved right', async () => ui(await w.sessionPage('tidy'), 'o').x === x0 + 30);
    await page.keyboard.press(`${mod}+z`);
    await until('one undo', async () => ui(await w.sessionPage('tidy'), 'o').x === x0);
    await w.clickPane();
  },

  7: async () => {
    await w.open('tidy');
    /* drop a Const from the palette right on top of block s */
    await page.getByLabel('Search blocks').fill('Identity');
    const target = await w.box('s');
    await page.locator('.palette-item[data-type="Identity"]').dragTo(page.locator('.react-flow__pane'), {
      targetPosition: {x: target.x + 20 - (await pane().boundingBox()).x, y: target.y + 10 - (await pane().boundingBox()).y}});
    await w.message(/Added Identity/).waitFor();
    await w.settle();
    assert.deepEqual(await overlaps(), [], 'the dropped block is beside s, not on it');
    /* paste twice: neither copy on another block */
    await w.block('a').click();
    await page.keyboard.press(`${mod}+c`);
    await page.keyboard.press(`${mod}+v`);
    await page.keyboard.press(`${mod}+v`);
    await until('two pastes', async () => (await page.locator('.react-flow__node').count()) >= 7);
    await w.settle();
    assert.deepEqual(await overlaps(), [], 'pasted copies land in free space');
    await w.shot('7-free-space');
    await w.save('tidy');
  },

  8: async () => {
    await w.open('fed');
    await w.block('ph').click();
    await page.getByTestId('feed-state').filter({hasText: 'Not fed'}).waitFor();
    await page.getByLabel('Upload a .npy for ph').setInputFiles(join(w.tmp, 'six.npy'));
    await page.getByTestId('feed-state').filter({hasText: 'Fed float32[2,3] from six.npy'}).waitFor();
    await w.shot('8-fed-from-upload');
    await page.locator('button[data-action="run"]').click();
    await page.getByTestId('run-state').filter({hasText: 'finished'}).waitFor();
    await w.block('neg').click();
    await page.getByRole('tab', {name: /Output/}).click();
    await page.locator('.summary').filter({hasText: '-6'}).waitFor();
  },

  9: async () => {
    await page.getByLabel('Search blocks').fill('DepthwiseConv2dNativeBackprop');
    const items = page.locator('.palette-item');
    await until('two long names', async () => (await items.count()) === 2);
    const seen = await items.evaluateAll((els) => els.map((e) => ({text: e.textContent,
      full: e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1, title: e.title})));
    assert.deepEqual(seen.map((s) => s.text), ['DepthwiseConv2dNativeBackpropFilter', 'DepthwiseConv2dNativeBackpropInput']);
    assert.ok(seen.every((s) => s.full), 'the whole names are shown');
    assert.ok(seen.every((s) => /=/.test(s.title)), 'the formula on hover');
    await w.shot('9-palette-full-names');
    await page.getByLabel('Search blocks').fill('');
  },

  10: async () => {
    await w.open('fed');
    await w.block('ph').click();
    const list = page.getByLabel('A .npy file for ph');
    await until('the files listed', async () => (await list.locator('option').allTextContents())
      .includes('data/tens.npy'));
    /* a file of the wrong shape is refused, saying why; the block stays as it was fed */
    const before = await page.getByTestId('feed-state').textContent();
    await list.selectOption('nine.npy');
    await page.getByTestId('feed-panel').getByRole('alert')
      .filter({hasText: 'nine.npy has shape [3,3]; ph takes [2,3]'}).waitFor();
    assert.equal(await page.getByTestId('feed-state').textContent(), before);
    await w.shot('10-wrong-file-refused');
    await list.selectOption('data/tens.npy');
    await page.getByTestId('feed-state').filter({hasText: 'Fed float32[2,3] from data/tens.npy'}).waitFor();
    assert.equal(await page.getByTestId('feed-panel').getByRole('alert').count(), 0);
    await w.shot('10-fed-from-folder');
    await page.locator('button[data-action="run"]').click();
    await page.getByTestId('run-state').filter({hasText: 'finished'}).waitFor();
    await w.block('neg').click();
    await page.getByRole('tab', {name: /Output/}).click();
    const sum = page.getByTestId('summary');
    await sum.filter({hasText: '-60'}).waitFor();
    /* -(10..60): min -60, max -10, mean -35 (the upload of item 8 held 1..6) */
    const cell = (k) => sum.locator('tr').filter({hasText: k}).locator('td').textContent();
    assert.deepEqual([await cell('min'), await cell('max'), await cell('mean')].map(Number), [-60, -10, -35]);
    await w.shot('10-run-output');
  },
});
