// feeds_plan.test.js - .npy writing and reading for Placeholder feeds (src/model/npy.js),
// partial runs (src/model/runPlan.js) and the placement of added gradient blocks
// (src/model/gradients.js).
import test from 'node:test';
import assert from 'node:assert/strict';
import {encodeNpy, readNpyHeader, shapeFits, toBase64} from '../src/model/npy.js';
import {planRun} from '../src/model/runPlan.js';
import {placeGradients} from '../src/model/gradients.js';
import {applyEdits} from '../src/model/page.js';

test('a grid written as .npy reads back (header, values, 64-byte alignment)', () => {
  const b = encodeNpy('float32', [2, 3], [1, 2, 3, 4, 5, 6.5]);
  assert.deepEqual(readNpyHeader(b), {dtype: 'float32', shape: [2, 3]});
  const hl = b[8] | (b[9] << 8);
  assert.equal((10 + hl) % 64, 0);
  const body = new DataView(b.buffer, 10 + hl);
  assert.equal(body.getFloat32(5 * 4, true), 6.5);
  assert.deepEqual(readNpyHeader(encodeNpy('int32', [4], [1, 2, 3, 4])), {dtype: 'int32', shape: [4]});
  assert.deepEqual(readNpyHeader(encodeNpy('float64', [3], [1, 2, 3])).shape, [3],
                   'a 1-D shape is written "(3,)"');
  assert.throws(() => readNpyHeader(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])), /not a \.npy/);
  assert.throws(() => encodeNpy('float32', [2], [1]), /1 values/);
  assert.equal(toBase64(new Uint8Array([0x93, 0x4e])), 'k04=');
  assert.ok(shapeFits([-1, 3], [7, 3]) && !shapeFits([2, 3], [3, 2]) && shapeFits(null, [1]));
});

const index = {byType: new Map([
  ['Const', {inputs: [], outputs: [{name: 'output'}]}],
  ['Placeholder', {inputs: [], outputs: [{name: 'output'}], feedable: true}],
  ['Identity', {inputs: [{name: 'input'}], outputs: [{name: 'output'}]}],
])};
const page = {blocks: [
  {id: 'k', type: 'Const'}, {id: 'ph', type: 'Placeholder'}, {id: 'bad', type: 'Identity', inputs: {input: 'k'}},
  {id: 'o1', type: 'Identity', inputs: {input: 'k'}}, {id: 'o2', type: 'Identity', inputs: {input: 'bad'}},
  {id: 'o3', type: 'Identity', inputs: {input: 'ph'}},
], outputs: ['o1', 'o2', 'o3']};

test('a partial run fetches the outputs whose upstream is fine, and says why it skips', () => {
  const check = {problems: [{severity: 'error', block: 'bad', message: 'boom'},
                            {severity: 'warning', block: 'o1', message: 'meh'}]};
  const p = planRun(page, index, check);
  assert.deepEqual(p.fetch, ['o1']);
  assert.deepEqual(p.skipped.map((k) => [k.output, k.block]), [['o2', 'bad'], ['o3', 'ph']]);
  assert.match(p.skipped[1].reason, /not fed/);
  const fed = planRun(page, index, check, (id) => id === 'ph');
  assert.deepEqual(fed.fetch, ['o1', 'o3']);
  assert.deepEqual(planRun(page, index, {problems: []}, () => true), {fetch: null, skipped: []},
                   'nothing to skip: the page\'s own outputs');
  const none = planRun({...page, outputs: ['o2']}, index, check);
  assert.equal(none.fetch, null, 'everything skipped: the run is left to fail with its reasons');
});

test('gradient blocks go right of the forward block, clear of all others, and become outputs', () => {
  const p = {blocks: [
    {id: 'x', type: 'Const', ui: {x: 0, y: 0}}, {id: 'conv', type: 'Conv2D', ui: {x: 380, y: 100}},
    {id: 'other', type: 'Const', ui: {x: 760, y: 100}},
    {id: 'dy', type: 'Placeholder', ui: {x: 640, y: 100}}, {id: 'fs', type: 'Const', ui: {x: 640, y: 240}},
    {id: 'dw', type: 'Conv2DBackpropFilter', ui: {x: 900, y: 240}},
  ], outputs: ['conv']};
  const edits = placeGradients(p, 'conv', {dy: 'dy', gradients: {filter: 'dw'}, blocks: ['dy', 'fs', 'dw']});
  const q = applyEdits(p, edits);
  assert.deepEqual(q.outputs, ['conv', 'dw']);
  const box = (id) => q.blocks.find((b) => b.id === id).ui;
  for (const id of ['dy', 'fs', 'dw']) {
    assert.ok(box(id).x >= 380 + 340, `${id} right of conv`);
    for (const o of ['x', 'conv', 'other']) {
      const a = box(id), b = box(o);
      assert.ok(a.x + 340 <= b.x || b.x + 340 <= a.x || a.y + 140 <= b.y || b.y + 140 <= a.y,
                `${id} clear of ${o}`);
    }
  }
});
