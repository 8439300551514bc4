/*
 * api/teach.js - the teaching calls of `blockflow serve` (README "Teaching"), one function
 * each: explain, gradcheck and addGradients.
 *
 * explain and gradcheck run kernels, so the server may answer either way:
 *   - 200 with the library's JSON (the answer is the result), or
 *   - 202 {"run_id"}: a job on the run workers. Its result comes as the terminal event of that
 *     run on the WebSocket (explain_finished / gradcheck_finished {"result"}; run_failed
 *     {"error"}; run_cancelled), and from GET /api/runs/{id}/result (409 while it runs).
 * awaitJob() takes whichever comes first: the event (JobEvents, fed by the page's WebSocket
 * handler; it keeps events that arrive before the 202 answer) or a slow poll of the result
 * endpoint (for a socket that is down). An event sent without its result ("result_omitted",
 * too large for the socket) is completed from the result endpoint.
 */
import {ApiError} from '../api.js';

const TERMINAL = new Set(['explain_finished', 'gradcheck_finished', 'backward_checked', 'run_finished', 'run_failed',
                          'run_cancelled']);

/** The terminal events of teaching jobs, by run id: push() every WebSocket event here. */
export class JobEvents {
  constructor(keep = 64) {
    this.keep = keep;
    this.done = new Map();    /* run id -> terminal event (the last `keep`) */
    this.waiters = new Map(); /* run id -> [resolve] */
    this.connected = false;   /* the WebSocket is open: set by its owner */
  }

  /** Feed one event; true when it was a terminal event. */
  push(ev) {
    if (!ev || !ev.run_id || !TERMINAL.has(ev.type)) return false;
    this.done.set(ev.run_id, ev);
    if (this.done.size > this.keep) this.done.delete(this.done.keys().next().value);
    for (const f of this.waiters.get(ev.run_id) || []) f(ev);
    this.waiters.delete(ev.run_id);
    return true;
  }

  /** A promise of run `id`'s terminal event, and a function that stops waiting. */
  wait(id) {
    if (this.done.has(id)) return {promise: Promise.resolve(this.done.get(id)), stop() {}};
    let resolve;
    const promise = new Promise((r) => { resolve = r; });
    const list = this.waiters.get(id) || [];
    list.push(resolve);
    this.waiters.set(id, list);
    return {promise, stop: () => {
      const l = (this.waiters.get(id) || []).filter((f) => f !== resolve);
      if (l.length) this.waiters.set(id, l); else this.waiters.delete(id);
    }};
  }
}

/** GET /api/runs/{id}/result until it is there (409: still running); null once stopped. */
async function pollResult(api, id, pollMs, ctl) {
  for (;;) {
    await new Promise((r) => { ctl.timer = setTimeout(r, pollMs); ctl.wake = r; });
    if (ctl.over) return null;
    try {
      return await api.req('GET', `/api/runs/${encodeURIComponent(id)}/result`);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 409)) throw e;
    }
  }
}

/** A terminal event -> its result, or a thrown ApiError (failed, cancelled, gone). */
async function resultOf(api, ev) {
  if (ev.type === 'run_failed') {
    const err = ev.error || {};
    throw new ApiError(422, {error: {...err, message: err.message || 'the job failed'}});
  }
  if (ev.type === 'run_cancelled') {
    throw new ApiError(499, {error: {code: 'cancelled', message: 'the job was cancelled'}});
  }
  if (ev.result !== undefined && !ev.result_omitted) return ev.result;
  const full = await api.req('GET', `/api/runs/${encodeURIComponent(ev.run_id)}/result`);
  return resultOf(api, {...full, result_omitted: false});
}

/**
 * The result of a teaching call answered {status, data}: data itself for 200, else (202) the
 * job's result. opts.onStarted(runId) is called for a job; opts.pollMs (default 1500) paces
 * the fallback poll while the socket is down (every 10 s while it is up, in case an event is
 * lost: a 409 answer shows as an error in a browser's console). The result carries `run_id` (non-enumerable) when it came from a job:
 * that run holds the block's and its inputs' tensors (GET /api/runs/{id}/tensors/...).
 */
export async function awaitJob(api, events, {status, data}, opts = {}) {
  if (status !== 202 || !data || !data.run_id) return data;
  const id = data.run_id;
  if (opts.onStarted) opts.onStarted(id);
  const ctl = {over: false, timer: null, wake: null};
  const w = events ? events.wait(id) : {promise: new Promise(() => {}), stop() {}};
  try {
    const ev = await Promise.race([
      w.promise,
      pollResult(api, id, opts.pollMs ?? (events && events.connected ? 10000 : 1500), ctl).then((e) => e || new Promise(() => {})),
    ]);
    let result = await resultOf(api, ev);
    if (result && typeof result === 'object' && !Array.isArray(result)) {
      result = {...result};
      Object.defineProperty(result, 'run_id', {value: id, enumerable: false});
    }
    return result;
  } finally {
    ctl.over = true;
    clearTimeout(ctl.timer);
    if (ctl.wake) ctl.wake();
    w.stop();
  }
}

/**
 * One thing at a time on an open page: its runs, the teaching jobs and the tensor reads of a
 * job's run go in turn (a job or run makes the page busy: a read meanwhile gets 410, a job
 * 409). A read of a run that is no longer the newest job's is skipped (it resolves to null).
 * `running` is true from a page run's request to its last event (set by the page's owner).
 */
export class Gate {
  constructor() {
    this.chain = Promise.resolve();
    this.current = null;
    this.running = false;
    this.jobSinceRun = false; /* a job replaced the last page run's tensors */
    this.edited = false;      /* the page changed since the last run */
  }
  /** The page was edited: the last run's and job's tensors are gone (the server says 410). */
  stale() {
    this.current = null;
    this.edited = true;
  }

  /** Start a page run: no read of an earlier job's tensors after this. */
  run(fn) {
    this.running = true;
    this.current = null;
    this.jobSinceRun = false;
    this.edited = false;
    return this.serial(fn).catch((e) => { this.running = false; throw e; });
  }
  serial(fn) {
    const p = this.chain.then(fn, fn);
    this.chain = p.catch(() => {});
    return p;
  }
  read(runId, fn) { return this.serial(() => (runId === this.current ? fn() : null)); }
  job(fn) {
    this.jobSinceRun = true;
    return this.serial(async () => {
      const r = await fn();
      if (r && r.run_id && !this.running) this.current = r.run_id;
      return r;
    });
  }
}

const pagePath = (name) => `/api/pages/${encodeURIComponent(name)}`;

/** POST .../explain {block, index, port?, max_terms?} -> bf_session_explain's JSON. */
export async function explain(api, events, name, {block, index, port, maxTerms}, opts) {
  const body = {block, index};
  if (port) body.port = port;
  if (maxTerms) body.max_terms = maxTerms;
  return awaitJob(api, events, await api.reqFull('POST', pagePath(name) + '/explain', body),
                  opts);
}

/** POST .../gradcheck {block, eps?, tolerance?, samples?, seed?, gpu?} -> its JSON. */
export async function gradcheck(api, events, name, {block, ...options}, opts) {
  return awaitJob(api, events,
                  await api.reqFull('POST', pagePath(name) + '/gradcheck', {block, ...options}),
                  opts);
}

/** POST .../grad {block, dy?} (synchronous: no kernel runs) -> {created, page: check}. */
export async function addGradients(api, name, block, dy) {
  const body = dy ? {block, dy} : {block};
  return api.req('POST', pagePath(name) + '/grad', body);
}
