// training.test.js - model/training.js: the trained Variables of a page, conv filters as
// tiles, smoothing, the plot's data, and the Training store fed with a job's events (curves
// grow from the points, a reset clears them, edits queued while playing resolve with the
// check of their edits_applied event or throw on edits_failed).
import test from 'node:test';
import assert from 'node:assert/strict';
import {Training, filterTiles, tileNumber, optimizerText, plotData, scalarRefs, smooth,
        trainables} from '../src/model/training.js';

const page = {blocks: [
  {id: 'w', type: 'Variable'}, {id: 'b', type: 'Variable'}, {id: 'm', type: 'Variable'},
  {id: 'lr', type: 'Const'},
  {id: 'w_up', type: 'ApplyGradientDescent', inputs: {var: 'w', alpha: 'lr', delta: 'dw'}},
  {id: 'b_up', type: 'ApplyAdam', inputs: {var: 'b', m: 'm', grad: 'db:output'}},
  {id: 'x_up', type: 'Assign', inputs: {var: 'lr', value: 'w'}}, /* not a Variable: skipped */
]};

test('trainables: each updated Variable with the gradient its update applies', () => {
  assert.deepEqual(trainables(page), [
    {variable: 'w', update: 'w_up', gradient: 'dw'},
    {variable: 'b', update: 'b_up', gradient: 'db:output'}]);
  assert.deepEqual(trainables({blocks: []}), []);
  assert.deepEqual(trainables(null), []);
});

test('filterTiles: a [kh, kw, in, out] filter as one tile per output (and input) channel', () => {
  /* 2x2 kernel, 1 input, 3 outputs: value = 100*r + 10*c + o */
  const shape = [2, 2, 1, 3];
  const values = [];
  for (let r = 0; r < 2; r++) for (let c = 0; c < 2; c++) for (let o = 0; o < 3; o++) values.push(100 * r + 10 * c + o);
  const {tiles, min, max} = filterTiles(shape, values);
  assert.equal(tiles.length, 3);
  assert.deepEqual(tiles[2].values, [2, 12, 102, 112]);
  assert.deepEqual([tiles[2].rows, tiles[2].cols, tiles[2].out, tiles[2].label], [2, 2, 2, 'out 2']);
  assert.deepEqual([min, max], [0, 112]);
  /* two inputs: one tile per (out, in) */
  const two = filterTiles([1, 1, 2, 2], [1, 2, 3, 4]).tiles;
  assert.deepEqual(two.map((t) => [t.out, t.in, t.values[0]]), [[0, 0, 1], [0, 1, 3], [1, 0, 2], [1, 1, 4]]);
  /* an activation [n, h, w, c]: the first image's channels */
  const act = filterTiles([1, 2, 1, 2], [1, 2, 3, 4], {layout: 'nhwc'}).tiles;
  assert.deepEqual(act.map((t) => t.values), [[1, 3], [2, 4]]);
  assert.deepEqual(filterTiles([2, 3], [1, 2, 3, 4, 5, 6]).tiles[0].rows, 2);
  assert.deepEqual(filterTiles([], [7]).tiles[0].values, [7]);
  assert.deepEqual(filterTiles([2], [null, NaN]).min, 0);
});

test('smooth: TensorBoard debiased EMA; 0 keeps the values; nulls stay', () => {
  assert.deepEqual(smooth([1, 2, 3], 0), [1, 2, 3]);
  const s = smooth([4, 4, 4], 0.9);
  s.forEach((v) => assert.ok(Math.abs(v - 4) < 1e-12), 'a constant stays constant (debiased)');
  const t = smooth([0, 10, null], 0.5);
  assert.equal(t[0], 0);
  assert.ok(Math.abs(t[1] - (0.5 * 0 * 0.5 + 0.5 * 10) / (1 - 0.25)) < 1e-12);
  assert.equal(t[2], null);
});

test('plotData: steps, then each metric raw and smoothed; log drops non-positive values', () => {
  const series = {loss: {steps: [1, 2, 3], vals: [1, 0, 0.25]}, acc: {steps: [1, 2, 3], vals: [0.1, 0.5, 0.9]}};
  const d = plotData(series, ['loss', 'acc']);
  assert.deepEqual(d[0], [1, 2, 3]);
  assert.deepEqual(d[1], [1, 0, 0.25]);
  assert.deepEqual(d[3], [0.1, 0.5, 0.9]);
  assert.deepEqual(plotData(series, ['loss'], {log: true})[1], [1, null, 0.25]);
  assert.deepEqual(plotData({}, ['loss']), [[], [], []]);
  const long = {loss: {steps: Array.from({length: 1001}, (_, i) => i + 1),
                       vals: Array.from({length: 1001}, (_, i) => 1 / (i + 1))}};
  const thin = plotData(long, ['loss'], {maxPoints: 100});
  assert.ok(thin[0].length <= 101 && thin[0].length >= 50, `${thin[0].length} points`);
  assert.equal(thin[0][thin[0].length - 1], 1001, 'the last point is kept');
  assert.equal(thin[1][thin[1].length - 1], 1 / 1001);
});

test('scalarRefs and optimizerText', () => {
  const check = {blocks: {loss: {outputs: {output: {shape: []}}}, w: {outputs: {output: {shape: [3]}}},
                          two: {outputs: {a: {shape: [2]}, b: {shape: []}}}}};
  assert.deepEqual(scalarRefs(check), ['loss', 'two:b']);
  assert.equal(optimizerText('sgd', '0.5'), 'sgd:0.5');
  assert.equal(optimizerText('momentum', 0.1), 'momentum:0.1:0.9');
  assert.equal(optimizerText('adam', 0.001), 'adam:0.001');
  assert.equal(optimizerText('none', 1), null);
  assert.equal(optimizerText('sgd', -1), null);
});

function fakeApi(answers = {}) {
  const calls = [];
  return {
    calls,
    tensorUrl: (id, ref) => `/api/runs/${id}/tensors/${ref}`,
    req: async (method, path, body) => {
      calls.push([method, path, body]);
      if (path.endsWith('/train') && method === 'GET') return answers.status || {state: 'idle', step: 0};
      if (path.includes('/tensors/')) return {shape: [1], values: [path.length]};
      return {run_id: 'r9', page: 'p'};
    },
    edits: async (name, edits) => { calls.push(['edits', name, edits]); return answers.edits; },
  };
}

test('Training: events grow the curves, a reset clears them, other pages are not ours', async () => {
  const api = fakeApi({status: {state: 'paused', step: 2, run_id: 'r1', metrics: ['loss'],
                                history: {loss: [[1, 4], [2, 3]]}}});
  const tr = new Training(api, {notifyEveryMs: 0});
  await tr.open('p');
  assert.deepEqual(tr.getSnapshot().series.loss, {steps: [1, 2], vals: [4, 3]});
  let told = 0;
  tr.subscribe(() => told++);
  assert.equal(tr.handle({type: 'train_started', page: 'p', run_id: 'r2', mode: 'play', step: 2,
                          metrics: ['loss'], watch: []}), true);
  assert.equal(tr.getSnapshot().state, 'running');
  tr.handle({type: 'step_finished', page: 'p', run_id: 'r2', step: 5, names: ['loss'],
             points: [[3, 2], [4, 1], [5, 0.5]], steps_per_s: 100});
  /* a repeated point (a step already plotted) is not added twice */
  tr.handle({type: 'step_finished', page: 'p', run_id: 'r2', step: 6, names: ['loss'],
             points: [[5, 0.5], [6, 0.25]]});
  const s = tr.getSnapshot();
  assert.deepEqual(s.series.loss.steps, [1, 2, 3, 4, 5, 6]);
  assert.equal(s.step, 6);
  assert.ok(told >= 3);
  assert.equal(tr.handle({type: 'step_finished', page: 'other', step: 1}), false);
  assert.equal(tr.handle({type: 'run_finished', page: 'p', run_id: 'r7'}), false);
  tr.handle({type: 'train_reset', page: 'p', run_id: 'r2', step: 0});
  assert.deepEqual(tr.getSnapshot().series, {});
  tr.handle({type: 'run_cancelled', page: 'p', run_id: 'r2', step: 0});
  assert.equal(tr.getSnapshot().state, 'paused');
});

test('Training.edits: applied at once, or queued until its edits_applied / edits_failed', async () => {
  const check = {ok: true, problems: [], blocks: {}};
  let tr = new Training(fakeApi({edits: check}));
  await tr.open('p');
  assert.equal(await tr.edits('p', [{op: 'set_attr'}]), check);
  tr = new Training(fakeApi({edits: {queued: true, edit: 3}}));
  await tr.open('p');
  const pending = tr.edits('p', []);
  await new Promise((r) => setTimeout(r, 0));
  tr.handle({type: 'edits_applied', page: 'p', edit: 3, check: {ok: true, blocks: {x: 1}}});
  assert.deepEqual(await pending, {ok: true, blocks: {x: 1}});
  /* an event that comes before the 202 answer is kept for it */
  tr.handle({type: 'edits_failed', page: 'p', edit: 3, problems: [{message: 'no block "q"'}]});
  await assert.rejects(tr.edits('p', []), (e) => e.status === 422 && /no block/.test(e.message));
});

test('Training: step events tell the components at most every notifyEveryMs, the last always', async () => {
  const tr = new Training(fakeApi(), {notifyEveryMs: 40});
  await tr.open('p');
  tr.handle({type: 'train_started', page: 'p', run_id: 'r1', mode: 'play', step: 0, metrics: ['loss']});
  let told = 0;
  tr.subscribe(() => told++);
  for (let k = 1; k <= 5; k++) {
    tr.handle({type: 'step_finished', page: 'p', run_id: 'r1', step: k, names: ['loss'], points: [[k, 1 / k]]});
  }
  assert.equal(tr.getSnapshot().step, 5, 'the snapshot is always the newest');
  const atOnce = told;
  assert.ok(atOnce <= 1, `told ${told} times at once`);
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(told, atOnce + 1, 'and once more for the last');
  tr.handle({type: 'train_paused', page: 'p', run_id: 'r1', step: 5});
  assert.equal(told, atOnce + 2, 'a pause is told at once');
});

test('tileNumber: at most 6 characters, whatever the value and the scale', () => {
  const cases = [[0.4567, 1, '0.46'], [-0.893, 1, '-0.89'], [0.001, 1, '0'], [-12.4, 20, '-12'],
                 [-12345.6, 20000, '-1.2e4'], [999.4, 1000, '999'], [-0.0031, 0.004, '-3e-3'],
                 [-4e-10, 1e-9, '-4e-10'], [NaN, 1, ''], [null, 1, ''],
                 /* exact zero is "0" at every scale, the zero scale of an all-zero tensor too */
                 [0, 0, '0'], [-0, 0, '0'], [0, 1e-9, '0'], [-0, 1e-3, '0'], [0, 1, '0'],
                 [0, 5e4, '0'], [1e-12, 1e-9, '1e-12'], [-7e-13, 0.01, '-7e-13']];
  for (const [v, lim, want] of cases) {
    assert.equal(tileNumber(v, lim), want, `${v} at ±${lim}`);
    assert.ok(tileNumber(v, lim).length <= 6);
  }
});

/* an api whose edits answer when the test says so, and whose train commands answer `status` */
function slowEditsApi(status) {
  const api = fakeApi();
  const base = api.req;
  api.release = [];
  api.edits = (name, edits) => new Promise((resolve) => {
    api.calls.push(['edits', name, edits]);
    api.release.push(() => resolve({ok: true, problems: [], blocks: {}}));
  });
  api.req = async (method, path, body) => {
    if (method === 'POST' && path.endsWith('/train') && body.action === 'watch') {
      api.calls.push([method, path, body]);
      return {...status, watch: body.watch};
    }
    return base(method, path, body);
  };
  return api;
}
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));
const watchCalls = (api) => api.calls.filter((c) => c[2] && c[2].action === 'watch').map((c) => c[2].watch);

test('Training.configure: a watch of blocks just added goes after their edits are applied', async () => {
  const api = slowEditsApi({state: 'paused', run_id: 'r1', views: ['w', 'w_grad']});
  const tr = new Training(api, {notifyEveryMs: 0, viewEveryMs: 0});
  await tr.open('p');
  tr.handle({type: 'train_started', page: 'p', run_id: 'r1', mode: 'step', step: 0});
  /* the copy before the change held only w */
  tr.handle({type: 'train_paused', page: 'p', run_id: 'r1', step: 0, snapshot: 0, views: ['w']});
  /* the editor sends the redo of a backward pass, the panel watches its blocks at once */
  const sent = tr.edits('p', [{op: 'add_block', block: {id: 'w_grad'}}]);
  const configured = tr.configure({watch: ['w', 'w_grad']});
  await tick(5);
  assert.deepEqual(watchCalls(api), [], 'not before the server holds the blocks');
  assert.deepEqual(tr.getSnapshot().watch, ['w', 'w_grad'], 'the wanted watch is kept meanwhile');
  api.release.shift()();
  await sent;
  await configured;
  assert.deepEqual(watchCalls(api), [['w', 'w_grad']]);
  /* the answer's refs are readable now: both are read, the gradient too (not "after the
   * next step") */
  await tick(5);
  const reads = api.calls.filter((c) => c[1].includes('/tensors/')).map((c) => c[1]);
  assert.ok(reads.includes('/api/runs/r1/tensors/w_grad'), `read ${reads}`);
  assert.deepEqual(Object.keys(tr.getSnapshot().views).sort(), ['w', 'w_grad']);
});

test('Training.configure: one after another, the last wins; views of unwatched refs go', async () => {
  const api = slowEditsApi({state: 'paused', run_id: 'r1', views: ['w', 'w_grad']});
  const tr = new Training(api, {notifyEveryMs: 0, viewEveryMs: 0});
  await tr.open('p');
  tr.handle({type: 'train_started', page: 'p', run_id: 'r1', mode: 'step', step: 0});
  await tr.configure({watch: ['w', 'w_grad']});
  await tick(5);
  assert.deepEqual(Object.keys(tr.getSnapshot().views).sort(), ['w', 'w_grad']);
  /* undo (the blocks go), then redo while the undo's edit is still out */
  tr.edits('p', [{op: 'remove_block', id: 'w_grad'}]);
  const a = tr.configure({watch: []});
  assert.deepEqual(tr.getSnapshot().views, {}, 'tiles of blocks that are gone go at once');
  tr.edits('p', [{op: 'add_block', block: {id: 'w_grad'}}]);
  const b = tr.configure({watch: ['w', 'w_grad']});
  await tick(5);
  assert.deepEqual(watchCalls(api).length, 1, 'both wait for the edits');
  api.release.shift()();
  api.release.shift()();
  await Promise.all([a, b]);
  assert.deepEqual(watchCalls(api).slice(1), [[], ['w', 'w_grad']], 'in the order asked');
});

test('Training.configure: an edits answer that never comes holds the watch back only editWaitMs', {timeout: 3000}, async () => {
  const api = slowEditsApi({state: 'paused', run_id: 'r1'});
  const tr = new Training(api, {notifyEveryMs: 0, editWaitMs: 30});
  await tr.open('p');
  tr.edits('p', [{op: 'set_attr'}]);
  await tr.configure({watch: ['w']});
  assert.deepEqual(watchCalls(api), [['w']]);
});

test('Training views: a pause reads at once, not after the gap; a read does not bring back an unwatched ref', async () => {
  let hold = null;
  const api = fakeApi();
  const base = api.req;
  api.req = async (method, path, body) => {
    if (path.includes('/tensors/') && hold) await hold;
    return base(method, path, body);
  };
  const tr = new Training(api, {notifyEveryMs: 0, viewEveryMs: 60000});
  await tr.open('p');
  tr.handle({type: 'train_started', page: 'p', run_id: 'r1', mode: 'play', step: 0,
             watch: ['w', 'g']});
  const reads = () => api.calls.filter((c) => c[1].includes('/tensors/')).length;
  tr.handle({type: 'step_finished', page: 'p', run_id: 'r1', step: 1, names: [], snapshot: 1,
             views: ['w', 'g']});
  await tick(5);
  assert.equal(reads(), 2, 'the first copy is read');
  tr.handle({type: 'step_finished', page: 'p', run_id: 'r1', step: 2, names: [], snapshot: 2,
             views: ['w', 'g']});
  await tick(5);
  assert.equal(reads(), 2, 'the next copy waits out the gap (60 s here)');
  tr.handle({type: 'train_paused', page: 'p', run_id: 'r1', step: 3, snapshot: 3, views: ['w', 'g']});
  await tick(5);
  assert.equal(reads(), 4, 'the pause reads the last step at once');
  /* a read in flight when the watch drops "g": its answer for "g" is not kept */
  let release;
  hold = new Promise((r) => { release = r; });
  tr.handle({type: 'train_paused', page: 'p', run_id: 'r1', step: 3, snapshot: 3, views: ['w', 'g']});
  await tick(5);
  tr.configure({watch: ['w']});
  release();
  await tick(5);
  assert.deepEqual(Object.keys(tr.getSnapshot().views), ['w']);
});
