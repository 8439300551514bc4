/* ScalarSlider.jsx - a slider for a scalar Const (a learning rate, a momentum): drag it while
 * the page trains and the new value applies at the next step, without a reset. Positive
 * values move on a log scale (1e-5 ... 10), others on a linear one around the value. */
import React, {useState} from 'react';

const LOG_MIN = -5;
const LOG_MAX = 1;

export function scalarOf(block) {
  const a = (block && block.attrs) || {};
  if (a.dtype && !/^(float|bfloat|half)/.test(a.dtype)) return null;
  if (Array.isArray(a.shape) && a.shape.length) return null;
  return typeof a.value === 'number' ? a.value : null;
}

export default function ScalarSlider({block, onChange}) {
  const v = scalarOf(block);
  const [lin] = useState(() => Math.max(1, Math.abs(v || 1) * 2));
  if (v === null) return null;
  const log = v > 0;
  const pos = log ? Math.log10(v) : v;
  const set = (x) => {
    const value = log ? Number((10 ** x).toPrecision(3)) : Number(x.toPrecision(4));
    onChange([{op: 'set_attr', block: block.id, attr: 'value', value}],
             {key: `slider:${block.id}`});
  };
  return (
    <div className="scalar-slider">
      <label htmlFor={`slider-${block.id}`}>value <b data-testid="slider-value">{v}</b>
        <span className="muted"> (applies at the next step while training)</span></label>
      <input id={`slider-${block.id}`} type="range" data-testid={`slider-${block.id}`}
             min={log ? LOG_MIN : -lin} max={log ? LOG_MAX : lin} step={log ? 0.01 : lin / 100}
             value={pos} onChange={(e) => set(Number(e.target.value))}
             aria-label={`${block.id} value${log ? ' (log scale)' : ''}`} />
    </div>
  );
}
