/*
 * runPlan.js - partial runs. "Run" computes the page's outputs; when some outputs hang below a
 * block with a problem (the check's errors, or a Placeholder the editor has no feed for), the
 * others still run: the run fetches only the outputs whose whole upstream is fine, and the
 * skipped ones are listed with the reason. The server runs only what the fetches need
 * (bf_session_run: only the problems of needed blocks stop a run).
 */
import {parseSource} from './page.js';

/**
 * {fetch, skipped}: `fetch` null (run every output as the page says) when nothing is
 * skipped or everything would be, else the outputs to run; `skipped` [{output, block, reason}].
 * `fed(id)` says whether the editor holds a feed for a feedable block.
 */
export function planRun(page, index, check, fed = () => false) {
  const outputs = page.outputs || [];
  const byId = new Map((page.blocks || []).map((b) => [b.id, b]));
  const bad = new Map();
  for (const p of (check && check.problems) || []) {
    if (p.block && p.severity !== 'warning' && !bad.has(p.block)) bad.set(p.block, p.message);
  }
  for (const b of page.blocks || []) {
    const entry = index && index.byType.get(b.type);
    if (entry && entry.feedable && !fed(b.id) && !bad.has(b.id)) {
      bad.set(b.id, `${b.type} "${b.id}" is not fed (select it to feed it)`);
    }
  }
  /* the first bad block upstream of each block (memoised walk over the inputs) */
  const memo = new Map();
  const culprit = (id, seen = new Set()) => {
    if (memo.has(id)) return memo.get(id);
    if (seen.has(id)) return null;
    seen.add(id);
    let found = bad.has(id) ? id : null;
    for (const src of Object.values((byId.get(id) || {}).inputs || {})) {
      if (found) break;
      found = culprit(parseSource(src).block, seen);
    }
    memo.set(id, found);
    return found;
  };
  const skipped = [];
  const run = [];
  for (const o of outputs) {
    const c = culprit(parseSource(o).block);
    if (c) skipped.push({output: o, block: c, reason: bad.get(c)});
    else run.push(o);
  }
  if (!skipped.length || !run.length) return {fetch: null, skipped: run.length ? [] : skipped};
  return {fetch: run, skipped};
}
