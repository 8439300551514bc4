/* Heatmap.jsx - a 2-D slice drawn cell by cell on a canvas, its colour scale with numbers,
 * and the value under the pointer (dw[1, 2, 0, 0] = 325). The scale spans the whole tensor's
 * min and max, so slices compare. Cells are 4 to 48 px: the slice fits 360 px across and
 * `maxHeight` px down (the room the panel under the canvas leaves it). */
import React, {useEffect, useRef, useState} from 'react';
import {cellIndex, colorScale, fmt, windowValue} from '../model/tensor.js';

export default function Heatmap({name, shape, spec, values, min, max, maxHeight = 360}) {
  const canvas = useRef(null);
  const [hover, setHover] = useState(null);
  const scale = colorScale(min, max);
  const cell = Math.max(4, Math.min(48, Math.floor(360 / spec.width),
                                    Math.floor(maxHeight / spec.height)));
  const W = spec.width * cell;
  const H = spec.height * cell;
  useEffect(() => {
    const ctx = canvas.current.getContext('2d');
    for (let r = 0; r < spec.height; r++) {
      for (let c = 0; c < spec.width; c++) {
        const [R, G, B] = scale.color(windowValue(values, spec, r, c));
        ctx.fillStyle = `rgb(${R},${G},${B})`;
        ctx.fillRect(c * cell, r * cell, cell, cell);
      }
    }
  });
  const onMove = (e) => {
    const rect = canvas.current.getBoundingClientRect();
    const c = Math.floor((e.clientX - rect.left) / cell);
    const r = Math.floor((e.clientY - rect.top) / cell);
    if (r < 0 || c < 0 || r >= spec.height || c >= spec.width) { setHover(null); return; }
    setHover({idx: cellIndex(shape, spec, r, c), v: windowValue(values, spec, r, c)});
  };
  const stops = Array.from({length: 11}, (_, i) => {
    const [R, G, B] = scale.color(scale.lo + (scale.hi - scale.lo) * (i / 10));
    return `rgb(${R},${G},${B}) ${i * 10}%`;
  });
  return (
    <div className="heatmap">
      <div className="hover" data-testid="hover-value" aria-live="polite">
        {hover ? `${name}[${hover.idx.join(', ')}] = ${fmt(hover.v)}` : 'Point at a cell to read its value.'}
      </div>
      <canvas ref={canvas} width={W} height={H} data-testid="heatmap" onMouseMove={onMove}
              onMouseLeave={() => setHover(null)} role="img"
              aria-label={`heatmap of ${name}, ${spec.height} by ${spec.width}`} />
      <div className="colorbar" style={{width: Math.max(W, 200)}}>
        <div className="bar" style={{background: `linear-gradient(to right, ${stops.join(', ')})`}} />
        <div className="ticks"><span>{fmt(scale.lo)}</span>
          <span>{fmt((scale.lo + scale.hi) / 2)}</span><span>{fmt(scale.hi)}</span></div>
      </div>
    </div>
  );
}
