// editor.layout.mjs - what a person sees at 1280x720 and 1920x1080 on a training page and a
// page of 30 blocks, checked with the browser's own boxes (Debian's Chromium, a real
// `blockflow serve`):
//   1  the header: the page's name whole ("learn_a_filter.json", not "lea…"), no control on
//      another, nothing past the window's edge
//   2  a message (toast) stays off the header and the training bar with its metric
//   3  the minimap covers no block of a 30-block page, after opening and after the fit button
//   4  the numbers in the training tiles (a filter and its gradient) fit their cells, even
//      five-digit ones
// Screenshots in BF_SCREENSHOTS (default build/editor-layout-screenshots). ITEMS=1,2 runs some.
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {join} from 'node:path';
import {repo} from './harness.mjs';
import {runItems, startWorld, until} from './person.mjs';

const SIZES = [[1280, 720], [1920, 1080]];
const learn = JSON.parse(readFileSync(join(repo, 'examples/train/learn_a_filter.json'), 'utf8'));
const w = await startWorld('editor-layout-screenshots', (w) => {
  w.writePage('learn_a_filter', learn);
  /* the same page whose filter starts with numbers of every size */
  const big = structuredClone(learn);
  big.blocks.find((b) => b.id === 'w').attrs.value =
    [12345.6, -23456.7, 0.5, -0.001, 1e4, -99.9, 3, -7.77, 1500];
  w.writePage('big_numbers', big);
  const c = (i) => ({id: `k${i}`, type: 'Const', ui: {x: (i % 6) * 300, y: Math.floor(i / 6) * 160},
                     attrs: {dtype: 'float32', shape: [2, 2], value: i}});
  w.writePage('thirty', {format: 'blockflow.page', version: 1, name: 'thirty',
                         blocks: Array.from({length: 30}, (_, i) => c(i)), outputs: []});
});
const {page} = w;
const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
                       a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
/** Press Step and wait for the step count to go up. */
const step = async () => {
  const n = Number(await page.getByTestId('train-step-count').textContent());
  await page.getByTestId('train-step').click();
  await until(`step ${n + 1}`, async () =>
    Number(await page.getByTestId('train-step-count').textContent()) > n);
};
const rect = (loc) => loc.evaluate((e) => e.getBoundingClientRect().toJSON());

await runItems(w, {
  1: async () => {
    for (const [width, height] of SIZES) {
      await page.setViewportSize({width, height});
      await w.open('learn_a_filter');
      await w.block('w').click(); /* "Run to “w”" takes its room too */
      const name = page.locator('.topbar .docname-text');
      const cut = await name.evaluate((e) => e.scrollWidth > e.clientWidth + 1);
      assert.equal(cut, false, `the page's name is whole at ${width}: ${await name.textContent()}`);
      const kids = await page.locator('header.topbar').evaluate((h) => [...h.children]
        .map((e) => ({what: e.className || e.tagName, r: e.getBoundingClientRect().toJSON(),
                      over: e.scrollWidth > e.clientWidth + 1})));
      for (let i = 0; i < kids.length; i++) {
        assert.ok(kids[i].r.right <= width + 0.5, `${kids[i].what} ends at ${kids[i].r.right} of ${width}`);
        assert.ok(!kids[i].over, `${kids[i].what} overflows itself at ${width}`);
        for (let j = i + 1; j < kids.length; j++) {
          assert.ok(!meet(kids[i].r, kids[j].r), `${kids[i].what} meets ${kids[j].what} at ${width}`);
        }
      }
      await w.shot(`1-header-${width}`);
    }
  },

  2: async () => {
    for (const [width, height] of SIZES) {
      await page.setViewportSize({width, height});
      await w.open('learn_a_filter');
      await step();
      const metric = page.locator('.trainbar-metric').first();
      await metric.locator('b').filter({hasNotText: '–'}).waitFor();
      /* a message: open the page again */
      await page.getByLabel('Open a page').selectOption('thirty');
      await page.getByLabel('Open a page').selectOption('learn_a_filter');
      const toast = w.message(/Opened learn_a_filter/);
      await toast.waitFor();
      await page.locator('.trainbar').waitFor();
      await w.settle();
      /* every box in one look (the training bar appears with the page: the layout moves, so
       * the look is taken again, for up to 3 s, until the layout has settled) */
      const look = async () => {
        const boxes = await page.evaluate(() => Object.fromEntries(Object.entries({
          message: '[data-testid="message"]', 'the training bar': '.trainbar',
          'its metric': '.trainbar-metric', 'the header': 'header.topbar',
          canvas: '[data-testid="canvas"]'}).map(([k, sel]) =>
          [k, document.querySelector(sel).getBoundingClientRect().toJSON()])));
        const t = boxes.message;
        for (const what of ['the training bar', 'its metric', 'the header']) {
          assert.ok(!meet(t, boxes[what]), `the message covers ${what} at ${width}`);
        }
        const canvas = boxes.canvas;
        assert.ok(t.top >= canvas.top && t.bottom <= canvas.bottom, 'the message is over the canvas');
      };
      for (const t0 = Date.now(); ;) {
        try {
          await look();
          break;
        } catch (e) {
          if (Date.now() - t0 > 3000) throw e;
          await page.waitForTimeout(100);
        }
      }
      await w.shot(`2-message-${width}`);
      await page.getByRole('button', {name: 'Dismiss'}).click();
    }
  },

  3: async () => {
    for (const [width, height] of SIZES) {
      await page.setViewportSize({width, height});
      for (const how of ['opened', 'fit button']) {
        if (how === 'opened') await w.open('thirty');
        else {
          await page.locator('.react-flow__controls-fitview').click();
          await w.settle();
        }
        const map = await rect(page.getByLabel('Minimap of the page').locator('xpath=ancestor-or-self::*[contains(@class,"react-flow__minimap")][1]'));
        const under = await page.evaluate((m) => [...document.querySelectorAll('.react-flow__node')]
          .filter((n) => {
            const b = n.getBoundingClientRect();
            return b.left < m.right && m.left < b.right && b.top < m.bottom && m.top < b.bottom;
          }).map((n) => n.getAttribute('data-id')), map);
        assert.deepEqual(under, [], `blocks under the minimap at ${width} (${how})`);
        assert.equal(await page.locator('.react-flow__node').count(), 30);
        await w.shot(`3-minimap-${width}-${how.replace(' ', '-')}`);
      }
    }
  },

  4: async () => {
    for (const [width, height] of SIZES) {
      await page.setViewportSize({width, height});
      await w.open('big_numbers');
      await w.block('w').click();
      await page.getByTestId('train-reset').click();
      await until('step 0', async () => (await page.getByTestId('train-step-count').textContent()) === '0');
      await page.getByTestId('training-tab').click();
      await step(); /* the filter's gradient is read at the steps after the tab opens */
      await step();
      await page.getByTestId('grid-w').waitFor();
      await until('the numbers drawn', async () => page.evaluate(() =>
        [...document.querySelectorAll('.filtergrid canvas')].filter((c) => c.dataset.numbers &&
          JSON.parse(c.dataset.numbers).length).length >= 2));
      /* each number measured here, in the font its tile drew it with, against its cell */
      const over = await page.evaluate(() => {
        const m = document.createElement('canvas').getContext('2d');
        const out = [];
        for (const c of document.querySelectorAll('.filtergrid canvas')) {
          const cell = Number(c.dataset.cell);
          for (const [text, px] of JSON.parse(c.dataset.numbers || '[]')) {
            m.font = `${px}px ui-monospace, monospace`;
            const wdt = m.measureText(text).width;
            if (wdt > cell - 2) out.push(`${text} ${wdt.toFixed(1)}px in ${cell}px`);
          }
        }
        return out;
      });
      assert.deepEqual(over, [], `numbers wider than their cells at ${width}`);
      const shown = await page.evaluate(() => JSON.parse(document.querySelector('[data-testid^="tile-w-"]').dataset.numbers).map((x) => x[0]));
      assert.ok(shown.some((t) => /e4$/.test(t)), `the five-digit numbers are shown: ${shown}`);
      await w.shot(`4-tiles-${width}`);
    }
  },
});
