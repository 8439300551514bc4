// run_state.test.js - the run-event reducer (src/model/runState.js): what each server event
// does to the editor's run state, and the problems listed after a failed run.
import test from 'node:test';
import assert from 'node:assert/strict';
import {blockState, listProblems, reduceRun, reduceRunEvents, runMessage}
  from '../src/model/runState.js';

const ev = (type, extra = {}) => ({type, page: 'p', run_id: 'r1', ...extra});

test('a run: started, blocks cached, running, finished; then the run finishes', () => {
  const evs = [ev('run_started'), ev('block_cached', {block: 'a'}),
               ev('block_started', {block: 'b'}),
               ev('block_finished', {block: 'b', device: 'cpu', kernel: 'k', ms: 0.5}),
               ev('run_finished', {ms: 3})];
  const r = reduceRunEvents(null, evs, 'p');
  assert.equal(r.id, 'r1');
  assert.equal(r.state, 'finished');
  assert.equal(r.ms, 3);
  assert.deepEqual(r.status.a, {state: 'cached'});
  assert.equal(r.status.b.state, 'finished');
  assert.equal(r.status.b.ms, 0.5);
});

test('events of another page leave the state alone; an unknown run of this page starts it', () => {
  const before = {id: 'r0', state: 'finished', status: {a: {state: 'finished'}}};
  assert.equal(reduceRun(before, {...ev('block_started', {block: 'x'}), page: 'q'}, 'p'), before);
  const r = reduceRun(before, ev('block_started', {block: 'x'}), 'p');
  assert.equal(r.id, 'r1');
  assert.equal(r.state, 'running');
  assert.deepEqual(Object.keys(r.status), ['x'], 'the previous run\'s statuses are gone');
  assert.equal(reduceRun(null, ev('run_started'), null), null, 'no page open: nothing');
});

test('the reducer never mutates the state it is given', () => {
  const before = Object.freeze({id: 'r1', state: 'running',
                                status: Object.freeze({a: Object.freeze({state: 'running'})})});
  const r = reduceRun(before, ev('run_cancelled'), 'p');
  assert.equal(r.state, 'cancelled');
  assert.deepEqual(r.status.a, {state: 'cancelled'}, 'a running block is cancelled with it');
  assert.equal(before.status.a.state, 'running');
});

test('a failed block, a cancelled block (ECANCELED), and a failed run with its problems', () => {
  assert.deepEqual(blockState(ev('block_failed', {block: 'a', code: 'ECANCELED'})),
                   {state: 'cancelled'});
  const r = reduceRunEvents(null, [
    ev('block_failed', {block: 'a', code: 'EINVAL', message: 'bad'}),
    ev('run_failed', {error: {code: 'EINVAL', message: 'block a failed'},
                      problems: [{severity: 'error', block: 'b', message: 'x'}]}),
  ], 'p');
  assert.equal(r.state, 'failed');
  const probs = listProblems({problems: [{severity: 'warning', block: 'c', message: 'w'}]}, r);
  assert.deepEqual(probs.map((p) => p.block || ''), ['c', 'a', 'b', '']);
  assert.match(probs[1].message, /^run: bad/);
  assert.deepEqual(listProblems(null, {...r, state: 'finished'}), [],
                   'a finished run adds no problems');
});

test('teaching jobs light up blocks without starting a page run', () => {
  const r = reduceRun(null, {type: 'block_finished', kind: 'explain', page: 'p', run_id: 'j1',
                             block: 'w', device: 'cpu', ms: 1}, 'p');
  assert.equal(r.id, null);
  assert.equal(r.state, 'idle');
  assert.equal(r.status.w.state, 'finished');
  assert.equal(reduceRun(null, {type: 'explain_finished', kind: 'explain', page: 'p',
                                run_id: 'j1'}, 'p'), null);
});

test('messages of terminal events', () => {
  assert.match(runMessage(ev('run_finished', {ms: 1.234})).text, /finished in 1\.23 ms/);
  assert.equal(runMessage(ev('run_failed', {error: {message: 'x'}})).kind, 'error');
  assert.equal(runMessage(ev('block_started')), null);
  assert.equal(runMessage({...ev('run_finished'), kind: 'explain'}), null);
});

test('an edit drops the statuses of the blocks it touches and of those downstream', async () => {
  const {invalidateRun} = await import('../src/model/runState.js');
  const page = {blocks: [{id: 'a'}, {id: 'b'}, {id: 's', inputs: {x: 'a', y: 'b'}},
                         {id: 'o', inputs: {input: 's:z'}}]};
  const run = {id: 'r', state: 'failed', error: {message: 'x'},
               status: {a: {state: 'finished'}, b: {state: 'finished'}, s: {state: 'finished'},
                        o: {state: 'failed'}}};
  const r = invalidateRun(run, [{op: 'set_attr', block: 'a', attr: 'value', value: 5}], page);
  assert.deepEqual(Object.keys(r.status), ['b']);
  assert.equal(r.stale, true);
  assert.deepEqual(listProblems(null, r), [], 'a stale failed run lists no problems');
  assert.equal(invalidateRun(run, [{op: 'set_ui', block: 'a', ui: {x: 1}}], page), run,
               'a move changes no result');
  assert.equal(invalidateRun(null, [{op: 'remove_block', id: 'a'}], page), null);
});

test('reduceRunEvents: a batch equals the events one by one, with one status copy', () => {
  const evs = [{type: 'run_started', run_id: 'r9', page: 'p'}];
  for (let i = 0; i < 50; i++) {
    evs.push({type: 'block_started', run_id: 'r9', page: 'p', block: `b${i}`});
    evs.push({type: i % 7 ? 'block_finished' : 'block_cached', run_id: 'r9', page: 'p',
              block: `b${i}`, ms: i});
  }
  evs.push({type: 'block_started', run_id: 'other', page: 'q', block: 'x'});
  evs.push({type: 'block_finished', kind: 'explain', page: 'p', run_id: 'j', block: 'b3', ms: 1});
  evs.push({type: 'run_finished', run_id: 'r9', page: 'p', ms: 3});
  const one = evs.reduce((r, ev) => reduceRun(r, ev, 'p'), null);
  for (const cut of [1, 7, 40, evs.length]) { /* the same in batches of any size */
    let r = null;
    for (let i = 0; i < evs.length; i += cut) r = reduceRunEvents(r, evs.slice(i, i + cut), 'p');
    assert.deepEqual(r, one, `batches of ${cut}`);
  }
  /* the state before a batch is never written */
  const before = reduceRunEvents(null, evs.slice(0, 5), 'p');
  const snap = JSON.stringify(before);
  reduceRunEvents(before, evs.slice(5), 'p');
  assert.equal(JSON.stringify(before), snap);
});
