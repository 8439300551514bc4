/*
 * teach.js - the pure logic of the teaching views (README "Teaching"): which layout each
 * operand of a convolution block has, where explain's terms fall on a heatmap slice, the
 * padding ring around the input grid, and the output-size formula with the block's numbers.
 *
 * Nothing here recomputes the geometry: the padding (before/after, SAME's odd pixel) and the
 * terms (indices in each tensor's own layout) come from the server's explain, and the sizes
 * from its check. This file only places those numbers on the screen.
 */
import {sliceSpec} from './tensor.js';

export const TEACH_TYPES = new Set([
  'Conv2D', 'Conv2DBackpropFilter', 'Conv2DBackpropInput', 'DepthwiseConv2dNative',
  'DepthwiseConv2dNativeBackpropFilter', 'DepthwiseConv2dNativeBackpropInput']);

export const isTeachable = (type) => TEACH_TYPES.has(type);
export const isForward = (type) => type === 'Conv2D' || type === 'DepthwiseConv2dNative';
export const isGradient = (type) => isTeachable(type) && !isForward(type);
export const isDepthwise = (type) => /^Depthwise/.test(type || '');

/**
 * The layout of tensor `which` of a convolution block: 'input', 'out_backprop' and the output
 * of Conv2D / BackpropInput are activations in the block's data_format (NHWC or NCHW);
 * 'filter' and BackpropFilter's output are HWIO, or [fh, fw, C, M] (HWCM) for depthwise.
 */
export function tensorLayout(type, attrs, which) {
  const filterLike = which === 'filter' || (which === 'output' && /BackpropFilter$/.test(type));
  if (filterLike) return isDepthwise(type) ? 'HWCM' : 'HWIO';
  return attrs && attrs.data_format === 'NCHW' ? 'NCHW' : 'NHWC';
}

/** The heatmap picks (axis -> index) that show element `index` of a `layout` tensor. */
export function picksFor(index, layout) {
  const s = sliceSpec(index.map(() => 1), layout);
  const picks = {};
  for (const p of s.pickers) picks[p.axis] = index[p.axis];
  return picks;
}

/**
 * The operand elements of explain's answer, by tensor: {input: [{index, value, term}], ...}
 * where `term` is the term's position in the list (0-based) and `side` 'a' or 'b'.
 */
export function termsByTensor(result) {
  const out = {};
  (result && result.terms ? result.terms : []).forEach((t, k) => {
    for (const side of ['a', 'b']) {
      const e = t[side];
      (out[e.tensor] = out[e.tensor] || []).push({index: e.index, value: e.value, term: k, side});
    }
  });
  return out;
}

/**
 * Where elements fall on the heatmap slice `spec` (sliceSpec): [{row, col, index, value,
 * term}] for those in the slice (their picked axes equal the slice's), and `elsewhere`, the
 * count of the others (in another batch, channel...).
 */
export function cellsOnSlice(elements, spec) {
  const cells = [];
  let elsewhere = 0;
  for (const e of elements || []) {
    if (!spec.pickers.every((p) => e.index[p.axis] === p.index)) {
      elsewhere++;
      continue;
    }
    cells.push({...e, row: spec.rows >= 0 ? e.index[spec.rows] : 0,
                col: spec.cols >= 0 ? e.index[spec.cols] : 0});
  }
  return {cells, elsewhere};
}

/**
 * explain's padded_taps on grid `tensor` (operand A: 'input'), as elements like
 * termsByTensor's: [{index, value: 0, h, w, tap, b}] where index is A's index with the tap's
 * h and w in place (outside the data: -1 is the row before it, H the row after), `tap` the
 * position in padded_taps (0-based) and `b` the operand element it would have multiplied.
 * The list is capped as the terms are (result.padded_truncated); n_padded counts them all.
 */
export function paddedTaps(result, tensor = 'input') {
  return ((result && result.padded_taps) || [])
    .map((t, k) => ({index: t.a.index, value: 0, h: t.h, w: t.w, tap: k, b: t.b, tensor: t.a.tensor}))
    .filter((t) => t.tensor === tensor);
}

/**
 * The padded taps (paddedTaps) on the padding view's slice `spec` of their grid: {cells:
 * [{row: h, col: w, taps: [...]}] one per ring cell, in the order of the first tap on it,
 * and `elsewhere`, the count of those on other slices (another batch or channel).
 */
export function ringTapsOnSlice(taps, spec) {
  const byCell = new Map();
  let elsewhere = 0;
  for (const t of taps || []) {
    if (!spec.pickers.every((p) => t.index[p.axis] === p.index)) {
      elsewhere++;
      continue;
    }
    const key = `${t.h},${t.w}`;
    if (!byCell.has(key)) byCell.set(key, {row: t.h, col: t.w, taps: []});
    byCell.get(key).taps.push(t);
  }
  return {cells: [...byCell.values()], elsewhere};
}

/** Picks for the slice holding the most of `elements` (ties: the first term's slice). */
export function bestPicks(elements, layout) {
  const count = new Map();
  let best = null;
  for (const e of elements || []) {
    const key = JSON.stringify(picksFor(e.index, layout));
    count.set(key, (count.get(key) || 0) + 1);
    if (!best || count.get(key) > count.get(best)) best = key;
  }
  return best ? JSON.parse(best) : {};
}

/** [H axis, W axis] of an activation layout. */
export function spatialAxes(layout) {
  return layout === 'NCHW' ? [2, 3] : [1, 2];
}

/**
 * The input grid with its padding ring, from explain's padding {top, bottom, left, right,
 * odd}: rows (and cols) numbered from -top to H+bottom-1, each 'data', 'pad', or 'odd' (the
 * SAME odd pixel: TensorFlow puts it after, as the last padded row/column).
 */
export function paddingRing(padding, H, W) {
  const p = padding || {top: 0, bottom: 0, left: 0, right: 0, odd: []};
  const odd = new Set(p.odd || []);
  const axis = (before, after, n, oddAfter) => {
    const list = [];
    for (let i = before ? -before : 0; i < n + after; i++) {
      list.push({i, kind: i >= 0 && i < n ? 'data' : oddAfter && i === n + after - 1 ? 'odd'
                                                                                 : 'pad'});
    }
    return list;
  };
  return {rows: axis(p.top, p.bottom, H, odd.has('bottom')),
          cols: axis(p.left, p.right, W, odd.has('right'))};
}

/**
 * The output-size rule of one spatial axis as text lines with this block's numbers: `n` input
 * size, `k` filter size, `s` stride, `d` dilation, `before`/`after` the padding explain
 * reported, `out` the output size the server's check inferred (never computed here).
 */
export function outputSizeText(mode, {axis, n, k, s, d, before, after, out}) {
  const ke = d > 1 ? `(${k}−1)·${d}+1` : `${k}`;
  const lines = [];
  if (mode === 'VALID') {
    lines.push(`${axis}: out = ⌈(in − effective k + 1) / stride⌉ = ⌈(${n} − ${ke} + 1) / ${s}⌉ = ${out}`);
  } else if (mode === 'SAME') {
    lines.push(`${axis}: out = ⌈in / stride⌉ = ⌈${n} / ${s}⌉ = ${out}`);
    lines.push(`${axis}: padding = (out − 1)·stride + effective k − in = (${out} − 1)·${s} + ${ke} − ${n}` +
               ` = ${before + after} → ${before} before, ${after} after` +
               (after > before ? ' (the odd pixel goes after)' : ''));
  } else {
    lines.push(`${axis}: out = ⌊(in + pad − effective k) / stride⌋ + 1 = ⌊(${n} + ${before} + ${after} − ${ke}) / ${s}⌋ + 1 = ${out}`);
  }
  return lines;
}

/** The spatial stride and dilation of a block, from its attributes in data_format order. */
export function strideDilation(attrs, layout) {
  const [h, w] = spatialAxes(layout);
  const st = (attrs && attrs.strides) || [1, 1, 1, 1];
  const dl = (attrs && attrs.dilations) || [1, 1, 1, 1];
  return {sh: st[h] ?? 1, sw: st[w] ?? 1, dh: dl[h] ?? 1, dw: dl[w] ?? 1};
}

/** For a depthwise activation channel k with multiplier M: input channel c and filter m. */
export function depthwiseChannel(k, M) {
  return {c: Math.floor(k / M), m: k % M};
}

/** The sum of the products of explain's listed terms, in the order listed. */
export function sumOfProducts(result) {
  return (result && result.terms ? result.terms : []).reduce((s, t) => s + t.a.value * t.b.value, 0);
}

/**
 * The layout to show a constant's values in, from where it is wired: the filter of a
 * convolution is HWIO (depthwise HWCM), an activation follows its block's data_format.
 */
export function constLayout(page, id) {
  for (const b of (page && page.blocks) || []) {
    for (const [port, src] of Object.entries(b.inputs || {})) {
      if (String(src).split(':')[0] !== id || !isTeachable(b.type)) continue;
      if (port === 'filter') return isDepthwise(b.type) ? 'HWCM' : 'HWIO';
      if (port === 'input' || port === 'out_backprop') return tensorLayout(b.type, b.attrs, port);
    }
  }
  return null; /* nothing says: the grid shows plain axes (widestAxes) */
}

/**
 * The editable grid of a small constant: null unless `value` is a number or a flat list and
 * the shape has 1..64 elements. Else {values (flat, the scalar broadcast), tables: [{label,
 * picks, spec}]}: one row x column table per combination of the other axes.
 */
export function constGrid(shape, value, layout, max = 64) {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) return null;
  const n = shape.reduce((a, d) => a * d, 1);
  if (n < 1 || n > max) return null;
  let values;
  if (typeof value === 'number') values = new Array(n).fill(value);
  else if (Array.isArray(value) && value.length === n && value.every((v) => typeof v === 'number')) values = value.slice();
  else if (value === undefined || value === null) values = new Array(n).fill(0);
  else return null;
  const base = sliceSpec(shape, layout);
  const tables = [];
  const walk = (k, picks) => {
    if (k === base.pickers.length) {
      const spec = sliceSpec(shape, layout, picks);
      tables.push({label: spec.pickers.map((p) => `${p.name} ${p.index}`).join(', '), picks, spec});
      return;
    }
    for (let i = 0; i < base.pickers[k].size; i++) walk(k + 1, {...picks, [base.pickers[k].axis]: i});
  };
  walk(0, {});
  return {values, tables};
}

/** The flat (row-major) offset of `index` in `shape`. */
export function flatIndex(shape, index) {
  return index.reduce((f, v, i) => f * shape[i] + v, 0);
}
