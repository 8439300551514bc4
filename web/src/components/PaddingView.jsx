/* PaddingView.jsx - the input grid of a convolution with its padding ring, as explain reports
 * it (before/after per axis; SAME's odd row/column, always after, drawn distinctly), the
 * output-size rule with the block's numbers, and the taps of the explained output element's
 * window (outlined on the data). Taps that fall in the padding are no terms (they read zeros);
 * explain's padded_taps says where they are, and they are outlined on the ring (purple,
 * dashed), numbered p1, p2, ... in the order of padded_taps, each marked "reads 0" with the
 * operand element it would have multiplied. */
import React from 'react';
import {colorScale, fmt, windowValue} from '../model/tensor.js';
import {paddingRing} from '../model/teach.js';

const tapText = (t) => `p${t.tap + 1}: reads 0 (× ${t.b.tensor}[${t.b.index.join(',')}] = ${fmt(t.b.value)})`;

export default function PaddingView({name, padding, spec, values, min, max, taps = [], title,
                                     formula = [], nPadded = 0, tapsLabel, ringTaps = [],
                                     ringElsewhere = 0, ringTruncated = false}) {
  const H = spec.height;
  const W = spec.width;
  const ring = paddingRing(padding, H, W);
  const scale = colorScale(min, max);
  const size = Math.max(16, Math.min(40, Math.floor(300 / Math.max(ring.rows.length, ring.cols.length))));
  const gap = 18;
  const lit = new Map(taps.map((t) => [`${t.row},${t.col}`, t]));
  const onRing = new Map(ringTaps.map((c) => [`${c.row},${c.col}`, c]));
  const shownTaps = ringTaps.flatMap((c) => c.taps).sort((a, b) => a.tap - b.tap);
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
      const rt = onRing.get(`${r.i},${c.i}`);
      cells.push(
        <g key={`${ri},${ci}`} data-testid={`ring-${kind}`} data-row={r.i} data-col={c.i}>
          <rect x={x} y={y} width={size} height={size} className={`pad-cell pad-${kind}`} />
          {size >= 24 && <text x={x + size / 2} y={y + size / 2 + 4} textAnchor="middle"
                               className="cell-text pad-zero">0</text>}
          {rt && (
            <g data-testid={`padtap-${name}`} data-row={r.i} data-col={c.i}
               data-taps={rt.taps.map((t) => t.tap).join(',')}>
              <title>{rt.taps.map(tapText).join('\n')}</title>
              <rect x={x + 2} y={y + 2} width={size - 4} height={size - 4} className="lit lit-pad" />
              {size >= 24 && <text x={x + 6} y={y + 14} className="padtap-num">
                {rt.taps.map((t) => `p${t.tap + 1}`).join(',')}</text>}
            </g>
          )}
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
        {nPadded > 0 && <span><i className="sw sw-padtap" /> taps in the padding (p1, p2, …: read 0)</span>}
      </div>
      <div className="pad-text" data-testid="padding-text">
        padding {p.mode}: top {p.top}, bottom {p.bottom}, left {p.left}, right {p.right}
        {nPadded > 0 && <> · {nPadded} tap{nPadded > 1 ? 's' : ''} fell in the padding and read 0</>}
        {ringElsewhere > 0 && <> ({ringElsewhere} on other slices)</>}
        {ringTruncated && <> (only the first {shownTaps.length + ringElsewhere} are located)</>}
      </div>
      {shownTaps.length > 0 && (
        <ul className="padtap-list" data-testid={`padtap-list-${name}`}>
          {shownTaps.slice(0, 12).map((t) => (
            <li key={t.tap}>p{t.tap + 1} at ({t.h}, {t.w}) reads 0 ×{' '}
              <code>{t.b.tensor}[{t.b.index.join(',')}]</code> = {fmt(t.b.value)}</li>))}
          {shownTaps.length > 12 && <li className="muted">… and {shownTaps.length - 12} more on this slice</li>}
        </ul>
      )}
      <div className="formula" data-testid="size-formula">
        {formula.map((l, i) => <div key={i}>{l}</div>)}
      </div>
    </figure>
  );
}
