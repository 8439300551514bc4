/* FeedPanel.jsx - feeding a Placeholder from the editor, as `blockflow run --feed` does: pick
 * a .npy file of the pages folder, fill a small grid of numbers, or upload a .npy file. The
 * feed goes with the next run (the server's session keeps it); the panel says what the block
 * is fed with. */
import React, {useState} from 'react';
import {GRID_DTYPES, encodeNpy, feedProblem, readNpyHeader} from '../model/npy.js';
import {cellIndex, sliceSpec, widestAxes} from '../model/tensor.js';
import {flatIndex} from '../model/teach.js';

const MAX_GRID = 256;

export default function FeedPanel({block, feed, onFeed, files = [], onFeedFile, onRefreshFiles}) {
  const a = block.attrs || {};
  const dtype = a.dtype || 'float32';
  const shape = Array.isArray(a.shape) ? a.shape : null;
  const known = shape && shape.every((d) => Number.isInteger(d) && d > 0);
  const n = known ? shape.reduce((x, d) => x * d, 1) : 0;
  const gridOk = known && n <= MAX_GRID && GRID_DTYPES.includes(dtype);
  const [values, setValues] = useState(() => new Array(n).fill('0'));
  const [fill, setFill] = useState('1');
  const [err, setErr] = useState(null);
  const vals = values.length === n ? values : new Array(n).fill('0');

  const useGrid = () => {
    const nums = vals.map(Number);
    if (nums.some((v) => !Number.isFinite(v))) { setErr('every cell needs a number'); return; }
    setErr(null);
    onFeed(encodeNpy(dtype, shape, nums), {dtype, shape, source: 'grid'});
  };
  const upload = async (file) => {
    if (!file) return;
    try {
      const bytes = new Uint8Array(await file.arrayBuffer());
      const h = readNpyHeader(bytes);
      const why = feedProblem(block, h, file.name);
      if (why) throw new Error(why);
      setErr(null);
      onFeed(bytes, {dtype: h.dtype, shape: h.shape, source: 'upload', name: file.name});
    } catch (e) {
      setErr(e.message);
    }
  };

  const pick = async (path) => {
    if (!path || !onFeedFile) return;
    const why = await onFeedFile(path);
    setErr(why || null);
  };

  const rows = [];
  if (gridOk) {
    const axes = shape.length >= 2 ? widestAxes(shape) : null;
    const base = sliceSpec(shape, axes);
    const tables = [];
    const walk = (k, picks) => {
      if (k === base.pickers.length) { tables.push(sliceSpec(shape, axes, picks)); return; }
      for (let i = 0; i < base.pickers[k].size; i++) walk(k + 1, {...picks, [base.pickers[k].axis]: i});
    };
    walk(0, {});
    for (const spec of tables) {
      rows.push(
        <table key={spec.slice} className="const-table">
          {spec.pickers.length > 0 && <caption>[{spec.slice.split(',').join(', ')}]</caption>}
          <tbody>
            {Array.from({length: spec.height}, (_, r) => (
              <tr key={r}>{Array.from({length: spec.width}, (_, c) => {
                const idx = cellIndex(shape, spec, r, c);
                const f = flatIndex(shape, idx);
                return (
                  <td key={c}>
                    <input type="text" inputMode="decimal" className="const-cell"
                           style={{width: `${Math.max(4, String(vals[f]).length + 1)}ch`}}
                           aria-label={`${block.id}[${idx.join(',')}]`} value={vals[f]}
                           onChange={(e) => { const v = vals.slice(); v[f] = e.target.value; setValues(v); }} />
                  </td>
                );
              })}</tr>
            ))}
          </tbody>
        </table>,
      );
    }
  }
  return (
    <div className="feed-panel" data-testid="feed-panel">
      <h3>Feed</h3>
      <p className="feed-state" data-testid="feed-state">
        {feed ? <>Fed {feed.dtype}[{feed.shape.join(',')}] from {feed.name || feed.source}.</>
          : <span className="err">Not fed yet: a run that needs {block.id} fails until it is.</span>}
      </p>
      {onFeedFile && (
        <label className="field">A .npy file of the pages folder
          <select aria-label={`A .npy file for ${block.id}`} data-testid="feed-file"
                  value={feed && feed.source === 'file' ? feed.name : ''}
                  onFocus={onRefreshFiles} onChange={(e) => pick(e.target.value)}>
            <option value="">{files.length ? 'choose a .npy file…' : 'no .npy file in the pages folder'}</option>
            {files.map((f) => <option key={f} value={f}>{f}</option>)}
          </select>
        </label>
      )}
      {gridOk ? (
        <>
          <div className="feed-fill">
            <label>Every cell
              <input type="text" value={fill} size={6} aria-label="Value for every cell"
                     onChange={(e) => setFill(e.target.value)} />
            </label>
            <button onClick={() => setValues(new Array(n).fill(fill))}>Fill</button>
          </div>
          {rows}
          <button className="primary" onClick={useGrid} data-testid="feed-grid">
            Feed these {n} values
          </button>
        </>
      ) : (
        <p className="muted">{known ? `${n} values: too many to type; choose or upload a .npy.`
          : `The shape [${shape || '?'}] is not fixed: choose or upload a .npy.`}</p>
      )}
      <label className="field">Upload a .npy file
        <input type="file" accept=".npy" aria-label={`Upload a .npy for ${block.id}`}
               onChange={(e) => upload(e.target.files && e.target.files[0])} />
      </label>
      {err && <div className="err" role="alert">{err}</div>}
    </div>
  );
}
