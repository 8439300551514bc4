// Unit tests of src/model/tensor.js (heatmap slices, colours) and src/model/wires.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {cellIndex, colorScale, defaultLayout, fmt, sliceSpec} from '../src/model/tensor.js';
import {indexCatalog} from '../src/model/catalog.js';
import {checkWire, labelWidth, overlapsNode, wireCandidates} from '../src/model/wires.js';

const read = (p) => JSON.parse(readFileSync(fileURLToPath(new URL(p, import.meta.url)), 'utf8'));

test('NHWC and NCHW slices show height x width at the picked batch and channel', () => {
  const nhwc = sliceSpec([2, 5, 6, 3], 'NHWC', {0: 1, 3: 2});
  assert.equal(nhwc.slice, '1,:,:,2');
  assert.deepEqual([nhwc.height, nhwc.width], [5, 6]);
  assert.deepEqual(nhwc.pickers.map((p) => [p.name, p.size, p.index]),
                   [['batch', 2, 1], ['channel', 3, 2]]);
  assert.deepEqual(cellIndex([2, 5, 6, 3], nhwc, 4, 5), [1, 4, 5, 2]);
  const nchw = sliceSpec([2, 3, 5, 6], 'NCHW', {0: 1, 1: 2});
  assert.equal(nchw.slice, '1,2,:,:');
  assert.deepEqual([nchw.height, nchw.width], [5, 6]);
  assert.deepEqual(cellIndex([2, 3, 5, 6], nchw, 4, 5), [1, 2, 4, 5]);
});

test('filters are HWIO; other ranks show their last two axes', () => {
  const f = sliceSpec([3, 3, 2, 4], 'HWIO', {2: 1, 3: 9});
  assert.equal(f.slice, ':,:,1,3'); /* the index is clamped */
  assert.equal(sliceSpec([4, 7], 'NHWC').slice, ':,:');
  assert.equal(sliceSpec([2, 4, 7], 'NHWC', {0: 1}).slice, '1,:,:');
  const v = sliceSpec([5], 'NHWC');
  assert.deepEqual([v.slice, v.height, v.width], [':', 1, 5]);
  assert.deepEqual([sliceSpec([], 'NHWC').slice, sliceSpec([], 'NHWC').width], ['', 1]);
  assert.equal(defaultLayout('Conv2DBackpropFilter', {}), 'HWIO');
  assert.equal(defaultLayout('Conv2D', {data_format: 'NCHW'}), 'NCHW');
  assert.equal(defaultLayout('Const', {}), 'NHWC');
});

test('colour scales: sequential, or diverging around zero; NaN grey', () => {
  const s = colorScale(0, 10);
  assert.equal(s.kind, 'sequential');
  assert.deepEqual(s.color(0), [68, 1, 84]);
  assert.deepEqual(s.color(10), [253, 231, 37]);
  const d = colorScale(-1, 3);
  assert.equal(d.kind, 'diverging');
  assert.deepEqual([d.lo, d.hi], [-3, 3]);
  assert.deepEqual(d.color(0), [247, 247, 247]);
  assert.deepEqual(d.color(null), [128, 128, 128]);
  assert.equal(fmt(325), '325');
  assert.equal(fmt(0.5), '0.5');
  assert.equal(fmt(1e-7), '1.000e-7');
});

test('a wire is refused with the reason: dtype, cycle, self', () => {
  const index = indexCatalog(read('../../graph_schemas/block_catalog.json'));
  const page = read('../../examples/filter_grad_same.json');
  const check = {blocks: {fs: {outputs: {output: {dtype: 'int32'}}},
                          x: {outputs: {output: {dtype: 'float32'}}}}};
  const bad = checkWire(page, index, check, 'fs', 'output', 'dw', 'out_backprop');
  assert.equal(bad.ok, false);
  assert.match(bad.reason, /takes float16, bfloat16, float32, float64 for "out_backprop", but fs:output is int32/);
  assert.deepEqual(checkWire(page, index, check, 'x', 'output', 'dw', 'out_backprop'), {ok: true});
  assert.match(checkWire(page, index, check, 'dw', 'output', 'dw', 'input').reason, /itself/);
  const withId = {...page, blocks: [...page.blocks, {id: 'i', type: 'Identity', inputs: {input: 'dw'}}]};
  assert.match(checkWire(withId, index, check, 'i', 'output', 'dw', 'input').reason, /cycle/);
});

test('the outputs offered for an input are those a wire would accept, labelled', () => {
  const index = indexCatalog(read('../../graph_schemas/block_catalog.json'));
  const page = read('../../examples/filter_grad_same.json');
  page.blocks.push({id: 'i', type: 'Identity', inputs: {input: 'dw'}},
                   {id: 'loose', type: 'Identity'});
  const check = {blocks: {fs: {outputs: {output: {dtype: 'int32', label: 'int32[4]'}}},
                          x: {outputs: {output: {dtype: 'float32', label: 'float32[1,5,5,1]'}}},
                          dy: {outputs: {output: {dtype: 'float32'}}},
                          dw: {outputs: {output: {dtype: 'float32'}}}}};
  /* int32 fs is refused for a float port; dw itself and i (downstream of dw) would be cycles */
  assert.deepEqual(wireCandidates(page, index, check, 'dw', 'out_backprop'),
                   [{source: 'x', label: 'x  float32[1,5,5,1]'}, {source: 'dy', label: 'dy'},
                    {source: 'loose', label: 'loose'}]);
  /* filter_sizes takes int32 only */
  assert.deepEqual(wireCandidates(page, index, check, 'dw', 'filter_sizes').map((c) => c.source),
                   ['fs', 'loose']);
  /* a block never feeds itself */
  assert.ok(!wireCandidates(page, index, check, 'loose', 'input').some((c) => c.source === 'loose'));
});

test('a wire label that would lie on a block is found, so it can step aside', () => {
  const node = {measured: {width: 300, height: 80}, internals: {positionAbsolute: {x: 100, y: 50}}};
  const w = labelWidth('float32[1,5,5,1]');
  assert.equal(w, 111);
  assert.ok(overlapsNode(node, 80, 90, w, 16));    /* its right half on the block's left edge */
  assert.ok(!overlapsNode(node, 40, 90, w, 16));   /* ends 4.5 px before it */
  assert.ok(!overlapsNode(node, 200, 30, w, 16));  /* above it: 38 + 8 <= 50 */
  assert.ok(overlapsNode(node, 200, 45, w, 16));
  assert.ok(!overlapsNode({}, 200, 90, w, 16));    /* not measured yet */
});
