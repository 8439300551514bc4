// editor.bigpage.mjs - a page of 300 blocks (web/bench/gen_page.mjs), as a person uses it, in
// Debian's Chromium against a real `blockflow serve`, at 1280x720:
//   1  opened, it is framed whole and drawn far: every block on the far canvas, none as an
//      element; the minimap shows the page
//   2  a click on a far block selects it (the Inspector shows it) and React Flow draws it where
//      the canvas drew it; a click on the empty canvas clears the selection
//   3  a far block dragged by the mouse moves (an edit: ●, saved by Ctrl+S, undone by Ctrl+Z);
//      redone, saved and the tab reloaded, a click where it was dropped finds it
//   4  zoomed in with the wheel, the blocks are elements again and every wire in view ends on
//      its ports' dots; zoomed out, the far canvas again
//   5  right-click on a far block opens its menu; a double-click asks for its new id
//   6  a Shift-drawn box over far blocks selects them
//   7  the minimap draws every block; a press in it brings that part of the page to the
//      middle of the canvas, zoomed in too
//   8  Delete on a far block selected removes it and cuts the wires it fed (React Flow holds
//      no wire of the far blocks), as one edit; Ctrl+Z brings both back
// Screenshots in BF_SCREENSHOTS (default build/editor-bigpage-screenshots). ITEMS=1,2 runs some.
import assert from 'node:assert/strict';
import {bigPage} from '../bench/gen_page.mjs';
import {mod, runItems, startWorld, until} from './person.mjs';

const big = bigPage(30, 'big');
const w = await startWorld('editor-bigpage-screenshots', (w) => w.writePage('big', big),
                           {width: 1280, height: 720});
const {page} = w;
const ui = (id) => big.blocks.find((b) => b.id === id).ui;
const FAR_W = 240;

/** The view: React Flow's transform and the pane's screen corner. */
async function view() {
  return page.evaluate(() => {
    const v = document.querySelector('.react-flow__viewport');
    const m = /translate\(([-\d.e]+)px, ([-\d.e]+)px\) scale\(([-\d.e]+)\)/.exec(v.style.transform);
    const r = document.querySelector('.react-flow__pane').getBoundingClientRect();
    return {tx: Number(m[1]), ty: Number(m[2]), k: Number(m[3]), left: r.left, top: r.top};
  });
}
/** The screen point of page point (x, y). */
const screen = (v, x, y) => ({x: v.left + v.tx + x * v.k, y: v.top + v.ty + y * v.k});
/** The screen point at the middle of far block `id` (its saved position, or `at`): at the
 * zoom that frames 300 blocks, a block is 17 x 3 pixels. */
async function onBlock(id, at = ui(id)) {
  return screen(await view(), at.x + FAR_W / 2, at.y + 24);
}
const far = () => page.getByTestId('far-layer');
const drawnElements = () => page.locator('.react-flow__node').count();
const dirty = () => page.locator('.topbar .dirty').count();

async function openBig() {
  await page.getByLabel('Open a page').selectOption('big');
  await page.getByTestId('docname').filter({hasText: 'big.json'}).waitFor();
  await page.locator('.canvas[data-fitted]').waitFor();
  await until('the far canvas drawn', async () => Number(await far().getAttribute('data-shown')) > 0);
  await page.waitForTimeout(200);
}

await runItems(w, {
  1: async () => {
    await openBig();
    const v = await view();
    assert.ok(v.k < 0.4, `the whole page is framed far out (zoom ${v.k})`);
    assert.equal(Number(await far().getAttribute('data-shown')), big.blocks.length,
                 'every block is on the far canvas');
    assert.equal(await drawnElements(), 0, 'no block is an element');
    /* the canvas really holds the drawing: the pixel under a block's title is not blank */
    const p = await onBlock('conv7');
    const px = await far().evaluate((c, [x, y]) => {
      const r = c.getBoundingClientRect(), d = window.devicePixelRatio || 1;
      return [...c.getContext('2d').getImageData((x - r.left) * d, (y - r.top) * d, 1, 1).data];
    }, [p.x, p.y]);
    assert.ok(px[3] > 0, `the far canvas is drawn under conv7 (pixel ${px})`);
    assert.equal(await page.getByLabel('Minimap of the page').count(), 1, 'the minimap is there');
    await w.shot('1-big-page-far');
  },
  2: async () => {
    const p = await onBlock('conv7');
    await page.mouse.click(p.x, p.y);
    await until('conv7 in the Inspector', async () => (await w.inspected()) === 'conv7');
    const b = await w.block('conv7').boundingBox();
    const v = await view();
    const want = screen(v, ui('conv7').x, ui('conv7').y);
    assert.ok(Math.abs(b.x - want.x) < 2 && Math.abs(b.y - want.y) < 2,
              `the selected block is drawn where the canvas drew it (${b.x},${b.y} vs ${want.x},${want.y})`);
    assert.ok(Math.abs(b.width - FAR_W * v.k) < 2, `its width ${b.width} is the far box's`);
    await w.shot('2-far-block-selected');
    /* an empty spot: above the first row of groups */
    const empty = screen(v, ui('img0').x - 150, ui('img0').y - 60);
    await page.mouse.click(empty.x, empty.y);
    await until('nothing selected', async () => (await w.inspected()) === '');
    assert.equal(await drawnElements(), 0);
  },
  3: async () => {
    const before = ui('relu12');
    const p = await onBlock('relu12');
    const v = await view();
    await page.mouse.move(p.x, p.y);
    await page.mouse.down();
    for (let i = 1; i <= 10; i++) await page.mouse.move(p.x + 4 * i, p.y + 3 * i);
    await page.mouse.up();
    const want = {x: before.x + 40 / v.k, y: before.y + 30 / v.k};
    await until('the move is an edit', async () => (await dirty()) === 1);
    await w.save('big', (pg) => {
      const at = pg.blocks.find((b) => b.id === 'relu12').ui;
      return Math.abs(at.x - want.x) < 1.5 && Math.abs(at.y - want.y) < 1.5;
    });
    assert.equal(await w.inspected(), 'relu12', 'the dragged block is selected');
    await w.shot('3-far-block-moved');
    await w.clickPane();
    await page.keyboard.press(`${mod}+z`);
    await until('the move undone', async () => {
      const held = await w.sessionPage('big');
      const at = held.blocks.find((b) => b.id === 'relu12').ui;
      return at.x === before.x && at.y === before.y;
    });
    await w.save('big');
    assert.deepEqual(w.readPage('big').blocks.find((b) => b.id === 'relu12').ui, before);
    /* redone, saved, and the tab reloaded: the far block is where it was dropped */
    await page.keyboard.press(`${mod}+Shift+z`);
    await w.save('big', (pg) => {
      const at = pg.blocks.find((b) => b.id === 'relu12').ui;
      return Math.abs(at.x - want.x) < 1.5 && Math.abs(at.y - want.y) < 1.5;
    });
    const saved = w.readPage('big').blocks.find((b) => b.id === 'relu12').ui;
    await page.reload();
    await page.locator('.canvas[data-fitted]').waitFor();
    await until('the far canvas drawn again', async () => Number(await far().getAttribute('data-shown')) > 0);
    await page.waitForTimeout(200);
    const q = await onBlock('relu12', saved);
    await page.mouse.click(q.x, q.y);
    await until('relu12 found where it was dropped', async () => (await w.inspected()) === 'relu12');
    await w.clickPane();
  },
  4: async () => {
    const p = await onBlock('conv0');
    await page.mouse.move(p.x, p.y);
    for (let i = 0; i < 60 && (await view()).k < 0.6; i++) {
      await page.mouse.wheel(0, -200);
      await page.waitForTimeout(30);
    }
    await until('blocks as elements', async () => (await drawnElements()) > 3);
    assert.equal(await far().count(), 0, 'no far canvas when zoomed in');
    await until('the wires drawn', async () => (await page.locator('.react-flow__edge path').count()) > 3);
    await page.waitForTimeout(300);
    /* every wire in view ends on the centres of its ports' dots */
    const off = await page.evaluate(() => {
      const bad = [];
      const pane = document.querySelector('.react-flow__pane').getBoundingClientRect();
      const centre = (el) => { const r = el.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; };
      for (const e of document.querySelectorAll('.react-flow__edge')) {
        const id = e.getAttribute('data-id') || e.getAttribute('data-testid') || '';
        const path = e.querySelector('path.react-flow__edge-path');
        if (!path || !path.getTotalLength()) continue;
        const ctm = path.getScreenCTM();
        const at = (len) => { const q = path.getPointAtLength(len); return [q.x * ctm.a + ctm.e, q.y * ctm.d + ctm.f]; };
        const [start, end] = [at(0), at(path.getTotalLength())];
        const dots = [...document.querySelectorAll('.react-flow__handle')].map(centre);
        for (const pt of [start, end]) {
          if (pt[0] < pane.left || pt[1] < pane.top || pt[0] > pane.right || pt[1] > pane.bottom) continue;
          const near = Math.min(...dots.map((d) => Math.hypot(d[0] - pt[0], d[1] - pt[1])));
          if (near > 6) bad.push(`${id} ${pt.map(Math.round)} is ${near.toFixed(1)} px from a dot`);
        }
      }
      return bad;
    });
    assert.deepEqual(off, [], 'wires end on dots');
    await w.shot('4-zoomed-in');
    /* and out again: the far canvas */
    for (let i = 0; i < 60 && (await view()).k > 0.2; i++) {
      await page.mouse.wheel(0, 300);
      await page.waitForTimeout(30);
    }
    await until('far again', async () => (await far().count()) === 1 && (await drawnElements()) === 0);
    await page.getByRole('button', {name: /fit view/i}).click();
    await page.waitForTimeout(300);
    assert.equal(Number(await far().getAttribute('data-shown')) + await drawnElements(),
                 big.blocks.length, 'the fit button frames the whole page');
  },
  5: async () => {
    const p = await onBlock('sig3');
    await page.mouse.click(p.x, p.y, {button: 'right'});
    const menu = page.getByTestId('context-menu');
    await menu.waitFor();
    assert.equal(await menu.getAttribute('aria-label'), 'block menu');
    assert.equal(await w.inspected(), 'sig3', 'the right-clicked block is selected');
    await w.shot('5-far-block-menu');
    await page.keyboard.press('Escape');
    await menu.waitFor({state: 'detached'});
    const q = await onBlock('tanh4');
    await page.mouse.dblclick(q.x, q.y);
    await until('the id field has the focus', async () => page.evaluate(
      () => document.activeElement && document.activeElement.getAttribute('data-testid') === 'block-id'));
    assert.equal(await w.inspected(), 'tanh4');
    await page.keyboard.press('Escape');
    await w.clickPane();
  },
  6: async () => {
    const v = await view();
    /* a box around the whole of group 0's first row of blocks (img0 .. id0) */
    const a = screen(v, ui('img0').x - 30, ui('img0').y - 30);
    const b = screen(v, ui('id0').x + FAR_W + 30, ui('id0').y + 90);
    await page.keyboard.down('Shift');
    await page.mouse.move(a.x, a.y);
    await page.mouse.down();
    for (let i = 1; i <= 10; i++) await page.mouse.move(a.x + (b.x - a.x) * i / 10, a.y + (b.y - a.y) * i / 10);
    await page.mouse.up();
    await page.keyboard.up('Shift');
    const summary = page.getByTestId('selection-summary');
    await summary.waitFor();
    const text = await summary.textContent();
    assert.match(text, /\b9 blocks\b/, `the box selected the 9 blocks of the row: ${text}`);
    await w.shot('6-far-box-selected');
    await w.clickPane();
  },
  7: async () => {
    const map = page.getByTestId('page-minimap');
    assert.equal(Number(await map.getAttribute('data-blocks')), big.blocks.length);
    /* zoom in (the wheel over the canvas's middle), then press the minimap's bottom right */
    const pane = await page.locator('.react-flow__pane').boundingBox();
    await page.mouse.move(pane.x + pane.width / 2, pane.y + pane.height / 2);
    for (let i = 0; i < 60 && (await view()).k < 0.5; i++) {
      await page.mouse.wheel(0, -300);
      await page.waitForTimeout(20);
    }
    const before = await view();
    const m = await map.boundingBox();
    /* where the minimap draws block tanh27 (the last row of groups, the middle one) */
    const [s, ox, oy] = (await map.getAttribute('data-frame')).split(',').map(Number);
    const t = ui('tanh27');
    await page.mouse.click(m.x + ox + (t.x + FAR_W / 2) * s, m.y + oy + (t.y + 20) * s);
    const after = await view();
    assert.equal(after.k, before.k, 'the zoom is kept');
    /* the middle of the canvas now shows tanh27 (within a minimap pixel) */
    const mid = {x: (pane.width / 2 - after.tx) / after.k, y: (pane.height / 2 - after.ty) / after.k};
    assert.ok(Math.abs(mid.x - (t.x + FAR_W / 2)) < 2 / s && Math.abs(mid.y - (t.y + 20)) < 2 / s,
              `the view is centred on tanh27 (${JSON.stringify(mid)} vs ${JSON.stringify(t)})`);
    await w.block('tanh27').waitFor();
    await w.shot('7-minimap-pressed');
  },
  8: async () => {
    await page.getByRole('button', {name: /fit view/i}).click();
    await until('far', async () => (await far().count()) === 1);
    const p = await onBlock('neg9');
    await page.mouse.click(p.x, p.y);
    await until('neg9 selected', async () => (await w.inspected()) === 'neg9');
    await page.keyboard.press('Delete');
    await until('neg9 removed', async () => {
      const held = await w.sessionPage('big');
      return !held.blocks.some((b) => b.id === 'neg9');
    });
    const held = await w.sessionPage('big');
    const mul9 = held.blocks.find((b) => b.id === 'mul9');
    assert.equal(mul9.inputs.x, undefined, 'the wire neg9 fed is cut');
    assert.equal(mul9.inputs.y, 'add9', 'the other wire stays');
    await page.keyboard.press(`${mod}+z`);
    await until('neg9 back with its wire', async () => {
      const h = await w.sessionPage('big');
      return h.blocks.some((b) => b.id === 'neg9') &&
             h.blocks.find((b) => b.id === 'mul9').inputs.x === 'neg9';
    });
    await w.clickPane();
  },
});
