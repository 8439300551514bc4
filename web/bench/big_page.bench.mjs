// big_page.bench.mjs - the editor on a big page, in Debian's Chromium (headless) against a
// real `blockflow serve`: the generated page of gen_page.mjs (500 blocks by default), and for
// each of TRIES fresh tabs:
//   first render  picking the page in the top bar -> its blocks drawn and framed (the canvas
//                 unchanged for 10 frames; the time of the first of them)
//   edit->labels  Enter in a constant's shape field -> the wire after it shows the new shape
//                 (with the server's own time for that edit batch, from Resource Timing)
//   run->done     the Run click -> every block on screen shows done (with the run's time as
//                 the server reports it in run_finished)
//   zoom/pan      p95 and max of the frame intervals while zooming with the wheel and panning
//                 with a drag
// Medians over the tries are printed as a table and as JSON (BENCH_JSON=file to keep them).
// BASELINE_DIST=dir also measures an older build of the editor in the same run (for example
// one built from git with `git archive REV web`), so the ratios compare like with like.
// The machine is shared: expect noise; compare only figures of one run.
//   node bench/big_page.bench.mjs [blocks]      (make editor and the blockflow binary first)
import {mkdtempSync, mkdirSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join, resolve} from 'node:path';
import {bigPage} from './gen_page.mjs';
import {WEB, launchChromium, requireBrowser, startServer, CHROMIUM} from '../test-browser/harness.mjs';

const N = Number(process.argv[2] || 500);
const TRIES = Number(process.env.TRIES || 5);
requireBrowser(CHROMIUM, 'chromium');
const tmp = mkdtempSync(join(tmpdir(), 'bf-bench-'));
const pages = join(tmp, 'pages');
mkdirSync(pages);
const pageJson = bigPage(Math.round(N / 10), 'big');
const write = () => writeFileSync(join(pages, 'big.json'), JSON.stringify(pageJson, null, 1));

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN; };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

/** Watch the canvas from now: resolves with the time (ms after now) when it settled. */
const SETTLE = `(() => new Promise((done) => {
  const t0 = performance.now();
  let last = '', since = null, same = 0;
  const tick = () => {
    const nodes = document.querySelectorAll('.react-flow__node');
    const v = document.querySelector('.react-flow__viewport');
    const sig = nodes.length + '|' + (v ? v.style.transform : '') + '|' +
                [...nodes].filter((n) => n.offsetWidth > 0).length;
    const now = performance.now();
    if (nodes.length > 0 && sig === last) { same++; if (same >= 10) return done(since - t0); }
    else { same = 0; since = now; last = sig; }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}))()`;

async function once(browser, origin, token, label) {
  const ctx = await browser.newContext({viewport: {width: 1600, height: 1000},
                                        extraHTTPHeaders: {Authorization: `Bearer ${token}`}});
  const page = await ctx.newPage();
  page.on('crash', () => console.log('# the tab crashed'));
  page.on('close', () => console.log('# the tab closed'));
  page.on('pageerror', (e) => console.log('# page error', String(e).slice(0, 300)));
  const runMs = [];
  page.on('websocket', (ws) => ws.on('framereceived', (f) => {
    try { const e = JSON.parse(f.payload); if (e.type === 'run_finished') runMs.push(e.ms); } catch { /* not JSON */ }
  }));
  await page.goto(`${origin}/?token=${token}`);
  await page.getByLabel('Open a page').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.palette-item').length > 10);
  /* first render */
  const settled = page.evaluate(SETTLE);
  await page.getByLabel('Open a page').selectOption('big');
  const first = await settled;
  /* edit -> labels: zoom in on the first group with the wheel (as a person does, to read
   * it), select img0, set its shape to [1,9,9,1]; the wire conv0.input shows it */
  const zoom = () => page.evaluate(() => Number((/scale\(([\d.e-]+)\)/.exec(
    document.querySelector('.react-flow__viewport').style.transform) || [0, 1])[1]));
  for (let k = 0; k < 60 && await zoom() < 0.7; k++) {
    const b = await page.locator('.react-flow__node[data-id="img0"]').boundingBox();
    await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
    await page.mouse.wheel(0, -200);
    await page.waitForTimeout(40);
  }
  if (process.env.BENCH_VERBOSE) console.log("zoom", await zoom(), await page.locator(".react-flow__node").count(), await page.locator(".react-flow__node[data-id=conv0]").boundingBox());
  await page.locator('.react-flow__node[data-id="img0"]').click({force: true});
  const field = page.locator('#attr-img0-shape');
  await field.waitFor();
  await field.fill('1, 9, 9, 1');
  const editP = page.evaluate(() => new Promise((done) => {
    let tk = null;
    window.addEventListener('keydown', (e) => { if (e.key === 'Enter') tk = performance.now(); }, {capture: true, once: true});
    const label = () => document.querySelector('[data-testid="wire-conv0.input"]');
    const mo = new MutationObserver(() => {
      const l = label();
      if (tk !== null && l && l.textContent.includes('[1,9,9,1]')) {
        const t = performance.now() - tk;
        mo.disconnect();
        const edits = performance.getEntriesByType('resource').filter((r) => /\/edits$/.test(r.name));
        const last = edits[edits.length - 1];
        done({ms: t, server: last ? last.responseEnd - last.requestStart : NaN});
      }
    });
    mo.observe(document.body, {subtree: true, childList: true, characterData: true});
  }));
  await field.press('Enter');
  const edit = await editP;
  if (process.env.BENCH_VERBOSE) console.log("first", first, "edit", edit);
  /* run -> every block on screen done */
  await page.locator('.react-flow__pane').click({position: {x: 3, y: 3}});
  const runP = page.evaluate(() => new Promise((done) => {
    let tc = null;
    window.addEventListener('click', (e) => {
      if (e.target.closest && e.target.closest('.run-group button.primary, button[data-action="run"]')) tc = performance.now();
    }, {capture: true});
    const tick = () => {
      const blocks = [...document.querySelectorAll('.react-flow__node .block')];
      if (tc !== null && blocks.length && blocks.every((b) => /finished|cached/.test(b.getAttribute('data-state') || ''))) {
        return done(performance.now() - tc);
      }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }));
  runP.catch(() => {}); /* a failure below is the one to report */
  await page.locator('header button.primary').click();
  const run = await runP;
  /* zoom and pan: frame intervals */
  const box = await page.locator('.react-flow__pane').boundingBox();
  const cx = box.x + box.width / 2, cy = box.y + box.height / 2;
  await page.evaluate(() => {
    window.__frames = [];
    let last = performance.now();
    const tick = (t) => { window.__frames.push(t - last); last = t; if (!window.__stop) requestAnimationFrame(tick); };
    window.__stop = false;
    requestAnimationFrame(tick);
  });
  await page.mouse.move(cx, cy);
  for (let i = 0; i < 12; i++) { await page.mouse.wheel(0, -120); await page.waitForTimeout(30); }
  for (let i = 0; i < 12; i++) { await page.mouse.wheel(0, 120); await page.waitForTimeout(30); }
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  for (let i = 1; i <= 40; i++) await page.mouse.move(cx - i * 8, cy - i * 4);
  await page.mouse.up();
  const frames = await page.evaluate(() => { window.__stop = true; return window.__frames.slice(2); });
  await ctx.close();
  const r = {label, first, edit: edit.ms, editServer: edit.server, run, runServer: runMs[runMs.length - 1],
             p95: pct(frames, 0.95), maxFrame: Math.max(...frames), frames: frames.length};
  console.log(`# ${label}: first ${r.first.toFixed(0)} ms, edit->labels ${r.edit.toFixed(0)} ms (server ${r.editServer.toFixed(1)}), run->done ${r.run.toFixed(0)} ms (server ${Number(r.runServer).toFixed(1)}), frames p95 ${r.p95.toFixed(1)} max ${r.maxFrame.toFixed(1)} ms`);
  return r;
}

async function measure(web, label) {
  const token = 'bench-token-0123456';
  write();
  const {server, port} = await startServer(pages, token, web);
  const origin = `http://127.0.0.1:${port}`;
  const browser = await launchChromium();
  browser.on('disconnected', () => console.log('# the browser went away'));
  const out = [];
  try {
    for (let i = 0; i < TRIES; i++) {
      write(); /* the same page each try: the edit of the last one is not saved, but close it */
      await fetch(`${origin}/api/pages/big/close`, {method: 'POST', headers: {Authorization: `Bearer ${token}`}}).catch(() => {});
      out.push(await once(browser, origin, token, `${label} #${i + 1}`));
    }
  } finally {
    await browser.close();
    server.kill('SIGTERM');
  }
  const m = (k) => median(out.map((r) => r[k]));
  return {label, tries: out.length, first: m('first'), edit: m('edit'), editServer: m('editServer'),
          run: m('run'), runServer: m('runServer'), p95: m('p95'), maxFrame: m('maxFrame')};
}

const results = [];
results.push(await measure(resolve(WEB), 'editor'));
if (process.env.BASELINE_DIST) results.push(await measure(resolve(process.env.BASELINE_DIST), 'baseline'));
console.log(`\n${N} blocks, ${TRIES} tries, medians (ms):`);
console.log('| build | first render | edit -> labels (server) | Run -> all done (server) | zoom/pan frame p95 (max) |');
console.log('|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.label} | ${r.first.toFixed(0)} | ${r.edit.toFixed(0)} (${r.editServer.toFixed(1)}) | ${r.run.toFixed(0)} (${Number(r.runServer).toFixed(1)}) | ${r.p95.toFixed(1)} (${r.maxFrame.toFixed(1)}) |`);
}
if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({blocks: N, tries: TRIES, results}, null, 2));
