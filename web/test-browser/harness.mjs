// harness.mjs - what every browser test shares: where the program, the built editor and the
// browsers are; skipping (exit 77, ctest "Not Run") when a browser is missing; a real
// `blockflow serve` on an ephemeral loopback port over a temporary pages folder; Debian's
// Chromium launched headless with the flags this closed network needs; numbered screenshots;
// and a small .npy reader to compare the editor's numbers with the CLI's files.
import {spawn} from 'node:child_process';
import {existsSync, mkdirSync, mkdtempSync, readFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const BINARY = resolve(process.env.BF_BINARY || join(repo, 'build/blockflow'));
export const WEB = resolve(process.env.BF_WEB || join(repo, 'web/dist'));
export const CHROMIUM = process.env.BF_CHROMIUM || '/usr/bin/chromium';

/** Screenshot folder: $BF_SCREENSHOTS, else build/NAME; created. */
export function screenshotDir(name) {
  const dir = resolve(process.env.BF_SCREENSHOTS || join(repo, 'build', name));
  mkdirSync(dir, {recursive: true});
  return dir;
}

/** Exit 77 (skipped) when the browser is missing, 1 when the editor is not built. */
export function requireBrowser(path, debianPackage) {
  if (!existsSync(path)) {
    console.log(`SKIPPED: ${path} is missing (Debian: apt-get install ${debianPackage})`);
    process.exit(77);
  }
  if (!existsSync(join(WEB, 'index.html'))) {
    console.error(`${WEB}/index.html is missing: run make editor`);
    process.exit(1);
  }
}

/** A temporary folder holding an empty pages/ folder: {tmp, pages}. */
export function tempPages(prefix) {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const pages = join(tmp, 'pages');
  mkdirSync(pages);
  return {tmp, pages};
}

/**
 * Start `blockflow serve` on an ephemeral port over `pages` with `token` (serving the editor
 * built in `web`, by default web/dist); resolves to
 * {server, port, stderr()} once it prints its port (30 s at most).
 */
export async function startServer(pages, token, web = WEB) {
  const server = spawn(BINARY, ['serve', '--listen', '127.0.0.1:0', '--pages', pages,
                                '--token', token, '--web', web, '--threads', '2'],
                       {stdio: ['ignore', 'pipe', 'pipe']});
  let err = '';
  server.stderr.on('data', (d) => { err += d; });
  const port = await new Promise((ok, fail) => {
    let out = '';
    const t = setTimeout(() => fail(new Error('server did not start: ' + err)), 30000);
    server.stdout.on('data', (d) => {
      out += d;
      const m = /listening on port (\d+)/.exec(out);
      if (m) { clearTimeout(t); ok(Number(m[1])); }
    });
    server.on('exit', (c) => fail(new Error(`server exited ${c}: ${err}`)));
  });
  return {server, port, stderr: () => err};
}

/** Debian's Chromium through playwright-core, headless, without background networking. */
export async function launchChromium() {
  const {chromium} = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** shot(name): the page as DIR/NN-name.png, logged as a TAP-like "ok" line. */
export function makeShot(page, dir) {
  let step = 0;
  return async (name) => {
    step++;
    const file = join(dir, `${String(step).padStart(2, '0')}-${name}.png`);
    await page.screenshot({path: file});
    console.log(`ok ${step} - ${name} (${file})`);
  };
}

/** A float .npy (format 1.0/2.0/3.0, little-endian, C order) -> {shape, data}. */
export function readNpy(path) {
  const b = readFileSync(path);
  const major = b[6];
  const hl = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = b.subarray(off, off + hl).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
    .filter(Boolean).map(Number);
  const body = b.subarray(off + hl);
  const n = shape.reduce((a, x) => a * x, 1);
  const data = [];
  for (let i = 0; i < n; i++) {
    data.push(descr === '<f8' ? body.readDoubleLE(i * 8) : body.readFloatLE(i * 4));
  }
  return {shape, data};
}

/**
 * The wire labels a person cannot read whole: {covered: [test ids of full labels partly under
 * a block or anything else], compact: [test ids of labels shown as "⋯"]}. Only labels wholly
 * inside the canvas are judged; a point of a label counts as seen when the topmost element
 * there is the label itself.
 */
export async function wireLabels(page) {
  return page.evaluate(() => {
    const flow = document.querySelector('.react-flow').getBoundingClientRect();
    const out = {covered: [], compact: []};
    for (const el of document.querySelectorAll('.wire-label')) {
      const id = el.getAttribute('data-testid');
      if (el.classList.contains('compact')) { out.compact.push(id); continue; }
      const r = el.getBoundingClientRect();
      if (r.left < flow.left || r.right > flow.right || r.top < flow.top || r.bottom > flow.bottom)
        continue;
      const pts = [[0.5, 0.5], [0.08, 0.3], [0.92, 0.3], [0.08, 0.7], [0.92, 0.7]];
      if (pts.some(([fx, fy]) => !el.contains(document.elementFromPoint(r.left + fx * r.width,
                                                                        r.top + fy * r.height))))
        out.covered.push(id);
    }
    return out;
  });
}
