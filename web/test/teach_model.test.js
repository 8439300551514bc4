// Unit tests of src/model/teach.js: explain's terms placed on heatmap slices in every layout
// (NHWC, NCHW, HWIO, depthwise [fh, fw, C, M]), the padding ring, the output-size text. The
// explain answers are real ones, printed by `blockflow explain ... --json` on examples/teach.
import test from 'node:test';
import assert from 'node:assert/strict';
import {sliceSpec} from '../src/model/tensor.js';
import {bestPicks, cellsOnSlice, depthwiseChannel, isForward, isGradient, outputSizeText,
        paddedTaps, paddingRing, picksFor, ringTapsOnSlice, strideDilation, sumOfProducts,
        tensorLayout, termsByTensor} from '../src/model/teach.js';

const term = (ta, ia, va, tb, ib, vb) => ({a: {tensor: ta, index: ia, value: va},
                                           b: {tensor: tb, index: ib, value: vb}});

/* nchw_vs_nhwc.json y_nchw 0 0 1 1 (first 3 of 8 terms) */
const NCHW = {type: 'Conv2D', value: 56, operands: {a: 'input', b: 'filter'},
  terms: [term('input', [0, 0, 1, 1], 5, 'filter', [0, 0, 0, 0], 1),
          term('input', [0, 1, 1, 1], 50, 'filter', [0, 0, 1, 0], 0.1),
          term('input', [0, 0, 1, 2], 6, 'filter', [0, 1, 0, 0], 1)]};
/* depthwise_multiplier2.json dw 1 0 1 1: [fh, fw, C, M] = [2, 2, 2, 2], 4 output channels */
const DEPTHWISE = {type: 'DepthwiseConv2dNativeBackpropFilter', value: 240, sum: 240,
  operands: {a: 'input', b: 'out_backprop'},
  terms: [term('input', [0, 1, 0, 1], 40, 'out_backprop', [0, 0, 0, 3], 1),
          term('input', [0, 1, 1, 1], 50, 'out_backprop', [0, 0, 1, 3], 1),
          term('input', [0, 2, 0, 1], 70, 'out_backprop', [0, 1, 0, 3], 1),
          term('input', [0, 2, 1, 1], 80, 'out_backprop', [0, 1, 1, 3], 1)]};

test('each operand and output has its own layout', () => {
  assert.equal(tensorLayout('Conv2D', {}, 'input'), 'NHWC');
  assert.equal(tensorLayout('Conv2D', {data_format: 'NCHW'}, 'output'), 'NCHW');
  assert.equal(tensorLayout('Conv2D', {data_format: 'NCHW'}, 'filter'), 'HWIO');
  assert.equal(tensorLayout('Conv2DBackpropFilter', {data_format: 'NCHW'}, 'output'), 'HWIO');
  assert.equal(tensorLayout('Conv2DBackpropFilter', {}, 'out_backprop'), 'NHWC');
  assert.equal(tensorLayout('Conv2DBackpropInput', {data_format: 'NCHW'}, 'output'), 'NCHW');
  assert.equal(tensorLayout('DepthwiseConv2dNativeBackpropFilter', {}, 'output'), 'HWCM');
  assert.equal(tensorLayout('DepthwiseConv2dNative', {}, 'filter'), 'HWCM');
  assert.ok(isForward('DepthwiseConv2dNative') && !isGradient('Conv2D'));
  assert.ok(isGradient('Conv2DBackpropInput') && !isGradient('Const'));
});

test('NCHW: terms land at (h, w) of their channel; the other channel is elsewhere', () => {
  const by = termsByTensor(NCHW);
  assert.deepEqual(Object.keys(by), ['input', 'filter']);
  const picks = bestPicks(by.input, 'NCHW');
  assert.deepEqual(picks, {0: 0, 1: 0});
  const spec = sliceSpec([1, 2, 3, 3], 'NCHW', picks);
  const {cells, elsewhere} = cellsOnSlice(by.input, spec);
  assert.deepEqual(cells.map((c) => [c.row, c.col, c.value, c.term]), [[1, 1, 5, 0], [1, 2, 6, 2]]);
  assert.equal(elsewhere, 1);
  const other = cellsOnSlice(by.input, sliceSpec([1, 2, 3, 3], 'NCHW', {1: 1}));
  assert.deepEqual(other.cells.map((c) => [c.row, c.col, c.value]), [[1, 1, 50]]);
});

test('HWIO: filter taps land at (kh, kw) of their in/out channel', () => {
  const by = termsByTensor(NCHW);
  const spec = sliceSpec([2, 2, 2, 1], 'HWIO', bestPicks(by.filter, 'HWIO'));
  assert.equal(spec.slice, ':,:,0,0');
  assert.deepEqual(cellsOnSlice(by.filter, spec).cells.map((c) => [c.row, c.col, c.value]),
                   [[0, 0, 1], [0, 1, 1]]);
});

test('depthwise: output channel c*M+m, filter [kh, kw, c, m]; NHWC operands', () => {
  assert.deepEqual(depthwiseChannel(3, 2), {c: 1, m: 1});
  const by = termsByTensor(DEPTHWISE);
  /* the clicked dW element [1, 0, 1, 1] is shown on its own HWCM slice */
  const own = sliceSpec([2, 2, 2, 2], 'HWCM', picksFor([1, 0, 1, 1], 'HWCM'));
  assert.equal(own.slice, ':,:,1,1');
  assert.deepEqual(own.pickers.map((p) => p.name), ['channel', 'multiplier']);
  const x = sliceSpec([1, 3, 3, 2], 'NHWC', bestPicks(by.input, 'NHWC'));
  assert.equal(x.slice, '0,:,:,1', 'input channel c = 1');
  assert.deepEqual(cellsOnSlice(by.input, x).cells.map((c) => [c.row, c.col]),
                   [[1, 0], [1, 1], [2, 0], [2, 1]]);
  const dy = sliceSpec([1, 2, 2, 4], 'NHWC', bestPicks(by.out_backprop, 'NHWC'));
  assert.equal(dy.slice, '0,:,:,3', 'out_backprop channel c*M + m = 3');
  assert.equal(cellsOnSlice(by.out_backprop, dy).cells.length, 4);
  assert.equal(sumOfProducts(DEPTHWISE), DEPTHWISE.value);
});

test('the padding ring: SAME on an odd size puts the odd pixel after', () => {
  const r = paddingRing({mode: 'SAME', top: 0, bottom: 1, left: 0, right: 1,
                         odd: ['bottom', 'right']}, 5, 5);
  assert.deepEqual(r.rows.map((x) => x.i), [0, 1, 2, 3, 4, 5]);
  assert.equal(r.rows[5].kind, 'odd');
  assert.equal(r.cols[5].kind, 'odd');
  const e = paddingRing({mode: 'EXPLICIT', top: 2, bottom: 1, left: 1, right: 1, odd: []}, 3, 3);
  assert.deepEqual(e.rows.map((x) => x.kind), ['pad', 'pad', 'data', 'data', 'data', 'pad']);
  assert.deepEqual(e.cols.map((x) => x.i), [-1, 0, 1, 2, 3]);
  const even = paddingRing({mode: 'SAME', top: 1, bottom: 1, left: 1, right: 1, odd: []}, 4, 4);
  assert.ok(even.rows.every((x) => x.kind !== 'odd'));
});

test('the output-size text uses the block\'s numbers and the server\'s answer', () => {
  const [a, b] = outputSizeText('SAME', {axis: 'H', n: 5, k: 2, s: 1, d: 1, before: 0,
                                         after: 1, out: 5});
  assert.equal(a, 'H: out = ⌈in / stride⌉ = ⌈5 / 1⌉ = 5');
  assert.match(b, /= 1 → 0 before, 1 after \(the odd pixel goes after\)/);
  assert.match(outputSizeText('VALID', {axis: 'W', n: 5, k: 3, s: 2, d: 2, before: 0,
                                        after: 0, out: 1})[0],
               /⌈\(5 − \(3−1\)·2\+1 \+ 1\) \/ 2⌉ = 1$/);
  assert.deepEqual(strideDilation({strides: [1, 1, 2, 3], dilations: [1, 1, 1, 2]}, 'NCHW'),
                   {sh: 2, sw: 3, dh: 1, dw: 2});
  assert.deepEqual(strideDilation({strides: [1, 2, 3, 1]}, 'NHWC'),
                   {sh: 2, sw: 3, dh: 1, dw: 1});
});

test('a small constant gets a grid per slice, laid out as it is wired', async () => {
  const {constGrid, constLayout, flatIndex} = await import('../src/model/teach.js');
  const page = {blocks: [{id: 'x', type: 'Const'}, {id: 'w', type: 'Const'},
                         {id: 'y', type: 'DepthwiseConv2dNative', inputs: {input: 'x', filter: 'w'},
                          attrs: {data_format: 'NCHW'}}]};
  assert.equal(constLayout(page, 'w'), 'HWCM');
  assert.equal(constLayout(page, 'x'), 'NCHW');
  assert.equal(constLayout(page, 'y'), null, 'nothing says: no layout name');
  const g = constGrid([1, 2, 3, 3], 1, 'NCHW');
  assert.equal(g.values.length, 18);
  assert.deepEqual(g.tables.map((t) => t.label), ['batch 0, channel 0', 'batch 0, channel 1']);
  assert.equal(flatIndex([1, 2, 3, 3], [0, 1, 2, 0]), 15);
  assert.equal(constGrid([9, 9], 0, 'NHWC'), null, 'more than 64 elements');
  assert.equal(constGrid([2], [1, 2, 3], 'NHWC'), null, 'a value that does not fit');
  assert.equal(constGrid([2, 2], [1, 2, 3, 4], 'NHWC').tables.length, 1);
});

const ptap = (h, w, ia, tb, ib, vb) => ({h, w, a: {tensor: 'input', index: ia, value: 0},
                                         b: {tensor: tb, index: ib, value: vb}});

test('padded taps land on the ring: SAME odd size, the corner element (NHWC)', () => {
  /* valid_vs_same.json same 0 4 4 0: 1 term, 3 taps on SAME's odd row/column 5 */
  const r = {type: 'Conv2D', value: 25, operands: {a: 'input', b: 'filter'}, n_padded: 3,
    padding: {mode: 'SAME', top: 0, bottom: 1, left: 0, right: 1, odd: ['bottom', 'right']},
    terms: [term('input', [0, 4, 4, 0], 25, 'filter', [0, 0, 0, 0], 1)],
    padded_taps: [ptap(4, 5, [0, 4, 5, 0], 'filter', [0, 1, 0, 0], 2),
                  ptap(5, 4, [0, 5, 4, 0], 'filter', [1, 0, 0, 0], 3),
                  ptap(5, 5, [0, 5, 5, 0], 'filter', [1, 1, 0, 0], 4)]};
  const taps = paddedTaps(r);
  assert.deepEqual(taps.map((t) => [t.h, t.w, t.tap, t.value]), [[4, 5, 0, 0], [5, 4, 1, 0], [5, 5, 2, 0]]);
  const spec = sliceSpec([1, 5, 5, 1], 'NHWC', bestPicks([...termsByTensor(r).input, ...taps], 'NHWC'));
  const on = ringTapsOnSlice(taps, spec);
  assert.equal(on.elsewhere, 0);
  assert.deepEqual(on.cells.map((c) => [c.row, c.col, c.taps[0].b.index.join(',')]),
                   [[4, 5, '0,1,0,0'], [5, 4, '1,0,0,0'], [5, 5, '1,1,0,0']]);
  /* every one is a ring cell (SAME's odd pixel) of paddingRing, none on the data */
  const ring = paddingRing(r.padding, 5, 5);
  for (const c of on.cells) {
    const row = ring.rows.find((x) => x.i === c.row);
    const col = ring.cols.find((x) => x.i === c.col);
    assert.ok(row && col && (row.kind === 'odd' || col.kind === 'odd'), `(${c.row}, ${c.col})`);
  }
  /* the other operand's taps are not on the input's grid */
  assert.deepEqual(paddedTaps(r, 'out_backprop'), []);
  assert.deepEqual(paddedTaps({terms: []}), []);
});

test('padded taps in NCHW: h and w from the tap, the channel picks the slice', () => {
  /* nchw_vs_nhwc.json with SAME: y_nchw 0 0 2 2, 2 channels x 3 padded positions */
  const r = {padded_taps: [
    ptap(2, 3, [0, 0, 2, 3], 'filter', [0, 1, 0, 0], 1), ptap(2, 3, [0, 1, 2, 3], 'filter', [0, 1, 1, 0], 0.1),
    ptap(3, 2, [0, 0, 3, 2], 'filter', [1, 0, 0, 0], 1), ptap(3, 2, [0, 1, 3, 2], 'filter', [1, 0, 1, 0], 0.1),
    ptap(3, 3, [0, 0, 3, 3], 'filter', [1, 1, 0, 0], 1), ptap(3, 3, [0, 1, 3, 3], 'filter', [1, 1, 1, 0], 0.1)]};
  const taps = paddedTaps(r);
  const c1 = ringTapsOnSlice(taps, sliceSpec([1, 2, 3, 3], 'NCHW', {1: 1}));
  assert.equal(c1.elsewhere, 3, 'channel 0 is on the other slice');
  assert.deepEqual(c1.cells.map((c) => [c.row, c.col, c.taps.map((t) => t.tap).join()]),
                   [[2, 3, '1'], [3, 2, '3'], [3, 3, '5']]);
  assert.deepEqual(c1.cells.map((c) => c.taps[0].b.value), [0.1, 0.1, 0.1]);
});

test('padded taps of a filter gradient: on x, times out_backprop; two at one cell share it', () => {
  /* finite_difference_check.json dw 2 2 0 1 (the first two), plus a second batch's tap */
  const r = {padded_taps: [ptap(2, 6, [0, 2, 6, 0], 'out_backprop', [0, 0, 2, 1], -1),
                           ptap(6, 6, [0, 6, 6, 0], 'out_backprop', [0, 2, 2, 1], -0.5),
                           ptap(6, 6, [1, 6, 6, 0], 'out_backprop', [1, 2, 2, 1], 0.25)],
             padded_truncated: true};
  const taps = paddedTaps(r);
  assert.deepEqual(bestPicks(taps, 'NHWC'), {0: 0, 3: 0});
  const b0 = ringTapsOnSlice(taps, sliceSpec([2, 6, 6, 1], 'NHWC', {0: 0}));
  assert.deepEqual(b0.cells.map((c) => [c.row, c.col, c.taps[0].b.tensor]),
                   [[2, 6, 'out_backprop'], [6, 6, 'out_backprop']]);
  assert.equal(b0.elsewhere, 1);
  const b1 = ringTapsOnSlice(taps, sliceSpec([2, 6, 6, 1], 'NHWC', {0: 1}));
  assert.deepEqual(b1.cells.map((c) => [c.row, c.col, c.taps[0].tap]), [[6, 6, 2]]);
  /* a cell read by several taps (other layouts, other shapes) keeps them all, in order */
  const two = ringTapsOnSlice([...taps, {...taps[1], tap: 3}], sliceSpec([2, 6, 6, 1], 'NHWC', {0: 0}));
  assert.deepEqual(two.cells[1].taps.map((t) => t.tap), [1, 3]);
});

test('a grid without a layout uses the two axes with the most elements', async () => {
  const {widestAxes, sliceSpec} = await import('../src/model/tensor.js');
  assert.deepEqual(widestAxes([3, 3, 1, 2]), {rows: 0, cols: 1});
  assert.deepEqual(widestAxes([1, 5, 5, 1]), {rows: 1, cols: 2});
  const spec = sliceSpec([3, 3, 1, 2], {rows: 0, cols: 1}, {3: 1});
  assert.equal(spec.slice, ':,:,0,1');
  assert.equal(spec.height, 3);
  assert.equal(spec.width, 3);
});

test('numbers shortened to fit a cell', async () => {
  const {fitNumber} = await import('../src/model/tensor.js');
  assert.equal(fitNumber(0.05524, 8), '0.05524');
  assert.equal(fitNumber(0.05524, 5), '0.055');
  assert.equal(fitNumber(123456.7, 4), '1e5');
  assert.equal(fitNumber(-0.000123456, 7), '-0.0001');
  assert.equal(fitNumber(-0.000123456, 6), '-1e-4');
  assert.equal(fitNumber(3, 1), '3');
  assert.equal(fitNumber(-123456789, 3), null);
});
