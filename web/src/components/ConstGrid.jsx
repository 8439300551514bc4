/* ConstGrid.jsx - a small constant's values as editable grids (one per batch/channel slice,
 * laid out as the constant is wired: NHWC/NCHW, HWIO or depthwise HWCM). Each number is
 * committed on Enter or when the box loses focus, as one set_attr edit of `value`; the App
 * then re-runs the page, which recomputes only the blocks that depend on it. */
import React, {useEffect, useState} from 'react';
import {cellIndex, fmt, widestAxes} from '../model/tensor.js';
import {constGrid, constLayout, flatIndex} from '../model/teach.js';

function Cell({label, value, chars, onCommit}) {
  const [t, setT] = useState(String(value));
  const [bad, setBad] = useState(false);
  useEffect(() => { setT(String(value)); setBad(false); }, [value]);
  const commit = () => {
    const v = Number(t);
    if (t.trim() === '' || !Number.isFinite(v)) { setBad(true); return; }
    setBad(false);
    if (v !== value) onCommit(v);
  };
  return (
    <input type="text" inputMode="decimal" className={`const-cell ${bad ? 'bad' : ''}`}
           style={{width: `${chars}ch`}}
           value={t} aria-label={label} aria-invalid={bad} data-testid={`cell-${label}`}
           onChange={(e) => setT(e.target.value)} onBlur={commit}
           onKeyDown={(e) => { if (e.key === 'Enter') commit(); }} />
  );
}

export default function ConstGrid({page, block, onEditValue}) {
  const a = block.attrs || {};
  /* the layout its wiring gives it (a filter is HWIO), else plain axes: the two largest */
  const named = constLayout(page, block.id);
  const layout = named || (Array.isArray(a.shape) ? widestAxes(a.shape) : null);
  const g = constGrid(a.shape, a.value, layout);
  if (!g || a.file !== undefined) return null;
  /* every box wide enough for the longest number it holds */
  const chars = Math.max(4, ...g.values.map((v) => fmt(v).length)) + 1;
  const caption = (t) => (named ? t.label
    : `[${a.shape.map((_, ax) => (ax === t.spec.rows || ax === t.spec.cols ? ':'
                                                                        : t.picks[ax] || 0)).join(', ')}]`);
  const commit = (idx, v) => {
    const values = g.values.slice();
    values[flatIndex(a.shape, idx)] = /int/.test(a.dtype || '') ? Math.trunc(v) : v;
    onEditValue([{op: 'set_attr', block: block.id, attr: 'value', value: values}],
                {key: `attr:${block.id}:value`});
  };
  return (
    <div className="const-grid" data-testid="const-grid">
      <h3>Values <span className="muted">({named || `shape [${a.shape.join(', ')}]`}; Enter applies and re-runs)</span></h3>
      {g.tables.map((t) => (
        <table key={t.label || 'all'} className="const-table">
          {t.label && <caption>{caption(t)}</caption>}
          <tbody>
            {Array.from({length: t.spec.height}, (_, r) => (
              <tr key={r}>
                {Array.from({length: t.spec.width}, (_, c) => {
                  const idx = cellIndex(a.shape, t.spec, r, c);
                  return (
                    <td key={c}>
                      <Cell label={`${block.id}[${idx.join(',')}]`} chars={chars}
                            value={g.values[flatIndex(a.shape, idx)]}
                            onCommit={(v) => commit(idx, v)} />
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      ))}
    </div>
  );
}
