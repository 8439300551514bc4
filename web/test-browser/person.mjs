// person.mjs - what the editor's "as a person does it" browser tests share (editor.person.mjs
// and editor.features.mjs): a real `blockflow serve` over a temporary pages folder, Debian's
// Chromium, and the gestures a person makes with playwright's mouse and keyboard (drag a block
// by its title, Shift+drag a selection box, right-click, type), with the checks on the page
// file on disk and after a reload. Items run one after another; a failing item is reported
// and the others still run; ITEMS=1,4 runs some of them.
import {readFileSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CHROMIUM, launchChromium, makeShot, requireBrowser, screenshotDir, startServer,
        tempPages} from './harness.mjs';

export const mod = process.platform === 'darwin' ? 'Meta' : 'Control';

/** A float32 .npy file's bytes (C order) of `shape` holding `data`. */
export function npyBytes(shape, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.alloc(data.length * 4);
  data.forEach((v, i) => body.writeFloatLE(v, i * 4));
  return Buffer.concat([head, Buffer.from(header, 'latin1'), body]);
}

/** Poll `fn` until it returns a truthy value (its value), or fail after `ms`. */
export async function until(what, fn, ms = 10000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The world of one test file: {pages folder, server, browser page, helpers}. `setup(pages)`
 * writes the pages it needs; `viewport` is the window's size.
 */
export async function startWorld(name, setup, viewport = {width: 1440, height: 900}) {
  requireBrowser(CHROMIUM, 'chromium');
  const SHOTS = screenshotDir(name);
  const {tmp, pages} = tempPages('bf-person-');
  const file = (n) => join(pages, `${n}.json`);
  const w = {
    SHOTS, tmp, pages, file,
    readPage: (n) => JSON.parse(readFileSync(file(n), 'utf8')),
    writePage: (n, p) => writeFileSync(file(n), JSON.stringify(p, null, 2) + '\n'),
  };
  await setup(w);
  const token = 'person-test-token-0123';
  const srv = await startServer(pages, token);
  w.server = srv.server;
  w.serverErr = srv.stderr;
  w.origin = `http://127.0.0.1:${srv.port}`;
  w.token = token;
  w.browser = await launchChromium();
  w.ctx = await w.browser.newContext({viewport});
  const page = await w.ctx.newPage();
  w.page = page;
  w.consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') w.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => w.consoleErrors.push(String(e)));
  w.shot = makeShot(page, SHOTS);
  w.block = (id) => page.getByTestId(`block-${id}`);
  w.message = (re) => page.getByTestId('message').filter({hasText: re});
  w.api = async (method, path, body) => {
    const r = await fetch(w.origin + path, {
      method, headers: {Authorization: `Bearer ${token}`,
                        ...(body ? {'Content-Type': 'application/json'} : {})},
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await r.json();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(data)}`);
    return data;
  };
  w.sessionPage = async (n) => (await w.api('GET', `/api/pages/${n}?view=session`)).session_page;
  await page.goto(`${w.origin}/?token=${token}`);
  await page.getByLabel('Open a page').waitFor();

  /** Open page `n` from the top bar's picker and wait until its blocks are drawn. */
  w.open = async (n) => {
    await page.getByLabel('Open a page').selectOption(n);
    await page.getByTestId('docname').filter({hasText: `${n}.json`}).waitFor();
    await until(`${n}'s blocks`, async () => (await page.locator('.react-flow__node').count()) ===
      w.readPage(n).blocks.length && (await page.locator('.react-flow__viewport').count()) > 0);
    if (w.readPage(n).blocks.length) await page.locator('.canvas[data-fitted]').waitFor();
    await w.settle();
  };
  /** Wait for the canvas to stop moving (the fit after opening) and the edits to land. */
  w.settle = async () => {
    let last = '';
    await until('the canvas at rest', async () => {
      const t = await page.evaluate(() => {
        const v = document.querySelector('.react-flow__viewport');
        return (v ? v.style.transform : '') + [...document.querySelectorAll('.react-flow__node')]
          .map((n) => n.style.transform).join();
      });
      const same = t === last;
      last = t;
      return same;
    });
  };
  /** The canvas zoom. */
  w.zoom = () => page.evaluate(() => {
    const m = /scale\(([\d.]+)\)/.exec(document.querySelector('.react-flow__viewport').style.transform);
    return m ? Number(m[1]) : 1;
  });
  /** The screen box of block `id`. */
  w.box = async (id) => w.block(id).boundingBox();
  /** Press the mouse on block `id`'s title, move by (dx, dy) screen pixels in steps, release. */
  w.drag = async (id, dx, dy, {steps = 12} = {}) => {
    const b = await page.getByTestId(`block-${id}`).locator('.block-head').boundingBox();
    const x = b.x + Math.min(30, b.width / 4), y = b.y + b.height / 2;
    await page.mouse.move(x, y);
    await page.mouse.down();
    for (let i = 1; i <= steps; i++) await page.mouse.move(x + (dx * i) / steps, y + (dy * i) / steps);
    await page.mouse.up();
  };
  /** Ctrl+S and wait for the file on disk to satisfy `ok`. */
  w.save = async (n, ok = () => true) => {
    await page.keyboard.press(`${mod}+s`);
    await until(`${n}.json saved`, async () => {
      try {
        if (!ok(w.readPage(n))) return false;
      } catch (e) {
        return false;
      }
      return (await page.locator('.topbar .dirty').count()) === 0;
    });
  };
  /** Click an empty spot of the canvas (top left corner): nothing selected. */
  w.clickPane = () => page.locator('.react-flow__pane').click({position: {x: 5, y: 5}});
  /** The Inspector's block id field's value ('' when it shows the page). */
  w.inspected = () => page.getByTestId('block-id').inputValue({timeout: 500}).catch(() => '');
  return w;
}

/** Run the numbered `items` ({n: async fn}); exit 1 when one failed. */
export async function runItems(w, items) {
  const only = (process.env.ITEMS || '').split(',').filter(Boolean);
  const failures = [];
  for (const [n, fn] of Object.entries(items)) {
    if (only.length && !only.includes(n)) continue;
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok - item ${n} (${Date.now() - t0} ms)`);
    } catch (e) {
      failures.push(n);
      console.log(`not ok - item ${n}: ${e && e.stack ? e.stack : e}`);
      await w.page.screenshot({path: join(w.SHOTS, `failure-item-${n}.png`)}).catch(() => {});
      /* start the next item from a clean state */
      await w.page.keyboard.press('Escape').catch(() => {});
    }
  }
  await w.browser.close();
  w.server.kill('SIGTERM');
  rmSync(w.tmp, {recursive: true, force: true});
  if (failures.length) {
    console.log(`FAILED items: ${failures.join(', ')}`);
    if (w.consoleErrors.length) console.log('browser console:\n' + w.consoleErrors.join('\n'));
  }
  process.exit(failures.length ? 1 : 0);
}
