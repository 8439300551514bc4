/* TeachPanel.jsx - the Teach tab of a convolution block (README "Teaching"): where every
 * number comes from. Click (or hover, or pick with the arrow keys and Enter) an element of the
 * block's output: the server's explain lists the terms of its sum, the operand elements light
 * up on their own heatmaps (each in its own layout: NHWC/NCHW, HWIO, depthwise [fh,fw,C,M]),
 * the products and their sum are listed against the value, and the padding view shows the
 * input grid with its padding ring and the window's taps (those in the padding outlined on the
 * ring, from explain's padded_taps). Also: the gradient check of the
 * block, and "Add gradient blocks" on a forward block. The geometry is the server's; tensors
 * are read from the explain job's run, which holds the block and its inputs. */
import React, {useCallback, useEffect, useMemo, useRef, useState} from 'react';
import {explain, gradcheck} from '../api/teach.js';
import {fmt, sliceSpec} from '../model/tensor.js';
import {bestPicks, cellsOnSlice, depthwiseChannel, isDepthwise, isForward, isGradient,
        outputSizeText, paddedTaps, picksFor, ringTapsOnSlice, spatialAxes, strideDilation,
        sumOfProducts, tensorLayout, termsByTensor} from '../model/teach.js';
import GridMap from './GridMap.jsx';
import PaddingView from './PaddingView.jsx';

/**
 * A slice of tensor `spec` of run `runId`: {summary, values, sl, err}. `gate` serialises the
 * reads with the explain jobs (a job makes the page busy, and a read meanwhile would get 410)
 * and skips reads of a run that a newer job has replaced.
 */
function useSlice(api, gate, runId, spec, layout, picks) {
  const [summary, setSummary] = useState(null);
  const [win, setWin] = useState(null);
  const [err, setErr] = useState(null);
  useEffect(() => {
    setErr(null);
    if (!runId || !spec) return;
    let live = true;
    gate.read(runId, () => api.tensor(runId, spec, 'summary'))
      .then((s) => live && s && setSummary(s)).catch((e) => live && setErr(e));
    return () => { live = false; };
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  }, [runId, spec]);
  const sl = useMemo(() => (summary ? sliceSpec(summary.shape, layout, picks) : null),
                     // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
                     [summary, layout, JSON.stringify(picks)]);
  useEffect(() => {
    if (!sl || !runId || summary.run_id !== runId) return;
    let live = true;
    gate.read(runId, () => api.tensor(runId, spec, 'values', sl.slice))
      .then((w) => live && w && setWin({slice: sl.slice, w})).catch((e) => live && setErr(e));
    return () => { live = false; };
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  }, [sl && sl.slice, summary]);
  const ready = summary && win && sl && win.slice === sl.slice && summary.run_id === runId;
  return {summary, values: ready ? win.w.values : null, sl: ready ? sl : null, err};
}

function Pickers({sl, picks, setPicks, note}) {
  return (
    <div className="pickers">
      {sl.pickers.map((p) => (
        <label key={p.axis} className="inline">{p.name}
          <input type="number" min={0} max={p.size - 1} value={p.index} aria-label={p.name}
                 onChange={(e) => setPicks({...picks, [p.axis]: Number(e.target.value)})} />
          <span className="muted">of {p.size}</span>
        </label>
      ))}
      {note}
    </div>
  );
}

/** One tensor of the explanation: its heatmap slice, its lit elements, and its pickers. */
function TensorMap({api, gate, runId, spec, name, title, layout, initialPicks, elements, picked,
                    onPick, onHover, tone, note, onGone}) {
  const [picks, setPicks] = useState(initialPicks || {});
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  useEffect(() => setPicks(initialPicks || {}), [JSON.stringify(initialPicks)]);
  const {summary, values, sl, err} = useSlice(api, gate, runId, spec, layout, picks);
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  useEffect(() => { if (err && err.status === 410 && onGone) onGone(); }, [err]);
  if (err && err.status !== 410) return <div className="err">{title}: {err.message}</div>;
  if (!sl) return <div className="gridmap muted">{title}: loading…</div>;
  const on = elements ? cellsOnSlice(elements, sl) : {cells: [], elsewhere: 0};
  const pk = picked && sl.pickers.every((p) => picked[p.axis] === p.index)
    ? {row: sl.rows >= 0 ? picked[sl.rows] : 0, col: sl.cols >= 0 ? picked[sl.cols] : 0} : null;
  return (
    <div className="tensor-map">
      <GridMap name={name} shape={summary.shape} spec={sl} values={values} min={summary.min}
               max={summary.max} cells={on.cells} picked={pk} onPick={onPick} onHover={onHover}
               tone={tone}
               caption={<><b>{title}</b> <span className="muted">{spec} [{summary.shape.join(', ')}] {layout}</span></>} />
      <Pickers sl={sl} picks={picks} setPicks={setPicks} note={typeof note === 'function' ? note(sl) : note} />
      {elements && (
        <div className="muted small" data-testid={`lit-count-${name}`}>
          {on.cells.length} of {elements.length} term{elements.length === 1 ? '' : 's'} on this slice
          {on.elsewhere > 0 && `; ${on.elsewhere} on other slices (change ${sl.pickers.map((p) => p.name).join(' / ')})`}
        </div>
      )}
    </div>
  );
}

function GradcheckResult({gc}) {
  if (gc.running) return <div className="gradcheck muted" data-testid="gradcheck">Checking the gradient in float64…</div>;
  if (gc.error) return <div className="gradcheck err" data-testid="gradcheck">Gradient check failed to run: {gc.error}</div>;
  const r = gc.result;
  const ok = (b) => <span className={b ? 'pass' : 'fail'}>{b ? '✓ ok' : '✗ FAIL'}</span>;
  return (
    <div className="gradcheck" data-testid="gradcheck" data-pass={String(!!r.pass)}>
      <div className={`verdict ${r.pass ? 'pass' : 'fail'}`} data-testid="gradcheck-verdict">
        {r.pass ? 'PASS' : 'FAIL'}: {r.block} ({r.type})
        {r.forward ? ` against forward block ${r.forward}` : ''}: central differences in float64,
        step {r.eps} relative, tolerance {r.tolerance}
      </div>
      <table className="gc-table">
        <thead><tr><th>gradient</th><th>block type</th><th>elements checked</th>
          <th>max relative error</th><th>at</th><th>finite difference</th><th>analytic</th><th /></tr></thead>
        <tbody>
          {(r.checks || []).map((c) => (
            <tr key={c.wrt}><td>d/d{c.wrt}</td><td>{c.gradient_type}</td>
              <td>{c.n_checked} of {c.n_elements}{c.sampled ? ' (sampled)' : ''}</td>
              <td>{Number(c.max_rel_error).toExponential(2)}</td>
              <td>[{(c.worst_index || []).join(',')}]</td><td>{fmt(c.fd)}</td><td>{fmt(c.analytic)}</td>
              <td>{ok(c.pass)}</td></tr>
          ))}
          {r.adjoint && (
            <tr><td>adjoint</td><td colSpan={2}>sum(y·dy) = {fmt(r.adjoint.forward)}
              {'input' in r.adjoint && <>, sum(x·dx) = {fmt(r.adjoint.input)}</>}
              {'filter' in r.adjoint && <>, sum(w·dw) = {fmt(r.adjoint.filter)}</>}</td>
              <td>{Number(r.adjoint.max_rel_error).toExponential(2)}</td><td colSpan={3} />
              <td>{ok(r.adjoint.pass)}</td></tr>
          )}
          {r.output_vs_f64 && (
            <tr><td>own output</td><td colSpan={2}>the block's {r.output_vs_f64.dtype} output vs the float64 kernel</td>
              <td>{Number(r.output_vs_f64.max_rel_diff).toExponential(2)}</td>
              <td colSpan={3}>tolerance {r.output_vs_f64.tolerance}</td><td>{ok(r.output_vs_f64.pass)}</td></tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

function TermsTable({result, blockId}) {
  const sum = sumOfProducts(result);
  const shown = result.terms.length;
  const close = Math.abs(result.sum - result.value) <= 1e-5 * Math.max(1, result.abs_sum || 0);
  return (
    <div className="terms">
      <div className="sum-line" data-testid="sum-line">
        <b>{blockId}[{result.index.join(', ')}] = {fmt(result.value)}</b>
        {' '}= sum of {result.n_terms} product{result.n_terms === 1 ? '' : 's'}
        {' '}{result.operands.a} × {result.operands.b} = <span data-testid="terms-sum">{fmt(result.sum)}</span>
        {' '}<span className={close ? 'pass' : 'fail'}>{close ? '✓ equal' : '✗ differs'}</span>
        {result.n_padded > 0 && <span className="muted"> · {result.n_padded} tap{result.n_padded > 1 ? 's' : ''} fell in the padding (read 0: no terms; outlined on the ring of the padding view)</span>}
      </div>
      <table className="terms-table" data-testid="terms-table">
        <thead><tr><th>#</th><th>{result.operands.a}</th><th /><th>{result.operands.b}</th><th>product</th></tr></thead>
        <tbody>
          {result.terms.map((t, k) => (
            <tr key={k} data-testid="term">
              <td>{k + 1}</td>
              <td><code>{t.a.tensor}[{t.a.index.join(',')}]</code> = <span className="va">{fmt(t.a.value)}</span></td>
              <td>×</td>
              <td><code>{t.b.tensor}[{t.b.index.join(',')}]</code> = <span className="vb">{fmt(t.b.value)}</span></td>
              <td>{fmt(t.a.value * t.b.value)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot><tr><td /><td colSpan={3}>{result.truncated ? `the first ${shown} of ${result.n_terms} terms (the sum covers all)` : 'sum of the products'}</td>
          <td>{fmt(result.truncated ? result.sum : sum)}</td></tr></tfoot>
      </table>
    </div>
  );
}

export default function TeachPanel({api, events, gate, docName, block, check, run,
                                    onAddGradients}) {
  const info = check && check.blocks && check.blocks[block.id];
  const outShape = info && info.outputs && info.outputs.output && info.outputs.output.shape;
  const [sel, setSel] = useState(null);
  const [result, setResult] = useState(null);
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const [gc, setGc] = useState(null);
  const inflight = useRef(false);
  const pending = useRef(null);
  const selRef = useRef(null);
  const attrs = block.attrs || {};
  const type = block.type;

  const runExplain = useCallback(async (index) => {
    if (gate.running) { selRef.current = index; return; } /* explained when the run ends */
    if (inflight.current) { pending.current = index; return; }
    inflight.current = true;
    setBusy(true);
    let next = index;
    while (next) {
      pending.current = null;
      selRef.current = next;
      setSel(next);
      for (let tries = 0; ; tries++) {
        try {
          const r = await gate.job(() => explain(api, events, docName,
                                                 {block: block.id, index: next, maxTerms: 2000}));
          if (selRef.current === next) { setResult(r); setErr(null); }
        } catch (e) {
          /* the page's own run got there first: wait for it */
          if (e.code === 'busy' && tries < 20 && !pending.current) {
            await new Promise((ok) => setTimeout(ok, 300));
            continue;
          }
          setErr(e.message);
        }
        break;
      }
      next = pending.current;
    }
    inflight.current = false;
    setBusy(false);
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  }, [api, events, docName, block.id]);

  /* the first element on opening, and again after a run or a change of the page */
  const runDone = run && run.state === 'finished' ? run.id : null;
  useEffect(() => { setResult(null); setGc(null); selRef.current = null; setSel(null); },
            [block.id, docName]);
  useEffect(() => {
    if (!outShape || (run && run.state === 'running')) return;
    const cur = selRef.current;
    const fits = cur && cur.length === outShape.length && cur.every((v, i) => v < outShape[i]);
    runExplain(fits ? cur : outShape.map(() => 0));
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  }, [block.id, JSON.stringify(outShape), runDone, JSON.stringify(attrs), check]);

  const checkGradient = async () => {
    setGc({running: true});
    try {
      setGc({result: await gate.job(() => gradcheck(api, events, docName, {block: block.id}))});
    } catch (e) {
      setGc({error: e.message});
    }
    /* the check ran the page again: read the explained element's tensors anew */
    if (selRef.current) runExplain(selRef.current);
  };

  const hoverTimer = useRef(null);
  const onHover = (idx) => {
    clearTimeout(hoverTimer.current);
    hoverTimer.current = setTimeout(() => runExplain(idx), 250);
  };
  useEffect(() => () => clearTimeout(hoverTimer.current), []);

  if (!info || !outShape) return <p className="muted">The check has not typed “{block.id}” yet: wire its inputs.</p>;
  const outLayout = tensorLayout(type, attrs, 'output');
  const by = result ? termsByTensor(result) : {};
  const runId = result ? result.run_id : null;
  /* the padding view: the activation the window slides over (the block's own output for the
   * input gradient), with the explained element's taps on it */
  const actName = isGradient(type) && /BackpropInput$/.test(type) ? 'output' : 'input';
  const actSpec = actName === 'output' ? block.id : info.inputs.input && info.inputs.input.source;
  const actLayout = tensorLayout(type, attrs, 'input');
  const actTaps = actName === 'output'
    ? (sel ? [{index: sel, value: result && result.value, term: 0}] : [])
    : by.input || [];
  /* the taps that read padding, on the same grid (none for the input gradient: see
   * conv_explain.c) */
  const ringTaps = actName === 'input' ? paddedTaps(result, 'input') : [];
  const [ha, wa] = spatialAxes(actLayout);
  const shapeOf = (port) => (info.inputs[port] || {}).shape;
  const inShape = actName === 'output' ? outShape : shapeOf('input');
  const fShape = /BackpropFilter$/.test(type) ? outShape : shapeOf('filter');
  const yShape = isForward(type) ? outShape : shapeOf('out_backprop');
  const sd = strideDilation(attrs, actLayout);
  const pad = result && result.padding;
  const formula = pad && inShape && fShape && yShape ? [
    ...outputSizeText(pad.mode, {axis: 'height', n: inShape[ha], k: fShape[0], s: sd.sh, d: sd.dh,
                                 before: pad.top, after: pad.bottom, out: yShape[ha]}),
    ...outputSizeText(pad.mode, {axis: 'width', n: inShape[wa], k: fShape[1], s: sd.sw, d: sd.dw,
                                 before: pad.left, after: pad.right, out: yShape[wa]}),
    `stride ${sd.sh}×${sd.sw}, dilation ${sd.dh}×${sd.dw}, filter ${fShape[0]}×${fShape[1]}`,
  ] : [];
  /* depthwise: an activation channel k of C*M is input channel k / M, multiplier k % M */
  const [C, M] = isDepthwise(type) && fShape ? [fShape[2], fShape[3]] : [0, 0];
  const chanNote = (layout) => (layout === 'NHWC' || layout === 'NCHW') && M > 1 ? (sl) => {
    const p = sl.pickers.find((q) => q.axis === (layout === 'NCHW' ? 1 : 3));
    if (!p || p.size !== C * M) return null;
    const {c, m} = depthwiseChannel(p.index, M);
    return <span className="muted" data-testid="depthwise-note"> channel {p.index} = input channel {c} × {M} + multiplier {m}</span>;
  } : null;

  return (
    <div className="teach" data-testid="teach-panel">
      <div className="teach-head">
        <span>
          <b>Where does each number come from?</b> Click an element of <b>{block.id}</b>
          {isForward(type) ? ' (or point at it)' : ''}: the elements it sums light up and the
          products are listed.
        </span>
        {busy && <span className="muted" data-testid="explain-busy"> explaining…</span>}
        <span className="spacer" />
        <button onClick={checkGradient} data-testid="gradcheck-button"
                title="Compare the gradient with central finite differences in float64">
          ✓ Check gradient</button>
        {isForward(type) && (
          <button onClick={() => onAddGradients(block.id)} data-testid="add-gradients"
                  title="Add the BackpropFilter and BackpropInput blocks, as tf.gradients builds them">
            + Add gradient blocks</button>
        )}
      </div>
      {gc && <GradcheckResult gc={gc} />}
      {err && <div className="err" data-testid="explain-error">{err}</div>}
      {result && runId && (
        <>
          <div className="teach-maps">
            <TensorMap api={api} gate={gate} runId={runId} spec={block.id} name={block.id} key="out"
                       title={`${block.id} (click an element)`} layout={outLayout}
                       initialPicks={sel ? picksFor(sel, outLayout) : {}} picked={sel}
                       onPick={runExplain} onHover={isForward(type) ? onHover : undefined}
                       tone="pick" note={chanNote(outLayout)} onGone={() => runExplain(selRef.current)} />
            {['a', 'b'].map((side) => {
              const t = result.operands[side];
              const src = info.inputs[t] && info.inputs[t].source;
              const layout = tensorLayout(type, attrs, t);
              return src ? (
                <TensorMap key={side} api={api} gate={gate} runId={runId} spec={src} name={t} title={t}
                           layout={layout} initialPicks={bestPicks(by[t], layout)}
                           elements={by[t] || []} tone={side} note={chanNote(layout)} />
              ) : null;
            })}
            <TermsTable result={result} blockId={block.id} />
            {actSpec && <PaddingSlice api={api} gate={gate} runId={runId} spec={actSpec} layout={actLayout}
                                      taps={actTaps} padding={pad} formula={formula}
                                      nPadded={result.n_padded} ringTaps={ringTaps}
                                      ringTruncated={!!result.padded_truncated}
                                      title={actName === 'output'
                                        ? `padding view: ${block.id} (the input's gradient) with its ring`
                                        : `padding view: input with its padding ring`}
                                      tapsLabel={actName === 'output' ? 'the clicked element'
                                        : 'taps of this element (numbered as the terms)'} />}
          </div>
        </>
      )}
    </div>
  );
}

function PaddingSlice({api, gate, runId, spec, layout, taps, padding, formula, nPadded, title,
                       tapsLabel, ringTaps = [], ringTruncated}) {
  /* the slice (batch, channel) holding the most taps, those in the padding included */
  const picks = useMemo(() => bestPicks([...taps, ...ringTaps], layout),
                        // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
                        [JSON.stringify(taps), JSON.stringify(ringTaps), layout]);
  const {summary, values, sl} = useSlice(api, gate, runId, spec, layout, picks);
  if (!sl || !padding) return null;
  const on = cellsOnSlice(taps, sl);
  const ring = ringTapsOnSlice(ringTaps, sl);
  return <PaddingView name={spec} padding={padding} spec={sl} values={values} min={summary.min}
                      max={summary.max} taps={on.cells} title={title} formula={formula}
                      nPadded={nPadded} tapsLabel={tapsLabel} ringTaps={ring.cells}
                      ringElsewhere={ring.elsewhere} ringTruncated={ringTruncated} />;
}
