// Unit tests of src/model/history.js (undo/redo) and src/model/batch.js (edit batching).
import test from 'node:test';
import assert from 'node:assert/strict';
import {History} from '../src/model/history.js';
import {EditQueue, mergeEdits} from '../src/model/batch.js';

test('undo and redo walk the steps; a new step drops the redo list', () => {
  const h = new History();
  h.push('a', 'b', null, 0);
  h.push('b', 'c', null, 10);
  assert.deepEqual(h.undo(), {before: 'b', after: 'c', key: null, at: 10});
  assert.equal(h.undo().before, 'a');
  assert.equal(h.undo(), null);
  assert.equal(h.redo().after, 'b');
  h.push('b', 'z', null, 20);
  assert.equal(h.canRedo(), false);
});

test('repeated gestures with one key merge into one step', () => {
  const h = new History({mergeMs: 500});
  h.push('p0', 'p1', 'move:x', 0);
  h.push('p1', 'p2', 'move:x', 100);
  h.push('p2', 'p3', 'move:x', 200);
  h.push('p3', 'p4', 'move:x', 5000); /* later: a new step */
  assert.equal(h.done.length, 2);
  assert.deepEqual([h.done[0].before, h.done[0].after], ['p0', 'p3']);
});

test('mergeEdits keeps the last set_ui/set_attr per target, never across structure', () => {
  const e = mergeEdits([
    {op: 'set_ui', block: 'a', ui: {x: 1}},
    {op: 'set_attr', block: 'a', attr: 's', value: [1]},
    {op: 'set_ui', block: 'a', ui: {x: 2}},
    {op: 'set_attr', block: 'a', attr: 's', value: [2]},
    {op: 'remove_block', id: 'b'},
    {op: 'set_ui', block: 'a', ui: {x: 3}},
  ]);
  assert.deepEqual(e, [
    {op: 'set_ui', block: 'a', ui: {x: 2}},
    {op: 'set_attr', block: 'a', attr: 's', value: [2]},
    {op: 'remove_block', id: 'b'},
    {op: 'set_ui', block: 'a', ui: {x: 3}},
  ]);
});

test('the queue sends one batch at a time, and edits made meanwhile go together', async () => {
  const sent = [];
  let release;
  const q = new EditQueue((edits) => {
    sent.push(edits);
    return new Promise((r) => { release = () => r({ok: true, n: sent.length}); });
  });
  const first = q.enqueue([{op: 'set_ui', block: 'a', ui: {x: 1}}]);
  await Promise.resolve();
  await Promise.resolve();
  const second = q.enqueue([{op: 'set_ui', block: 'a', ui: {x: 2}}]);
  const third = q.enqueue([{op: 'set_ui', block: 'a', ui: {x: 3}}]);
  assert.equal(sent.length, 1);
  release();
  assert.deepEqual(await first, {ok: true, n: 1});
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(sent.length, 2);
  assert.deepEqual(sent[1], [{op: 'set_ui', block: 'a', ui: {x: 3}}]);
  release();
  assert.deepEqual(await second, {ok: true, n: 2});
  assert.deepEqual(await third, {ok: true, n: 2});
  await q.idle();
});

test('a refused batch rejects the edits that were in it', async () => {
  const q = new EditQueue(async () => { throw new Error('422'); });
  await assert.rejects(q.enqueue([{op: 'remove_block', id: 'x'}]), /422/);
});
