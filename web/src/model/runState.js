/*
 * runState.js - what the server's run events do to the editor's run state, as pure functions
 * (unit-tested in test/run_state.test.js).
 *
 * The run state is null (never run) or {id, state, status: {block: {...}}, ms?, error?,
 * problems?, upTo?}: `state` is running, finished, failed, cancelled or idle (a teaching job
 * lit blocks up without a page run), and `status` holds each block's last event (blockState).
 */

/** A block event's state for the canvas (started, reused, done with device, kernel and ms,
 * failed or cancelled); null for an event that is not about one block. */
export function blockState(ev) {
  switch (ev.type) {
    case 'block_cached': return {state: 'cached'};
    case 'block_started': return {state: 'running'};
    case 'block_finished':
      return {state: 'finished', device: ev.device, kernel: ev.kernel, ms: ev.ms,
              outputs: ev.outputs};
    case 'block_failed':
      /* the block a Cancel stopped did not fail: it was cancelled */
      return ev.code === 'ECANCELED' ? {state: 'cancelled'}
        : {state: 'failed', code: ev.code, message: ev.message};
    case 'block_skipped':
      return {state: 'skipped', message: ev.message || ev.reason || ''};
    default: return null;
  }
}

/**
 * The run state after event `ev`, for the page `docName` open in this tab. Events of other
 * pages leave it as it is; a run's first event may arrive before the answer of the run
 * request, so an event of an unknown run of this page starts that run. Teaching jobs (their
 * events name a `kind`) only light up the blocks they computed.
 */
export function reduceRun(run, ev, docName) {
  const mine = !!docName && ev.page === docName;
  const st = blockState(ev);
  if (ev.kind) {
    if (!st || !mine) return run;
    const r = run || {id: null, state: 'idle', status: {}};
    return {...r, status: {...(r.status || {}), [ev.block]: st}};
  }
  let r = run;
  if (!r || ev.run_id !== r.id) {
    if (!mine) return run;
    r = {id: ev.run_id, state: 'running', status: {}};
  }
  if (st) return {...r, status: {...r.status, [ev.block]: st}};
  switch (ev.type) {
    case 'run_started': return r === run ? r : {...r};
    case 'run_finished':
      return {...r, state: 'finished', ms: ev.ms, skipped: ev.skipped || r.skipped};
    case 'run_failed':
      return {...r, state: 'failed', error: ev.error, problems: ev.problems};
    case 'run_cancelled': {
      const status = {...r.status};
      for (const [id, s] of Object.entries(status)) {
        if (s.state === 'running') status[id] = {state: 'cancelled'};
      }
      return {...r, state: 'cancelled', status};
    }
    default: return r;
  }
}

/**
 * reduceRun over a batch of events (those that arrived within one animation frame), as one
 * change: the status object is copied once for the batch, not once per event (a 500-block
 * run sends about a thousand events; copying 500 entries for each was most of its cost).
 * Equal to reducing the events one by one.
 */
export function reduceRunEvents(run, events, docName) {
  let r = run;
  let owned = null; /* the status object this batch made, written in place */
  for (const ev of events) {
    const st = blockState(ev);
    const mine = !!docName && ev.page === docName;
    if (st && mine && r && (ev.kind || ev.run_id === r.id)) {
      if (!owned || r.status !== owned) {
        owned = {...(r.status || {})};
        r = {...r, status: owned};
      }
      owned[ev.block] = st;
      continue;
    }
    const next = reduceRun(r, ev, docName);
    if (next !== r && next && r && next.status !== r.status) owned = null;
    r = next;
  }
  return r;
}

/** The message a run's terminal event shows ({kind, text}), or null. */
export function runMessage(ev) {
  if (ev.kind) return null;
  if (ev.type === 'run_finished') {
    return {kind: 'ok', text: `Run finished in ${Number(ev.ms || 0).toFixed(2)} ms.`};
  }
  if (ev.type === 'run_failed') {
    return {kind: 'error', text: `Run failed: ${(ev.error || {}).message || ''}`};
  }
  if (ev.type === 'run_cancelled') return {kind: 'info', text: 'Run cancelled.'};
  return null;
}

/**
 * The problems to list: those of the check, then those of the last run (a failed block, the
 * run's own problems and error), each once.
 */
export function listProblems(check, run) {
  const out = [...((check && check.problems) || [])];
  /* outputs a partial run left out, and why */
  for (const k of (run && !run.stale && run.skipped) || []) {
    out.push({severity: 'warning', code: 'skipped', block: k.block,
              message: `output ${k.output} was not computed: ${k.reason}`});
  }
  if (run && run.state === 'failed' && !run.stale) {
    for (const [b, s] of Object.entries(run.status || {})) {
      if (s.state === 'failed') {
        out.push({severity: 'error', code: s.code, block: b, message: `run: ${s.message}`});
      }
    }
    for (const p of run.problems || []) {
      if (!out.some((q) => q.message === p.message && q.block === p.block)) out.push(p);
    }
    if (run.error && !out.some((q) => q.message === run.error.message)) {
      out.push({...run.error, severity: 'error', message: `run: ${run.error.message}`});
    }
  }
  return out;
}

/** The blocks an edit changes directly (their results are no longer those of the last run). */
function touched(e) {
  switch (e.op) {
    case 'add_block': case 'remove_block': return [e.id];
    case 'rename_block': return [e.id, e.new_id];
    case 'feed': return [e.block]; /* not a server edit: a new feed of a Placeholder */
    case 'connect': case 'disconnect': case 'set_attr': case 'set_device': return [e.block];
    default: return []; /* set_ui, set_outputs, set_name, set_description change no result */
  }
}

/**
 * The run state after `edits` turned the page into `page`: the blocks they touch and every
 * block downstream lose their last status (they would compute again), the others keep it; a
 * failed run's error and problems are marked stale (the Problems list drops them).
 */
export function invalidateRun(run, edits, page) {
  if (!run) return run;
  const seeds = new Set(edits.flatMap(touched));
  if (!seeds.size) return run;
  /* downstream closure over the edited page's wires */
  const users = new Map();
  for (const b of page.blocks || []) {
    for (const src of Object.values(b.inputs || {})) {
      const from = String(src).split(':')[0];
      if (!users.has(from)) users.set(from, []);
      users.get(from).push(b.id);
    }
  }
  const gone = new Set();
  const stack = [...seeds];
  while (stack.length) {
    const id = stack.pop();
    if (gone.has(id)) continue;
    gone.add(id);
    for (const u of users.get(id) || []) stack.push(u);
  }
  const status = {};
  let dropped = false;
  for (const [id, st] of Object.entries(run.status || {})) {
    if (gone.has(id)) dropped = true;
    else status[id] = st;
  }
  if (!dropped && run.stale) return run;
  return {...run, status: dropped ? status : run.status, stale: true};
}
