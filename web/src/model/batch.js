/*
 * batch.js - edits go to the server as batches (POST /api/pages/NAME/edits), one request in
 * flight per page, so that re-runs stay incremental and the server sees the same order the
 * person made. Edits made while a batch is in flight wait and go together in the next one;
 * within a batch, repeated set_ui of one block and repeated set_attr of one attribute keep
 * only the last (a drag or a burst of typing is one edit on the wire).
 */

/** Merge a list of edits: later set_ui / set_attr / set_device of the same target win. */
export function mergeEdits(edits) {
  const keyOf = (e) => {
    if (e.op === 'set_ui') return `ui:${e.block || ''}`;
    if (e.op === 'set_attr') return `attr:${e.block}:${e.attr}`;
    if (e.op === 'set_device') return `dev:${e.block}`;
    return null;
  };
  /* a structural edit (add, remove, rename, connect) is a barrier: nothing moves across it */
  const out = [];
  let seen = new Map();
  for (const e of edits) {
    const k = keyOf(e);
    if (k === null) {
      out.push(e);
      seen = new Map();
      continue;
    }
    if (seen.has(k)) out[seen.get(k)] = null;
    seen.set(k, out.length);
    out.push(e);
  }
  return out.filter(Boolean);
}

/**
 * A per-page queue. `send(edits)` returns a promise of the server's answer. `enqueue` returns
 * a promise that settles with the answer of the batch that carried these edits.
 */
export class EditQueue {
  constructor(send) {
    this.send = send;
    this.pending = [];
    this.waiters = [];
    this.inflight = null;
  }

  enqueue(edits) {
    this.pending.push(...edits);
    const p = new Promise((resolve, reject) => this.waiters.push({resolve, reject}));
    if (!this.inflight) this.flushSoon();
    return p;
  }

  flushSoon() {
    this.inflight = Promise.resolve().then(() => this.flush());
  }

  async flush() {
    const edits = mergeEdits(this.pending);
    const waiters = this.waiters;
    this.pending = [];
    this.waiters = [];
    try {
      const answer = edits.length ? await this.send(edits) : null;
      waiters.forEach((w) => w.resolve(answer));
    } catch (err) {
      waiters.forEach((w) => w.reject(err));
    }
    if (this.pending.length) this.flushSoon();
    else this.inflight = null;
  }

  /** Resolves when nothing is pending or in flight. */
  async idle() {
    while (this.inflight) await this.inflight;
  }
}
