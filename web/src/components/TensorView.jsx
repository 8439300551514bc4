/* TensorView.jsx - one block's output after a run: shape, dtype, min, max, mean, std and
 * NaN/Inf counts, a heatmap of a 2-D slice (for 4-D: the batch and channel, or for a filter
 * the in/out channel, in the right layout), values on hover, and the .npy download. */
import React, {useEffect, useMemo, useState} from 'react';
import {LAYOUT_NAMES, defaultLayout, fmt, sliceSpec} from '../model/tensor.js';
import Heatmap from './Heatmap.jsx';

/* the panel's height that is not the heatmap's: its tabs, the slice pickers, the value line,
 * the colour scale and the paddings */
const CHROME = 140;

export default function TensorView({api, run, block, index, onRunTo, gate, room = 300}) {
  const entry = block && index ? index.byType.get(block.type) : null;
  const outputs = entry ? entry.outputs.map((o) => o.name) : ['output'];
  const [port, setPort] = useState(outputs[0]);
  const [summary, setSummary] = useState(null);
  const [err, setErr] = useState(null);
  const [layout, setLayout] = useState('NHWC');
  const [picks, setPicks] = useState({});
  const [win, setWin] = useState(null);
  const spec = block ? (port === outputs[0] ? block.id : `${block.id}:${port}`) : null;
  /* a teaching job (explain, gradcheck) since the run replaced its tensors */
  const replaced = !!(gate && (gate.jobSinceRun || gate.running));
  const edited = !!((gate && gate.edited) || (run && run.stale));
  const ready = run && run.id && run.state === 'finished' && !replaced && !edited;

  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  useEffect(() => { setPort(outputs[0]); setPicks({}); }, [block && block.id]);
  useEffect(() => { if (block) setLayout(defaultLayout(block.type, block.attrs)); },
            // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
            [block && block.id, block && JSON.stringify(block.attrs)]);
  useEffect(() => {
    setSummary(null); setWin(null); setErr(null);
    if (!ready || !spec) return;
    api.tensor(run.id, spec, 'summary').then(setSummary).catch((e) => setErr(e));
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  }, [ready, run && run.id, spec]);

  const sl = useMemo(() => (summary ? sliceSpec(summary.shape, layout, picks) : null),
                     [summary, layout, picks]);
  useEffect(() => {
    if (!sl || !summary) return;
    api.tensor(run.id, spec, 'values', sl.slice).then(setWin).catch((e) => setErr(e));
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  }, [sl && sl.slice, summary]);

  if (!block) return <p className="muted">Select a block to see its output after a run.</p>;
  if (!ready || (err && (err.status === 404 || err.status === 410))) {
    return (
      <div className="muted">
        <p>{run && run.state === 'running' ? 'Running…'
          : !run || !run.id ? `The page has not run yet: run it to see “${block.id}”'s output.`
          : edited || (err && err.status === 410) ? 'The page changed since the last run: run it again to see this output.'
          : replaced ? 'The Teach tab ran the page since the last run: run it again to see this output.'
          : err && err.status === 404 ? `The last run did not compute “${block.id}”.`
          : `No result for “${block.id}” yet.`}</p>
        <button onClick={() => onRunTo(block.id)}>▶ Run to “{block.id}”</button>
      </div>
    );
  }
  if (err) return <p className="err">{err.message}</p>;
  if (!summary) return <p className="muted">Loading…</p>;
  const shape = summary.shape;
  return (
    <div className="tensor-view" data-testid="tensor-view">
      <div className="tensor-side">
        {outputs.length > 1 && (
          <label className="field">Output port
            <select value={port} onChange={(e) => setPort(e.target.value)}>
              {outputs.map((o) => <option key={o}>{o}</option>)}
            </select>
          </label>
        )}
        <table className="summary" data-testid="summary">
          <tbody>
            <tr><th>tensor</th><td>{summary.tensor}</td></tr>
            <tr><th>dtype</th><td>{summary.dtype}</td></tr>
            <tr><th>shape</th><td>[{shape.join(', ')}]</td></tr>
            <tr><th>min</th><td>{fmt(summary.min)}</td></tr>
            <tr><th>max</th><td>{fmt(summary.max)}</td></tr>
            <tr><th>mean</th><td>{fmt(summary.mean)}</td></tr>
            {'std' in summary && <tr><th>std</th><td>{fmt(summary.std)}</td></tr>}
            <tr><th>NaN / Inf</th><td>{summary.nan ?? summary.nan_count ?? 0} / {summary.inf ?? summary.inf_count ?? 0}</td></tr>
          </tbody>
        </table>
        <a className="button" href={api.tensorUrl(run.id, spec, 'npy')} download={`${spec.replace(':', '.')}.npy`}>
          ⤓ Download .npy</a>
      </div>
      <div className="tensor-main">
        {shape.length === 4 && (
          <label className="inline">layout
            <select value={layout} onChange={(e) => setLayout(e.target.value)} aria-label="Layout">
              {LAYOUT_NAMES.map((l) => <option key={l}>{l}</option>)}
            </select>
          </label>
        )}
        {sl && sl.pickers.map((p) => (
          <label key={p.axis} className="inline">{p.name}
            <input type="number" min={0} max={p.size - 1} value={p.index} aria-label={p.name}
                   onChange={(e) => setPicks({...picks, [p.axis]: Number(e.target.value)})} />
            <span className="muted">of {p.size}</span>
          </label>
        ))}
        {sl && win && (
          <Heatmap name={block.id} shape={shape} spec={sl} values={win.values}
                   min={summary.min} max={summary.max}
                   maxHeight={Math.max(60, room - CHROME)} />
        )}
      </div>
    </div>
  );
}
