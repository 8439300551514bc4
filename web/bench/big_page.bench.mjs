// big_page.bench.mjs - the editor on a big page, in Debian's Chromium (headless) against a
// real `blockflow serve`: the generated page of gen_page.mjs (500 blocks by default), and for
// each of TRIES fresh tabs:
//   first render  picking the page in the top bar -> its blocks drawn and framed (the canvas
//                 unchanged for 10 frames; the time of the first of them)
//   edit->labels  Enter in a filter constant's shape field ([3,3,1,1] -> [5,5,1,1]: the page
//                 still runs) -> the wire after it shows the new shape (with the server's own
//                 time for that edit batch, from Resource Timing)
//   run->done     the Run click -> every block on screen shows done (with the run's time as
//                 the server reports it in run_finished)
//   zoom/pan      p95 and max of the frame intervals while zooming with the wheel and panning
//                 with a drag
// PROFILE=1 also records a CPU profile of each phase (Chromium's profiler through CDP) and
// prints the functions that took the most time (self time, by function and file:line).
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
    /* React Flow shows a block (visibility) once it has measured it; reading inline styles
     * forces no layout (offsetWidth here did, 500 times a frame, and cost the page 150 ms) */
    let shown = 0;
    for (const n of nodes) if (n.style.visibility !== 'hidden') shown++;
    /* zoomed far out, the blocks are drawn on one canvas (FarLayer): its drawings count */
    const far = document.querySelector('[data-testid="far-layer"]');
    const farShown = far ? Number(far.dataset.shown || 0) : 0;
    const sig = nodes.length + '|' + (v ? v.style.transform : '') + '|' + shown + '|' + farShown +
                '|' + (far ? far.dataset.draws : '');
    const now = performance.now();
    if ((nodes.length > 0 || farShown > 0) && sig === last) { same++; if (same >= 10) return done(since - t0); }
    else { same = 0; since = now; last = sig; }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}))()`;

/** PROFILE=1: a CPU profile around `fn` (CDP Profiler), its top functions by self time. */
async function profiled(page, phase, fn) {
  if (process.env.TRACE) return traced(page, phase, fn);
  if (!process.env.PROFILE) return fn();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', {interval: 200});
  await cdp.send('Profiler.start');
  const out = await fn();
  const {profile} = await cdp.send('Profiler.stop');
  if (process.env.PROFILE_FILE) writeFileSync(`${process.env.PROFILE_FILE}.${phase.replace(/\W+/g, '_')}.cpuprofile`, JSON.stringify(profile));
  const dt = profile.timeDeltas;
  const self = new Map();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const f = byId.get(id).callFrame;
    const k = `${f.functionName || '(anon)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
    self.set(k, (self.get(k) || 0) + (dt[i] || 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const top = [...self].filter(([k]) => !/^\(idle\)/.test(k)).sort((a, b) => b[1] - a[1]).slice(0, 18);
  console.log(`## ${phase}: ${total.toFixed(0)} ms sampled, idle ${(self.get('(idle) :0') || 0).toFixed(0)} ms`);
  for (const [k, ms] of top) console.log(`   ${ms.toFixed(1).padStart(7)} ms  ${k}`);
  await cdp.detach();
  return out;
}

/** TRACE=1: a Chromium trace around `fn`; the renderer main thread's time by event name. */
async function traced(page, phase, fn) {
  const browser = page.context().browser();
  await browser.startTracing(page, {categories: ['devtools.timeline', 'blink', 'v8', 'toplevel']});
  const out = await fn();
  const buf = await browser.stopTracing();
  const evs = JSON.parse(buf.toString()).traceEvents;
  if (process.env.TRACE_FILE) writeFileSync(`${process.env.TRACE_FILE}.${phase.replace(/\W+/g, '_')}.json`, buf);
  const main = evs.find((e) => e.name === 'thread_name' && e.args && e.args.name === 'CrRendererMain');
  const sum = new Map();
  let frames = 0;
  for (const e of evs) {
    if (!main || e.tid !== main.tid || e.pid !== main.pid || e.ph !== 'X' || !e.dur) continue;
    const d = e.args && e.args.data;
    const k = e.name === 'FunctionCall' && d ? `FunctionCall ${d.functionName || ''} ${(d.url || '').split('/').pop()}:${d.lineNumber}`
      : e.name === 'EventDispatch' && d ? `EventDispatch ${d.type}` : e.name;
    sum.set(k, (sum.get(k) || 0) + e.dur / 1000);
    if (e.name === 'AnimationFrame' || e.name === 'FireAnimationFrame') frames++;
  }
  console.log(`## ${phase} (trace, main thread; nested events overlap), animation frames ${frames}`);
  if (process.env.TRACE === 'timeline') { /* the main thread's tasks over 4 ms, in order */
    const onMain = evs.filter((e) => main && e.tid === main.tid && e.pid === main.pid && e.ph === 'X' && e.dur);
    const tasks = onMain.filter((e) => e.name === 'ThreadControllerImpl::RunTask' || e.name === 'RunTask');
    const t0 = tasks.length ? tasks[0].ts : 0;
    for (const t of tasks.filter((e) => e.dur > Number(process.env.TASK_US || 4000))) {
      const inner = new Map();
      for (const e of onMain) {
        if (e === t || e.ts < t.ts || e.ts + e.dur > t.ts + t.dur || e.dur < 2000) continue;
        const d = e.args && e.args.data;
        const k = e.name === 'EventDispatch' && d ? `Event ${d.type}` : e.name;
        if (/^(v8|Blink\.|Document::|LocalFrameView::(Run|Update)|UpdateLayoutTree|WebFrameWidgetImpl|PageAnimator|FrameRequest|AsyncTask|V8\.GC_MC|ThreadController)/.test(k)) continue;
        inner.set(k, (inner.get(k) || 0) + e.dur / 1000);
      }
      const top = [...inner].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, ms]) => `${k} ${ms.toFixed(0)}`).join(', ');
      console.log(`   +${((t.ts - t0) / 1000).toFixed(0).padStart(5)} ms  ${(t.dur / 1000).toFixed(1).padStart(6)} ms  ${top}`);
    }
  }
  for (const [k, ms] of [...sum].sort((x, y) => y[1] - x[1]).slice(0, 16)) {
    console.log(`   ${ms.toFixed(1).padStart(7)} ms  ${k}`);
  }
  return out;
}

async function once(browser, origin, token, label) {
  const ctx = await browser.newContext({viewport: {width: 1600, height: 1000},
                                        extraHTTPHeaders: {Authorization: `Bearer ${token}`}});
  const page = await ctx.newPage();
  page.on('crash', () => console.log('# the tab crashed'));
  page.on('close', () => console.log('# the tab closed'));
  if (process.env.BENCH_VERBOSE) page.on('console', (m) => console.log('# page:', m.text()));
  page.on('pageerror', (e) => console.log('# page error', String(e).slice(0, 300)));
  const runMs = [];
  /* the server's own time of each run, from run_finished; playwright's WebSocket frame events
   * are not used: they make the tab forward every frame to this process (DevTools' network
   * instrumentation), which a person's browser does not do */
  await page.exposeFunction('__runFinished', (ms) => runMs.push(ms));
  /* when each run event reaches the page (before the editor handles it) */
  await page.addInitScript(() => {
    const W = window.WebSocket;
    window.__wsAt = [];
    window.WebSocket = class extends W {
      constructor(...a) {
        super(...a);
        this.addEventListener('message', (m) => {
          window.__wsBytes = (window.__wsBytes || 0) + m.data.length;
          window.__wsFrames = (window.__wsFrames || 0) + 1;
          if (window.__verbose && /block_finished/.test(m.data) && !window.__shown) { window.__shown = 1; console.log('a frame: ' + m.data.slice(0, 700)); }
          const n = (m.data.match(/"type":"(block_\w+|run_\w+)"/g) || []).length;
          for (let k = 0; k < n; k++) window.__wsAt.push(performance.now());
          if (/"type":"run_finished"/.test(m.data)) {
            const evs = [].concat(JSON.parse(m.data));
            window.__runFinished(evs.find((e) => e.type === 'run_finished').ms);
          }
        });
      }
    };
  });
  await page.goto(`${origin}/?token=${token}`);
  await page.getByLabel('Open a page').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.palette-item').length > 10);
  /* first render */
  const first = await profiled(page, 'first render', async () => {
    const settled = page.evaluate(SETTLE);
    await page.getByLabel('Open a page').selectOption('big');
    return settled;
  });
  if (process.env.BENCH_VERBOSE) {
    console.log(await page.evaluate(() => performance.getEntriesByType('resource')
      .filter((r) => /\/api\//.test(r.name)).slice(-8)
      .map((r) => `${r.name.replace(/^.*\/api/, '')} ${r.startTime.toFixed(0)}+${r.duration.toFixed(0)}`).join('\n')));
  }
  /* edit -> labels: zoom in on the first group with the wheel (as a person does, to read
   * it), select w0, set its shape to [5,5,1,1]; the wire conv0.filter shows it (a SAME
   * convolution: nothing after it changes shape, and the page still runs) */
  const zoom = () => page.evaluate(() => Number((/scale\(([\d.e-]+)\)/.exec(
    document.querySelector('.react-flow__viewport').style.transform) || [0, 1])[1]));
  /* img0's middle on screen, from its saved position and the view (far out, it is drawn on
   * the far canvas and has no element) */
  const img0 = pageJson.blocks.find((b) => b.id === 'img0').ui;
  const onImg0 = () => page.evaluate(({x, y}) => {
    const m = /translate\(([-\d.e]+)px, ([-\d.e]+)px\) scale\(([-\d.e]+)\)/.exec(
      document.querySelector('.react-flow__viewport').style.transform);
    const r = document.querySelector('.react-flow__pane').getBoundingClientRect();
    return {x: r.left + Number(m[1]) + (x + 120) * Number(m[3]), y: r.top + Number(m[2]) + (y + 24) * Number(m[3])};
  }, img0);
  for (let k = 0; k < 60 && await zoom() < 0.7; k++) {
    const b = await onImg0();
    await page.mouse.move(b.x, b.y);
    await page.mouse.wheel(0, -200);
    await page.waitForTimeout(40);
  }
  if (process.env.BENCH_VERBOSE) console.log("zoom", await zoom(), await page.locator(".react-flow__node").count(), await page.locator(".react-flow__node[data-id=conv0]").boundingBox());
  await page.locator('.react-flow__node[data-id="w0"]').click({force: true});
  const field = page.locator('#attr-w0-shape');
  await field.waitFor();
  await field.fill('5, 5, 1, 1');
  const editP = page.evaluate(() => new Promise((done) => {
    let tk = null;
    window.addEventListener('keydown', (e) => { if (e.key === 'Enter') tk = performance.now(); }, {capture: true, once: true});
    const label = () => document.querySelector('[data-testid="wire-conv0.filter"]');
    const mo = new MutationObserver(() => {
      const l = label();
      if (tk !== null && l && l.textContent.includes('[5,5,1,1]')) {
        const t = performance.now() - tk;
        mo.disconnect();
        const edits = performance.getEntriesByType('resource').filter((r) => /\/edits$/.test(r.name));
        const last = edits[edits.length - 1];
        done({ms: t, server: last ? last.responseEnd - last.requestStart : NaN});
      }
    });
    mo.observe(document.body, {subtree: true, childList: true, characterData: true});
  }));
  const edit = await profiled(page, 'edit -> labels', async () => {
    await field.press('Enter');
    return editP;
  });
  if (process.env.BENCH_VERBOSE) console.log("first", first, "edit", edit);
  /* run -> every block on screen done */
  await page.locator('.react-flow__pane').click({position: {x: 3, y: 3}});
  const runP = page.evaluate(() => new Promise((done, fail) => {
    let tc = null;
    window.addEventListener('click', (e) => {
      if (e.target.closest && e.target.closest('.run-group button.primary, button[data-action="run"]')) tc = performance.now();
    }, {capture: true});
    const tick = () => {
      const blocks = [...document.querySelectorAll('.react-flow__node .block')];
      if (tc !== null && blocks.length && blocks.every((b) => /finished|cached/.test(b.getAttribute('data-state') || ''))) {
        const at = window.__wsAt.filter((t) => t >= tc);
        if (window.__verbose) { const h = {}; for (const t of window.__wsAt.filter((t) => t >= tc)) { const b = Math.floor((t - tc) / 25) * 25; h[b] = (h[b] || 0) + 1; } console.log('arrivals per 25 ms: ' + JSON.stringify(h)); }
        if (window.__verbose) console.log(`frames ${window.__wsFrames}, ${window.__wsBytes} bytes in all`);
        if (window.__verbose) {
          for (const r of performance.getEntriesByType('resource').filter((r) => r.startTime >= tc)) {
            console.log(`request ${r.name.replace(/^.*\/api/, '')}: sent ${(r.requestStart - tc).toFixed(0)} ms after the click (queued ${(r.startTime - tc).toFixed(0)}), answered at ${(r.responseEnd - tc).toFixed(0)}`);
          }
        }
        if (window.__verbose) console.log(`events: ${at.length}, first ${(at[0] - tc).toFixed(0)} ms, last ${(at[at.length - 1] - tc).toFixed(0)} ms after the click`);
        return done(performance.now() - tc);
      }
      const bad = blocks.find((b) => /failed|skipped|cancelled/.test(b.getAttribute('data-state') || ''));
      if (tc !== null && bad) return fail(new Error(`a block ${bad.getAttribute('data-state')}: ${bad.textContent}`));
      if (tc !== null && performance.now() - tc > 60000) return fail(new Error('the run did not end in 60 s'));
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }));
  runP.catch(() => {}); /* a failure below is the one to report */
  if (process.env.BENCH_VERBOSE) await page.evaluate(() => { window.__verbose = true; });
  const run = await profiled(page, 'run -> done', async () => {
    await page.locator('header button.primary').click();
    return runP;
  });
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
  await profiled(page, 'zoom/pan', async () => {
    await page.mouse.move(cx, cy);
    for (let i = 0; i < 12; i++) { await page.mouse.wheel(0, -120); await page.waitForTimeout(30); }
    for (let i = 0; i < 12; i++) { await page.mouse.wheel(0, 120); await page.waitForTimeout(30); }
    await page.mouse.move(cx, cy);
    await page.mouse.down();
    for (let i = 1; i <= 40; i++) await page.mouse.move(cx - i * 8, cy - i * 4);
    await page.mouse.up();
  });
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
