/*
 * training.js - live training of the open page (README "Serve", the train endpoints): the
 * state the training bar, the metrics plot and the filter grids show, kept from the server's
 * events, and the calls that drive it. A small external store (subscribe / getSnapshot, for
 * React's useSyncExternalStore), so any component can read it without App passing it down.
 *
 * The server sends step_finished at most 20 times a second; each carries the points since the
 * previous one, so the curves keep their shape however fast the steps are. GET .../train gives
 * the whole history back after a reload. Views of Variables, their gradients and activations
 * are the segment's tensor copies (GET /api/runs/{id}/tensors/{ref}?view=values), read when an
 * event says a new copy exists, at most `viewEveryMs` apart.
 *
 * Pure helpers (trainables, filterTiles, smooth, plotData, scalarRefs) are exported for tests.
 */
import {ApiError} from '../api.js';

const UPDATE_INPUT = {
  ApplyGradientDescent: 'delta', ApplyMomentum: 'grad', ApplyAdam: 'grad',
  Assign: 'value', AssignAdd: 'value', AssignSub: 'value',
};
const HISTORY_CAP = 20000;

const pagePath = (name) => `/api/pages/${encodeURIComponent(name)}`;
const blockOf = (ref) => String(ref).split(':')[0];

/** The Variables a page trains: [{variable, update, gradient}] from its update blocks, in
 * page order; `gradient` is the source the update applies (its delta / grad / value). */
export function trainables(page) {
  const out = [];
  const byId = new Map((page && page.blocks || []).map((b) => [b.id, b]));
  for (const b of (page && page.blocks) || []) {
    const port = UPDATE_INPUT[b.type];
    const v = b.inputs && b.inputs.var;
    if (!port || !v) continue;
    const variable = blockOf(v);
    const vb = byId.get(variable);
    if (!vb || vb.type !== 'Variable' || out.some((t) => t.variable === variable)) continue;
    const g = b.inputs[port];
    out.push({variable, update: b.id, gradient: g || null});
  }
  return out;
}

/** The refs of rank-0 outputs the check knows of ("block" for a first port, else
 * "block:port"): what can be plotted. */
export function scalarRefs(check) {
  const out = [];
  for (const [id, info] of Object.entries((check && check.blocks) || {})) {
    const outs = Object.entries(info.outputs || {});
    outs.forEach(([port, o], i) => {
      if (Array.isArray(o.shape) && o.shape.length === 0) out.push(i === 0 ? id : `${id}:${port}`);
    });
  }
  return out.sort();
}

/**
 * A Variable's (or gradient's) values as tiles, as ConvNetJS shows a conv layer's filters:
 * rank 4 [kh, kw, in, out] -> one tile per output channel (and per input channel, up to
 * `maxIn`), each kh x kw; rank 2 -> one tile rows x cols; rank 1 -> one row; rank 0 -> 1x1.
 * Returns {tiles: [{label, rows, cols, values}], min, max}.
 */
/**
 * The number a heatmap cell of a tile shows for `v` when the tiles' colour scale reaches
 * ±`lim`: short (a cell is 34 to 46 px wide), '' for no number. Zero (and -0) as "0", small
 * scales in exponent form ("-5e-3"), near-zero values as "0", large ones in exponent form from
 * 1000 on ("1.2e4").
 */
export function tileNumber(v, lim) {
  if (v === null || !Number.isFinite(v)) return '';
  if (v === 0) return '0'; /* not "0e0" (an all-zero tensor has the scale 0) */
  if (lim < 0.05) return v.toExponential(0).replace('e+', 'e');
  const a = Math.abs(v);
  if (a < 5e-3) return '0';
  if (a >= 1000) return v.toExponential(1).replace('e+', 'e');
  return v.toFixed(a >= 10 ? 0 : 2);
}

export function filterTiles(shape, values, {maxIn = 4, maxOut = 64, layout = 'hwio'} = {}) {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === Infinity) { min = 0; max = 0; }
  const tiles = [];
  if (shape.length === 4 && layout === 'nhwc') { /* an activation: the first image's channels */
    const [, h, w, c] = shape;
    for (let k = 0; k < Math.min(c, maxOut); k++) {
      const vals = [];
      for (let i = 0; i < h * w; i++) vals.push(values[i * c + k]);
      tiles.push({label: `channel ${k}`, rows: h, cols: w, values: vals, out: k, in: 0});
    }
  } else if (shape.length === 4) {
    const [kh, kw, cin, cout] = shape;
    for (let o = 0; o < Math.min(cout, maxOut); o++) {
      for (let i = 0; i < Math.min(cin, maxIn); i++) {
        const vals = [];
        for (let r = 0; r < kh; r++) {
          for (let c = 0; c < kw; c++) vals.push(values[((r * kw + c) * cin + i) * cout + o]);
        }
        tiles.push({label: cin > 1 ? `out ${o} · in ${i}` : `out ${o}`, rows: kh, cols: kw,
                    values: vals, out: o, in: i});
      }
    }
  } else if (shape.length === 2) {
    tiles.push({label: `${shape[0]}×${shape[1]}`, rows: shape[0], cols: shape[1],
                values: values.slice()});
  } else {
    const n = values.length;
    tiles.push({label: `${n}`, rows: 1, cols: Math.max(1, n), values: values.slice()});
  }
  return {tiles, min, max};
}

/** TensorBoard's smoothing: a debiased exponential moving average, weight in [0, 1). */
export function smooth(vals, weight) {
  if (!weight) return vals.slice();
  const out = new Array(vals.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < vals.length; i++) {
    const v = vals[i];
    if (v === null || !Number.isFinite(v)) { out[i] = null; continue; }
    last = last * weight + (1 - weight) * v;
    n++;
    out[i] = last / (1 - weight ** n);
  }
  return out;
}

/**
 * uPlot's data for the chosen metrics: [steps, m1, m1 smoothed, m2, ...]. Every metric of a
 * job is recorded at the same steps, so the first metric's steps are the x axis; on a log
 * scale values <= 0 are left out (null). Smoothed over every point, then thinned to at most
 * about `maxPoints` for drawing (the last point always kept).
 */
export function plotData(series, names, {weight = 0, log = false, maxPoints = 2000} = {}) {
  const first = names.map((n) => series[n]).find((s) => s && s.steps.length);
  const all = first ? first.steps : [];
  const data = [];
  const raw = names.map((n) => {
    const s = series[n] || {steps: [], vals: []};
    const same = s.steps.length === all.length &&
      (!all.length || s.steps[all.length - 1] === all[all.length - 1]);
    let ys;
    if (same) {
      ys = s.vals.slice(); /* recorded at the same steps (the usual case): no lookup */
    } else {
      const at = new Map(s.steps.map((st, i) => [st, s.vals[i]]));
      ys = all.map((x) => (at.has(x) ? at.get(x) : null));
    }
    if (log) ys = ys.map((v) => (v !== null && v > 0 ? v : null));
    return [ys, smooth(ys, weight)];
  });
  /* a plot a few hundred pixels wide needs no more points: every k-th, and the last */
  const k = Math.max(1, Math.ceil(all.length / maxPoints));
  const keep = (a) => (k === 1 ? a : a.filter((_, i) => i % k === 0 || i === a.length - 1));
  data.push(keep(all));
  for (const [ys, sm] of raw) data.push(keep(ys), keep(sm));
  return data;
}

/** The events a Training store consumes. */
const MINE = new Set(['train_started', 'step_finished', 'train_paused', 'train_finished',
                      'train_reset', 'edits_applied', 'edits_failed']);

export class Training {
  constructor(api, {viewEveryMs = 300, notifyEveryMs = 100, editWaitMs = 10000} = {}) {
    this.api = api;
    this.editWaitMs = editWaitMs;
    this.viewEveryMs = viewEveryMs;
    this.notifyEveryMs = notifyEveryMs;
    this.lastNotify = 0;
    this.notifyTimer = null;
    this.listeners = new Set();
    this.waitingEdits = new Map(); /* edit id -> {resolve, reject} */
    this.earlyEdits = new Map();   /* edit id -> event that came before the 202 answer */
    this.views = {};               /* ref -> {shape, values} */
    this.slices = {};              /* ref -> the slice read of it (an activation's image 0) */
    this.readable = null;          /* the refs the server's newest copy holds (null: unknown) */
    this.editsOut = new Set();     /* edits sent and not yet applied (or refused) */
    this.configuring = Promise.resolve(); /* the watch/metrics commands, one after another */
    this.viewTimer = null;
    this.viewBusy = false;
    this.viewWanted = false;
    this.viewNow = false;
    this.lastView = 0;
    this.snap = this.fresh(null);
  }

  fresh(page) {
    return {page, state: 'idle', step: 0, stepsPerS: 0, runId: null, metrics: [], rate: 0,
            series: {}, watch: [], views: {}, error: null, lastEdit: null, version: 0};
  }

  /* ---- the store ---------------------------------------------------------------------- */
  subscribe = (f) => { this.listeners.add(f); return () => this.listeners.delete(f); };
  getSnapshot = () => this.snap;
  set(patch, {lazy = false} = {}) {
    this.snap = {...this.snap, ...patch, version: this.snap.version + 1};
    /* step events come up to 20 a second per page: tell the components at most every
     * notifyEveryMs of those (the last one always), everything else at once */
    const now = Date.now();
    if (lazy && now - this.lastNotify < this.notifyEveryMs) {
      if (!this.notifyTimer) {
        this.notifyTimer = setTimeout(() => { this.notifyTimer = null; this.notify(); },
                                      this.notifyEveryMs - (now - this.lastNotify));
      }
      return;
    }
    this.notify();
  }

  notify() {
    clearTimeout(this.notifyTimer);
    this.notifyTimer = null;
    this.lastNotify = Date.now();
    for (const f of this.listeners) f();
  }

  /** A page was opened: its training state (curve included) from the server. */
  async open(name) {
    this.views = {};
    this.readable = null;
    this.editsOut.clear();
    this.set({...this.fresh(name)});
    if (!name) return;
    try {
      const s = await this.api.req('GET', pagePath(name) + '/train');
      if (this.snap.page !== name) return;
      const series = {};
      for (const [m, pts] of Object.entries(s.history || {})) {
        series[m] = {steps: pts.map((p) => p[0]), vals: pts.map((p) => p[1])};
      }
      if (s.views) this.readable = new Set(s.views);
      this.set({state: s.state === 'running' ? 'running' : s.state === 'paused' ? 'paused' : 'idle',
                step: s.step || 0, runId: s.run_id || null, metrics: s.metrics || [], series,
                watch: s.watch || []});
      if (s.run_id) this.wantViews(true);
    } catch (e) {
      /* a page that does not load still opens in the editor: no training state */
    }
  }

  /* ---- events ------------------------------------------------------------------------- */
  /** Feed one WebSocket event; true when it was training's (the caller then skips it). */
  handle(ev) {
    const s = this.snap;
    if (!ev || ev.page !== s.page) return false;
    const ours = MINE.has(ev.type) ||
      (/^run_(failed|cancelled)$/.test(ev.type) && ev.run_id === s.runId && s.state !== 'idle');
    if (!ours) return false;
    if (Array.isArray(ev.views)) this.readable = new Set(ev.views);
    switch (ev.type) {
      case 'train_started':
        this.set({state: ev.mode === 'play' ? 'running' : 'stepping', runId: ev.run_id,
                  step: ev.step, error: null,
                  metrics: ev.metrics || s.metrics, watch: ev.watch || s.watch});
        break;
      case 'step_finished': {
        const names = ev.names || s.metrics;
        const series = {...s.series};
        for (let k = 0; k < names.length; k++) {
          const old = series[names[k]] || {steps: [], vals: []};
          const steps = old.steps.slice();
          const vals = old.vals.slice();
          for (const p of ev.points || []) {
            if (steps.length && p[0] <= steps[steps.length - 1]) continue;
            steps.push(p[0]);
            vals.push(p[k + 1]);
          }
          if (steps.length > HISTORY_CAP) { steps.splice(0, steps.length - HISTORY_CAP); vals.splice(0, vals.length - HISTORY_CAP); }
          series[names[k]] = {steps, vals};
        }
        this.set({step: ev.step, stepsPerS: ev.steps_per_s || s.stepsPerS, series,
                  metrics: names, runId: ev.run_id}, {lazy: true});
        if (ev.snapshot !== undefined) this.wantViews();
        break;
      }
      case 'train_reset':
        this.set({step: ev.step, series: {}, stepsPerS: 0});
        this.wantViews(true);
        break;
      case 'train_paused':
      case 'train_finished':
        this.set({state: 'paused', step: ev.step, stepsPerS: 0});
        this.wantViews(true);
        break;
      case 'run_failed':
      case 'run_cancelled':
        this.set({state: 'paused', step: ev.step ?? s.step, stepsPerS: 0,
                  error: ev.type === 'run_failed' ? (ev.error || {}).message || 'failed' : null});
        this.wantViews(true);
        break;
      case 'edits_applied':
      case 'edits_failed': {
        this.set({lastEdit: ev});
        const w = this.waitingEdits.get(ev.edit);
        if (w) {
          this.waitingEdits.delete(ev.edit);
          w(ev);
        } else {
          this.earlyEdits.set(ev.edit, ev);
          if (this.earlyEdits.size > 32) this.earlyEdits.delete(this.earlyEdits.keys().next().value);
        }
        break;
      }
      default: break;
    }
    return true;
  }

  /* ---- commands ----------------------------------------------------------------------- */
  async command(action, extra = {}) {
    const name = this.snap.page;
    if (!name) return null;
    try {
      const r = await this.api.req('POST', pagePath(name) + '/train', {action, ...extra});
      if (action === 'start' || action === 'resume') {
        this.set({state: 'running', runId: r.run_id || this.snap.runId});
      } else if (action === 'step' || action === 'reset') {
        if (r.run_id) this.set({runId: r.run_id});
      }
      return r;
    } catch (e) {
      this.set({error: e.message});
      throw e;
    }
  }

  play(opts = {}) {
    return this.command(this.snap.step > 0 ? 'resume' : 'start',
                        {...this.config(opts), rate: this.snap.rate});
  }

  /** At most `rate` steps a second (0: as fast as it goes), from the next step on. */
  async setRate(rate) {
    this.set({rate});
    if (this.snap.page) await this.command('watch', {rate}).catch(() => {});
  }
  pause() { return this.command('pause'); }
  stepOnce(opts = {}) { return this.command('step', this.config(opts)); }
  reset() { return this.command('reset'); }

  /** The metrics and watched refs to send with a command (only what was set). */
  config({metrics, watch} = {}) {
    const c = {};
    if (metrics) c.metrics = metrics;
    if (watch) c.watch = watch;
    return c;
  }

  /**
   * Choose the plotted metrics and the watched tensors (now, or at the next step). The page
   * may have changed a moment ago (a Variable and its update added, a backward pass undone or
   * redone): the server checks the refs against the page it holds, so the command goes after
   * the edits sent before it are applied there, and after the configure calls before it.
   * Views of refs no longer watched are dropped (their blocks may be gone).
   */
  configure({metrics, watch}) {
    const body = this.config({metrics, watch});
    if (metrics) this.set({metrics});
    if (watch) {
      const keep = new Set(watch);
      this.views = Object.fromEntries(Object.entries(this.views).filter(([r]) => keep.has(r)));
      this.set({watch, views: this.views});
    }
    const page = this.snap.page;
    if (!page || (!metrics && !watch)) return Promise.resolve();
    const run = async () => {
      await this.editsSettled();
      if (this.snap.page !== page) return;
      const r = await this.command('watch', body).catch(() => null);
      if (this.snap.page !== page) return;
      /* paused: the answer is the status, with the refs of the copy just taken */
      if (r && Array.isArray(r.views)) this.readable = new Set(r.views);
      /* an event of a segment started meanwhile told the watch the server had before */
      if (r && watch) this.set({watch});
      /* nothing trained yet: a "view" segment copies the watched tensors under a run id */
      if (!this.snap.runId && this.snap.state === 'idle' && watch && watch.length) {
        await this.command('view').catch(() => {});
      }
      this.wantViews(true);
    };
    this.configuring = this.configuring.then(run, run);
    return this.configuring;
  }

  /** Resolves once every edit sent so far is applied or refused (or after editWaitMs: an
   * answer that never comes must not hold the watch back for good). */
  async editsSettled() {
    const until = Date.now() + this.editWaitMs;
    while (this.editsOut.size && Date.now() < until) {
      let timer;
      const late = new Promise((r) => { timer = setTimeout(r, until - Date.now()); });
      await Promise.race([Promise.allSettled([...this.editsOut]), late]);
      clearTimeout(timer);
    }
  }

  /**
   * Send a batch of edits: while the job plays the server queues them (202) and answers with
   * the event edits_applied (its check) or edits_failed; resolves with the check either way
   * the server answered, or throws an ApiError 422.
   */
  edits(name, edits) {
    const p = this.sendEdits(name, edits);
    this.editsOut.add(p);
    const done = () => this.editsOut.delete(p);
    p.then(done, done);
    return p;
  }

  async sendEdits(name, edits) {
    const data = await this.api.edits(name, edits);
    if (!data || data.queued !== true) return data; /* applied at once: the check */
    const ev = this.earlyEdits.get(data.edit) || await new Promise((resolve) => {
      this.waitingEdits.set(data.edit, resolve);
    });
    this.earlyEdits.delete(data.edit);
    if (ev.type === 'edits_failed') {
      const first = (ev.problems || [])[0] || {};
      throw new ApiError(422, {error: first, problems: ev.problems});
    }
    return ev.check || null;
  }

  /* ---- views -------------------------------------------------------------------------- */
  /** Read the watched tensors soon, at most every viewEveryMs; when `now` (a pause, the end,
   * a new watch), without waiting out that gap: the last step's values are what stays. */
  wantViews(now = false) {
    this.viewWanted = true;
    if (this.viewBusy) {
      this.viewNow = this.viewNow || now;
      return;
    }
    if (this.viewTimer && now) {
      clearTimeout(this.viewTimer);
      this.viewTimer = null;
    }
    if (this.viewTimer) return;
    const wait = now ? 0 : Math.max(0, this.viewEveryMs - (Date.now() - this.lastView));
    this.viewTimer = setTimeout(() => { this.viewTimer = null; this.readViews(); }, wait);
  }

  async readViews() {
    const {runId, watch, page} = this.snap;
    if (!runId || !watch.length || this.viewBusy) return;
    this.viewBusy = true;
    this.viewWanted = false;
    this.lastView = Date.now();
    try {
      const got = {};
      for (const ref of watch) {
        if (this.readable && !this.readable.has(ref)) continue; /* not computed yet */
        try {
          const t = await this.api.req('GET', this.api.tensorUrl(runId, ref, 'values',
                                                                 this.slices[ref]));
          got[ref] = {shape: t.window || t.shape, values: t.values};
        } catch (e) {
          /* not computed yet (a new watch before the next step), or gone */
        }
      }
      if (this.snap.page === page) {
        /* only what is still watched: the watch may have changed while these were read */
        const keep = new Set(this.snap.watch);
        const views = {...this.views, ...got};
        this.views = Object.fromEntries(Object.entries(views).filter(([r]) => keep.has(r)));
        this.set({views: this.views});
      }
    } finally {
      this.viewBusy = false;
      const now = this.viewNow;
      this.viewNow = false;
      if (this.viewWanted) this.wantViews(now);
    }
  }

  /* ---- the backward pass -------------------------------------------------------------- */
  /** POST .../backward {loss, optimizer?}: the whole-page gradient as blocks (+ updates). */
  buildBackward(loss, optimizer) {
    const body = {loss};
    if (optimizer) body.optimizer = optimizer;
    return this.api.req('POST', pagePath(this.snap.page) + '/backward', body);
  }

  /** POST .../check_backward {loss}: the job's 202 answer {status, data} (awaitJob it). */
  checkBackward(loss) {
    return this.api.reqFull('POST', pagePath(this.snap.page) + '/check_backward', {loss});
  }
}

/** "sgd:0.1", "momentum:0.1:0.9", "adam:0.001" from the form's choice and rate. */
export function optimizerText(kind, lr) {
  const r = Number(lr);
  if (!kind || kind === 'none' || !(r > 0)) return null;
  if (kind === 'momentum') return `momentum:${r}:0.9`;
  return `${kind}:${r}`;
}
