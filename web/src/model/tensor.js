/*
 * tensor.js - which 2-D slice of a tensor the heatmap shows, and its colours.
 *
 * A 4-D activation is NHWC or NCHW (its block's data_format) and a 4-D filter is HWIO
 * (Conv2DBackpropFilter's output, whatever data_format): the heatmap shows height x width
 * and the person picks the other two indices. sliceSpec() turns that choice into the
 * server's ?view=values&slice=... text and says which axes are rows and columns, so a hover
 * can name the element exactly (dw[1,2,0,0]).
 */

/* For rank 4: rows axis, cols axis, and the two picked axes with their names. */
const LAYOUTS4 = {
  NHWC: {rows: 1, cols: 2, picks: [[0, 'batch'], [3, 'channel']]},
  NCHW: {rows: 2, cols: 3, picks: [[0, 'batch'], [1, 'channel']]},
  HWIO: {rows: 0, cols: 1, picks: [[2, 'in channel'], [3, 'out channel']]},
  /* a depthwise filter [fh, fw, C, M]: output channel c*M + m reads filter [:, :, c, m] */
  HWCM: {rows: 0, cols: 1, picks: [[2, 'channel'], [3, 'multiplier']]},
};

export const LAYOUT_NAMES = Object.keys(LAYOUTS4);

/** The layout a block's 4-D output most likely has: HWIO for filter gradients, else its
 *  data_format (NHWC by default). */
export function defaultLayout(blockType, attrs) {
  if (/^Depthwise.*BackpropFilter$/.test(blockType || '')) return 'HWCM';
  if (/BackpropFilter$/.test(blockType || '')) return 'HWIO';
  const f = attrs && attrs.data_format;
  return f === 'NCHW' ? 'NCHW' : 'NHWC';
}

/**
 * The slice to show: {rows, cols, pickers: [{axis, name, size, index}], slice, height,
 * width}. `picks` maps axis -> index (clamped to the axis). rows is -1 for a 1-D tensor
 * (one row), both are -1 for a scalar.
 */
export function sliceSpec(shape, layout, picks = {}) {
  const r = shape.length;
  let rows = -1;
  let cols = -1;
  let named = [];
  if (layout && typeof layout === 'object' && r >= 2) {
    ({rows, cols} = layout); /* explicit axes (a constant whose layout nothing says) */
  } else if (r === 4 && LAYOUTS4[layout]) {
    ({rows, cols} = LAYOUTS4[layout]);
    named = LAYOUTS4[layout].picks;
  } else if (r >= 2) {
    rows = r - 2;
    cols = r - 1;
  } else if (r === 1) {
    cols = 0;
  }
  const pickers = [];
  const parts = [];
  for (let a = 0; a < r; a++) {
    if (a === rows || a === cols) {
      parts.push(':');
      continue;
    }
    const n = named.find(([ax]) => ax === a);
    const size = shape[a];
    const index = Math.max(0, Math.min(size - 1, Number(picks[a]) || 0));
    pickers.push({axis: a, name: n ? n[1] : `axis ${a}`, size, index});
    parts.push(String(index));
  }
  return {
    rows, cols, pickers,
    slice: parts.join(','),
    height: rows < 0 ? 1 : shape[rows],
    width: cols < 0 ? 1 : shape[cols],
  };
}

/** The full index of heatmap cell (row, col) under `spec`. */
export function cellIndex(shape, spec, row, col) {
  const idx = new Array(shape.length).fill(0);
  for (const p of spec.pickers) idx[p.axis] = p.index;
  if (spec.rows >= 0) idx[spec.rows] = row;
  if (spec.cols >= 0) idx[spec.cols] = col;
  return idx;
}

/**
 * The window answer of ?view=values (flat, row-major over the window whose picked axes have
 * size 1) as rows x cols: value at (row, col).
 */
export function windowValue(values, spec, row, col) {
  return values[row * spec.width + col];
}

/* viridis, 9 stops */
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
                 [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]];
/* blue - white - red for data on both sides of zero */
const DIVERGING = [[33, 102, 172], [103, 169, 207], [209, 229, 240], [247, 247, 247],
                   [253, 219, 199], [239, 138, 98], [178, 24, 43]];

function ramp(stops, t) {
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  return stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * f));
}

/**
 * A colour scale for values in [min, max]: diverging and symmetric around zero when the
 * data has both signs, else viridis. Returns {kind, lo, hi, color(v) -> [r, g, b]}; null
 * (NaN, Inf) is drawn grey.
 */
export function colorScale(min, max) {
  const finite = Number.isFinite(min) && Number.isFinite(max);
  if (finite && min < 0 && max > 0) {
    const m = Math.max(-min, max);
    return {kind: 'diverging', lo: -m, hi: m,
            color: (v) => (v === null || !Number.isFinite(v) ? [128, 128, 128]
                                                              : ramp(DIVERGING, (v + m) / (2 * m)))};
  }
  const lo = finite ? min : 0;
  const hi = finite ? max : 1;
  const span = hi - lo || 1;
  return {kind: 'sequential', lo, hi,
          color: (v) => (v === null || !Number.isFinite(v) ? [128, 128, 128]
                                                            : ramp(VIRIDIS, (v - lo) / span))};
}

/** Numbers for people: 4 significant digits, exponent when tiny or huge. */
/**
 * `v` written in at most `chars` characters (fewer significant digits first, then the
 * exponent form), or null when it cannot be: for numbers in small cells.
 */
export function fitNumber(v, chars) {
  const full = fmt(v);
  if (full.length <= chars) return full;
  if (typeof v !== 'number' || !Number.isFinite(v)) return null;
  for (let p = 5; p >= 1; p--) {
    const t = String(Number(v.toPrecision(p)));
    if (t.length <= chars) return t;
  }
  for (let p = 2; p >= 0; p--) {
    const t = v.toExponential(p).replace('e+', 'e');
    if (t.length <= chars) return t;
  }
  return null;
}

/** The two axes to lay out as rows and columns when no layout is known: the pair holding the
 * most elements (the earliest on a tie), e.g. [3,3,1,2] -> 0 and 1, [1,5,5,1] -> 1 and 2. */
export function widestAxes(shape) {
  let best = null;
  for (let a = 0; a < shape.length; a++) {
    for (let b = a + 1; b < shape.length; b++) {
      const n = shape[a] * shape[b];
      if (!best || n > best.n) best = {rows: a, cols: b, n};
    }
  }
  return best ? {rows: best.rows, cols: best.cols} : null;
}

export function fmt(v) {
  if (v === null || v === undefined) return 'NaN/Inf';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e9) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(6)));
}
