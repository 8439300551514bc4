/* PaddingView.jsx - the input grid of a convolution with its padding ring, as explain reports
 * it (before/after per axis; SAME's odd row/column, always after, drawn distinctly), the
 * output-size rule with the block's numbers, and the taps of the explained output element's
 * window (numbered as in the list of terms, so stride and dilation can be seen). Taps that
 * fall in the padding are not listed by explain: they read zeros and are counted. */
import React from 'react';
import {colorScale, fmt, windowValue} from '../model/tensor.js';
import {paddingRing} from '../model/teach.js';

export default function PaddingView({name, padding, spec, values, min, max, taps = [], title,
                                     formula = [], nPadded = 0, tapsLabel}) {
  const H = spec.height;
  const W = spec.width;
  const ring = paddingRing(padding, H, W);
  const scale = colorScale(min, max);
  const size = Math.max(16, Math.min(40, Math.floor(300 / Math.max(ring.rows.length, ring.cols.length))));
  const gap = 18;
  const lit = new Map(taps.map((t) => [`${t.row},${t.col}`, t]));
  const cells = [];
  ring.rows.forEach((r, ri) => ring.cols.forEach((c, ci) => {
    const x = gap + ci * size;
    const y = gap + ri * size;
    const kind = r.kind === 'data' && c.kind === 'data' ? 'data'
      : r.kind === 'odd' || c.kind === 'odd' ? 'odd' : 'pad';
    if (kind === 'data') {
      const v = windowValue(values, spec, r.i, c.i);
      const [R, G, B] = scale.color(v);
      const t = lit.get(`${r.i},${c.i}`);
      cells.push(
        <g key={`${ri},${ci}`} data-testid={t ? `tap-${name}` : undefined}
           data-index={t ? t.index.join(',') : undefined}>
          <rect x={x} y={y} width={size} height={size} fill={`rgb(${R},${G},${B})`}
                stroke="#fff" />
          {size >= 24 && <text x={x + size / 2} y={y + size / 2 + 4} textAnchor="middle"
                               className="cell-text"
                               fill={(R * 0.299 + G * 0.587 + B * 0.114) < 140 ? '#fff' : '#111'}>
            {fmt(v)}</text>}
          {t && <rect x={x + 2} y={y + 2} width={size - 4} height={size - 4} className="lit lit-a" />}
        </g>);
    } else {
      cells.push(
        <g key={`${ri},${ci}`} data-testid={`ring-${kind}`} data-row={r.i} data-col={c.i}>
          <rect x={x} y={y} width={size} height={size} className={`pad-cell pad-${kind}`} />
          {size >= 24 && <text x={x + size / 2} y={y + size / 2 + 4} textAnchor="middle"
                               className="cell-text pad-zero">0</text>}
        </g>);
    }
  }));
  const nums = [];
  ring.cols.forEach((c, ci) => nums.push(
    <text key={`c${ci}`} x={gap + ci * size + size / 2} y={12} textAnchor="middle"
          className="axis-num">{c.i}</text>));
  ring.rows.forEach((r, ri) => nums.push(
    <text key={`r${ri}`} x={gap - 4} y={gap + ri * size + size / 2 + 4} textAnchor="end"
          className="axis-num">{r.i}</text>));
  const p = padding || {};
  return (
    <figure className="padding-view" data-testid="padding-view">
      <figcaption>{title}</figcaption>
      <svg width={gap + ring.cols.length * size + 2} height={gap + ring.rows.length * size + 2}
           role="img" aria-label={`${title}: padding top ${p.top}, bottom ${p.bottom}, left ${p.left}, right ${p.right}`}>
        {nums}
        {cells}
      </svg>
      <div className="legend">
        <span><i className="sw sw-data" /> data</span>
        <span><i className="sw sw-pad" /> padding (reads 0)</span>
        {(p.odd || []).length > 0 && <span><i className="sw sw-odd" /> SAME's odd {p.odd.join(' and ')} pixel</span>}
        <span><i className="sw sw-tap" /> {tapsLabel || 'window taps'}</span>
      </div>
      <div className="pad-text" data-testid="padding-text">
        padding {p.mode}: top {p.top}, bottom {p.bottom}, left {p.left}, right {p.right}
        {nPadded > 0 && <> · {nPadded} tap{nPadded > 1 ? 's' : ''} fell in the padding and read 0</>}
      </div>
      <div className="formula" data-testid="size-formula">
        {formula.map((l, i) => <div key={i}>{l}</div>)}
      </div>
    </figure>
  );
}
