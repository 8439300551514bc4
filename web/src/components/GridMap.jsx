/* GridMap.jsx - a small 2-D slice as an SVG grid for the teaching views: one cell per element,
 * coloured on the tensor's scale with its value written in it, explain's terms outlined and
 * numbered, the clicked element marked. It is one tab stop: the arrow keys move a cursor and
 * Enter picks the element under it (as a click does). Highlighted cells carry data-index and
 * data-value, so what is lit can be read back from the page. */
import React, {useState} from 'react';
import {cellIndex, colorScale, fitNumber, fmt, windowValue} from '../model/tensor.js';

export default function GridMap({name, shape, spec, values, min, max, cells = [], picked,
                                 onPick, onHover, tone = 'a', caption}) {
  const [cursor, setCursor] = useState(null);
  const scale = colorScale(min, max);
  const size = Math.max(14, Math.min(44, Math.floor(300 / Math.max(spec.width, spec.height))));
  const gap = 16; /* room for the column numbers and row numbers */
  const W = spec.width * size + gap;
  const H = spec.height * size + gap;
  const lit = new Map(cells.map((c) => [`${c.row},${c.col}`, c]));
  const pickedKey = picked ? `${picked.row},${picked.col}` : null;
  const showText = size >= 26;
  /* the characters a cell holds (11 px monospace: 6.7 px each, 3 px of margin a side); a
   * number is shortened to fit, or left to the tooltip */
  const chars = Math.floor((size - 6) / 6.7);
  const pick = (r, c) => onPick && onPick(cellIndex(shape, spec, r, c));
  const onKey = (e) => {
    const cur = cursor || {r: 0, c: 0};
    const mv = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]}[e.key];
    if (mv) {
      e.preventDefault();
      const next = {r: Math.max(0, Math.min(spec.height - 1, cur.r + mv[0])),
                    c: Math.max(0, Math.min(spec.width - 1, cur.c + mv[1]))};
      setCursor(next);
      if (onHover) onHover(cellIndex(shape, spec, next.r, next.c));
    } else if ((e.key === 'Enter' || e.key === ' ') && onPick) {
      e.preventDefault();
      pick(cur.r, cur.c);
    }
  };
  const rects = [];
  for (let r = 0; r < spec.height; r++) {
    for (let c = 0; c < spec.width; c++) {
      const v = windowValue(values, spec, r, c);
      const [R, G, B] = scale.color(v);
      const hl = lit.get(`${r},${c}`);
      const dark = (R * 0.299 + G * 0.587 + B * 0.114) < 140;
      const x = gap + c * size;
      const y = gap + r * size;
      const idx = cellIndex(shape, spec, r, c);
      rects.push(
        <g key={`${r},${c}`} data-testid={hl ? `lit-${name}` : undefined}
           data-index={idx.join(',')} data-value={String(v)}
           data-term={hl ? String(hl.term) : undefined}
           onClick={onPick ? () => { setCursor({r, c}); pick(r, c); } : undefined}
           onMouseEnter={onHover ? () => onHover(idx) : undefined}
           className={onPick ? 'pickable' : undefined}>
          <title>{`${name}[${idx.join(', ')}] = ${fmt(v)}${hl ? ` (term ${hl.term + 1})` : ''}`}</title>
          <rect x={x} y={y} width={size} height={size} fill={`rgb(${R},${G},${B})`}
                stroke="#fff" strokeWidth="1" />
          {showText && fitNumber(v, chars) !== null && (
            <text x={x + size / 2} y={y + size / 2 + 4} textAnchor="middle"
                  className="cell-text" fill={dark ? '#fff' : '#111'}>{fitNumber(v, chars)}</text>
          )}
          {hl && <rect x={x + 2} y={y + 2} width={size - 4} height={size - 4}
                       className={`lit lit-${tone}`} />}
        </g>,
      );
    }
  }
  const axisNums = [];
  for (let c = 0; c < spec.width; c++) {
    axisNums.push(<text key={`c${c}`} x={gap + c * size + size / 2} y={11} textAnchor="middle"
                        className="axis-num">{c}</text>);
  }
  for (let r = 0; r < spec.height; r++) {
    axisNums.push(<text key={`r${r}`} x={gap - 4} y={gap + r * size + size / 2 + 4}
                        textAnchor="end" className="axis-num">{r}</text>);
  }
  return (
    <figure className="gridmap">
      {caption && <figcaption>{caption}</figcaption>}
      <svg width={W} height={H} tabIndex={0} role="grid" data-testid={`grid-${name}`}
           aria-label={`${name}: ${spec.height} by ${spec.width}${onPick
             ? '; arrow keys move, Enter explains the element' : ''}`}
           onKeyDown={onKey}>
        {axisNums}
        {rects}
        {pickedKey && (() => {
          const [r, c] = pickedKey.split(',').map(Number);
          return <rect x={gap + c * size + 1} y={gap + r * size + 1} width={size - 2}
                       height={size - 2} className="picked" data-testid={`picked-${name}`} />;
        })()}
        {cursor && (
          <rect x={gap + cursor.c * size} y={gap + cursor.r * size} width={size} height={size}
                className="cursor" />
        )}
      </svg>
    </figure>
  );
}
