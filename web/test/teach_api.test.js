// Unit tests of src/api/teach.js: one client function per teaching call, for both answers the
// server may give (200 with the result; 202 {run_id} then the run's event or its result).
import test from 'node:test';
import assert from 'node:assert/strict';
import {ApiError} from '../src/api.js';
import {JobEvents, addGradients, awaitJob, explain, gradcheck} from '../src/api/teach.js';

const RESULT = {block: 'same', type: 'Conv2D', index: [0, 4, 4, 0], value: 25,
                terms: [{a: {tensor: 'input', index: [0, 4, 4, 0], value: 25},
                         b: {tensor: 'filter', index: [0, 0, 0, 0], value: 1}}], sum: 25};

/* A fake Api: `post` answers POSTs ({status, data}); GETs of a result go through `results`
 * (a list of answers, one per call: an object, or an ApiError to throw). */
function fakeApi({post, results = []}) {
  const calls = [];
  return {
    calls,
    async reqFull(method, path, body) { calls.push([method, path, body]); return post; },
    async req(method, path) {
      calls.push([method, path]);
      const r = results.shift();
      if (r === undefined) throw new ApiError(409, {error: {code: 'busy'}});
      if (r instanceof Error) throw r;
      return r;
    },
  };
}

test('200: the answer is the result (a synchronous explain)', async () => {
  const api = fakeApi({post: {status: 200, data: RESULT}});
  const got = await explain(api, new JobEvents(), 'p', {block: 'same', index: [0, 4, 4, 0]});
  assert.deepEqual(got, RESULT);
  assert.deepEqual(api.calls, [['POST', '/api/pages/p/explain', {block: 'same',
                                                                 index: [0, 4, 4, 0]}]]);
});

test('202: the result comes with the run\'s explain_finished event', async () => {
  const api = fakeApi({post: {status: 202, data: {run_id: 'r7', kind: 'explain'}}});
  const events = new JobEvents();
  let started = null;
  const p = explain(api, events, 'my page', {block: 'same', index: [0, 4, 4, 0], maxTerms: 50},
                    {pollMs: 60000, onStarted: (id) => { started = id; }});
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(started, 'r7');
  events.push({type: 'run_started', run_id: 'r7', kind: 'explain'});
  events.push({type: 'explain_finished', run_id: 'r8', result: {}}); /* another run */
  events.push({type: 'explain_finished', run_id: 'r7', kind: 'explain', result: RESULT});
  const got = await p;
  assert.deepEqual(got, RESULT);
  assert.equal(got.run_id, 'r7', 'the run that holds the tensors');
  assert.deepEqual(api.calls[0], ['POST', '/api/pages/my%20page/explain',
                                  {block: 'same', index: [0, 4, 4, 0], max_terms: 50}]);
});

test('202: an event that arrived before the answer is not lost', async () => {
  const events = new JobEvents();
  events.push({type: 'gradcheck_finished', run_id: 'r3', result: {pass: true}});
  const api = fakeApi({post: {status: 202, data: {run_id: 'r3'}}});
  assert.deepEqual(await gradcheck(api, events, 'p', {block: 'dw'}, {pollMs: 60000}),
                   {pass: true});
});

test('202: an event without its result is completed from /api/runs/{id}/result', async () => {
  const api = fakeApi({post: {status: 202, data: {run_id: 'r4'}},
                       results: [{type: 'explain_finished', run_id: 'r4', result: RESULT}]});
  const events = new JobEvents();
  const p = awaitJob(api, events, {status: 202, data: {run_id: 'r4'}}, {pollMs: 60000});
  events.push({type: 'explain_finished', run_id: 'r4', result_omitted: true});
  assert.deepEqual(await p, RESULT);
  assert.deepEqual(api.calls, [['GET', '/api/runs/r4/result']]);
});

test('202 and no event (socket down): the result endpoint is polled past 409', async () => {
  const api = fakeApi({post: {status: 202, data: {run_id: 'r5'}},
                       results: [undefined, undefined,
                                 {type: 'gradcheck_finished', run_id: 'r5',
                                  result: {pass: false}}]});
  const got = await gradcheck(api, new JobEvents(), 'p', {block: 'dw', samples: 10},
                              {pollMs: 1});
  assert.deepEqual(got, {pass: false});
  assert.equal(api.calls.filter((c) => c[0] === 'GET').length, 3);
  assert.deepEqual(api.calls[0][2], {block: 'dw', samples: 10});
});

test('a failed or cancelled job throws its error', async () => {
  const events = new JobEvents();
  events.push({type: 'run_failed', run_id: 'r9',
               error: {code: 'bad_index', message: 'index 9 of axis 1 is outside [0, 5)'}});
  await assert.rejects(awaitJob(fakeApi({}), events, {status: 202, data: {run_id: 'r9'}},
                                {pollMs: 60000}),
                       (e) => e instanceof ApiError && e.code === 'bad_index' &&
                              /outside/.test(e.message));
  events.push({type: 'run_cancelled', run_id: 'r10'});
  await assert.rejects(awaitJob(fakeApi({}), events, {status: 202, data: {run_id: 'r10'}},
                                {pollMs: 60000}), /cancelled/);
  const gone = fakeApi({results: [new ApiError(410, {error: {code: 'gone', message: 'gone'}})]});
  await assert.rejects(awaitJob(gone, new JobEvents(), {status: 202, data: {run_id: 'r11'}},
                                {pollMs: 1}), (e) => e.status === 410);
});

test('addGradients is one synchronous POST', async () => {
  const api = {req: async (m, p, b) => ({m, p, b})};
  assert.deepEqual(await addGradients(api, 'p', 'conv'),
                   {m: 'POST', p: '/api/pages/p/grad', b: {block: 'conv'}});
  assert.deepEqual((await addGradients(api, 'p', 'conv', 'g')).b, {block: 'conv', dy: 'g'});
});

test('JobEvents keeps the last few terminal events only', () => {
  const ev = new JobEvents(2);
  assert.equal(ev.push({type: 'block_started', run_id: 'a'}), false);
  for (const id of ['a', 'b', 'c']) ev.push({type: 'run_finished', run_id: id});
  assert.deepEqual([...ev.done.keys()], ['b', 'c']);
});
