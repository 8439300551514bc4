/* FilterGrid.jsx - a Variable, its gradient or an activation as a grid of small heatmap tiles:
 * a conv filter [kh, kw, in, out] as one tile per output channel (per input channel too, up to
 * four), as ConvNetJS shows a layer's filters; a matrix as one tile. One colour scale for the
 * whole tensor (blue negative, white zero, red positive), so tiles compare. Each tile carries
 * its values (data-values) and shows the one under the pointer. */
import React, {memo, useEffect, useMemo, useRef, useState} from 'react';
import {filterTiles, tileNumber} from '../model/training.js';

function color(v, lim) {
  if (v === null || !Number.isFinite(v)) return 'rgb(160,160,160)';
  const x = lim > 0 ? Math.max(-1, Math.min(1, v / lim)) : 0;
  const a = Math.round(255 * (1 - Math.abs(x)));
  return x >= 0 ? `rgb(255,${a},${a})` : `rgb(${a},${a},255)`;
}

const Tile = memo(function Tile({tile, lim, cell, name, onHover}) {
  const ref = useRef(null);
  useEffect(() => {
    const ctx = ref.current.getContext('2d');
    const drawn = []; /* [text, font px] of each number: the browser tests measure them */
    for (let r = 0; r < tile.rows; r++) {
      for (let c = 0; c < tile.cols; c++) {
        const v = tile.values[r * tile.cols + c];
        ctx.fillStyle = color(v, lim);
        ctx.fillRect(c * cell, r * cell, cell, cell);
        const text = cell >= 34 ? tileNumber(v, lim) : ''; /* big cells: the numbers too */
        if (!text) continue;
        /* the font that fits the cell with 3 px each side: smaller for a long number, none
         * below 7 px (the colour still says it) */
        let px = Math.floor(cell / 3.4);
        ctx.font = `${px}px ui-monospace, monospace`;
        const width = ctx.measureText(text).width;
        if (width > cell - 6) px = Math.floor((px * (cell - 6)) / width);
        if (px < 7) continue;
        ctx.font = `${px}px ui-monospace, monospace`;
        const x = lim > 0 ? Math.abs(v / lim) : 0;
        ctx.fillStyle = x > 0.55 ? '#fff' : '#1d2733';
        ctx.textAlign = 'center';
        ctx.textBaseline = 'middle';
        ctx.fillText(text, (c + 0.5) * cell, (r + 0.5) * cell);
        drawn.push([text, px]);
      }
    }
    ref.current.dataset.numbers = drawn.length <= 256 ? JSON.stringify(drawn) : '';
    ref.current.dataset.cell = String(cell);
  }, [tile, lim, cell]);
  const move = (e) => {
    const b = ref.current.getBoundingClientRect();
    const c = Math.floor((e.clientX - b.left) / cell);
    const r = Math.floor((e.clientY - b.top) / cell);
    if (r >= 0 && c >= 0 && r < tile.rows && c < tile.cols) {
      onHover(`${name} ${tile.label} [${r}, ${c}] = ${Number(tile.values[r * tile.cols + c]).toPrecision(5)}`);
    }
  };
  return (
    <figure className="tile">
      <canvas ref={ref} width={tile.cols * cell} height={tile.rows * cell}
              data-testid={`tile-${name}-${tile.out ?? 0}-${tile.in ?? 0}`}
              data-values={tile.values.length <= 256 ? JSON.stringify(tile.values) : undefined}
              onMouseMove={move}
              onMouseLeave={() => onHover(null)} role="img"
              aria-label={`${name} ${tile.label}, ${tile.rows} by ${tile.cols}`} />
      <figcaption>{tile.label}</figcaption>
    </figure>
  );
});

/* memo: the panel re-renders at every step event; a grid only when its tensor was read again */
export default memo(function FilterGrid({name, title, view, size = 72, layout = 'hwio'}) {
  const [hover, setHover] = useState(null);
  const grid = useMemo(() => (view ? filterTiles(view.shape, view.values, {layout}) : null),
                       [view, layout]);
  if (!grid) {
    return <div className="filtergrid muted">{title}: after the next step</div>;
  }
  const {tiles, min, max} = grid;
  const lim = Math.max(Math.abs(min), Math.abs(max));
  const big = tiles.length === 1 ? Math.max(tiles[0].rows, tiles[0].cols) : Math.max(...tiles.map((t) => Math.max(t.rows, t.cols)));
  const cell = Math.max(2, Math.min(tiles.length <= 2 ? 46 : 24,
                                    Math.floor((tiles.length <= 2 ? 2.2 * size : size) / big)));
  return (
    <div className="filtergrid" data-testid={`grid-${name}`}>
      <div className="filtergrid-head">
        <b>{title}</b> <span className="muted">[{view.shape.join(', ')}] · ±{lim === 0 ? '0' : lim < 1e-3 || lim >= 1e4
          ? lim.toExponential(2) : lim.toPrecision(3)}</span>
      </div>
      <div className="tiles">
        {tiles.map((t, i) => <Tile key={i} tile={t} lim={lim} cell={cell} name={name} onHover={setHover} />)}
      </div>
      <div className="muted tile-hover" aria-live="polite">{hover || '\u00a0'}</div>
    </div>
  );
});
