/* TrainPanel.jsx - the Training tab: the metrics plot on the left; on the right each trained
 * Variable as a grid of tiles beside its gradient, and the selected block's activation, all
 * refreshed while the page trains; under them the backward pass: "Build backward pass" of a
 * scalar loss with an optimizer (SGD, Momentum, Adam and its learning rate), laid out mirrored
 * to the right of the forward blocks by the server, and "Check backward pass", which marks each
 * Variable's gradient block green or red on the canvas with its relative error. */
import React, {useEffect, useMemo, useState, useSyncExternalStore} from 'react';
import {awaitJob} from '../api/teach.js';
import {optimizerText, scalarRefs, trainables} from '../model/training.js';
import MetricsPanel from './MetricsPanel.jsx';
import FilterGrid from './FilterGrid.jsx';

const blockOf = (ref) => String(ref).split(':')[0];

export default function TrainPanel({training, api, events, page, check, selectedBlock,
                                    onBackwardBuilt, onMarks}) {
  const t = useSyncExternalStore(training.subscribe, training.getSnapshot);
  const trained = useMemo(() => trainables(page), [page]);
  const scalars = useMemo(() => scalarRefs(check), [check]);
  const info = (check && check.blocks) || {};
  /* the selected block's activation, when it is not already shown */
  const sel = selectedBlock && !trained.some((x) => x.variable === selectedBlock.id ||
                                                    blockOf(x.gradient) === selectedBlock.id)
    ? selectedBlock.id : null;
  const selShape = sel && info[sel] && Object.values(info[sel].outputs || {})[0];
  const activation = selShape && Array.isArray(selShape.shape) && selShape.shape.length >= 1 &&
    selShape.shape.every((d) => d > 0) ? sel : null;
  /* what is watched follows the page as it is now: update blocks added while it is open
   * (a backward pass built, redone) are watched from then on, and when the last one goes (an
   * undo) nothing is; a page without update blocks never trains, so its activation neither */
  const watch = useMemo(() => (trained.length
    ? [...trained.flatMap((x) => [x.variable, x.gradient].filter(Boolean)),
       ...(activation ? [activation] : [])]
    : []), [trained, activation]);
  const watchKey = watch.join(',');
  useEffect(() => {
    if (!t.page || (!watch.length && !training.getSnapshot().watch.length)) return;
    if (activation && selShape.shape.length === 4) training.slices[activation] = '0:1';
    training.configure({watch});
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [watchKey, t.page]);

  const outputs = (page && page.outputs) || [];
  const [loss, setLoss] = useState('');
  const lossRef = loss || (selectedBlock && scalars.includes(selectedBlock.id) ? selectedBlock.id
    : outputs.find((o) => scalars.includes(o)) || scalars[0] || '');
  const [opt, setOpt] = useState('sgd');
  const [lr, setLr] = useState('0.1');
  const [busy, setBusy] = useState(false);
  const [checked, setChecked] = useState(null);
  const [error, setError] = useState(null);

  const build = async () => {
    setBusy(true); setError(null);
    try {
      const res = await training.buildBackward(lossRef, optimizerText(opt, lr));
      await onBackwardBuilt(res);
    } catch (e) {
      setError(`Backward pass not built: ${e.message}`);
    } finally { setBusy(false); }
  };
  const runCheck = async () => {
    setBusy(true); setError(null); setChecked(null);
    try {
      const result = await awaitJob(api, events, await training.checkBackward(lossRef));
      setChecked(result);
      const marks = {};
      for (const v of result.variables || []) {
        marks[blockOf(v.gradient)] = {ok: v.pass, text: `rel. error ${Number(v.max_rel_error).toExponential(2)}`};
      }
      onMarks(marks);
    } catch (e) {
      setError(`Check failed: ${e.message}`);
    } finally { setBusy(false); }
  };
  const paused = t.state !== 'running' && t.state !== 'stepping';

  return (
    <div className="trainpanel">
      <MetricsPanel training={training} scalars={scalars} />
      <div className="trainpanel-right">
        {trained.length === 0 && (
          <p className="muted">This page has no update blocks yet: build its backward pass
            below (a scalar loss, an optimizer), then press ▶ Play.</p>
        )}
        {trained.map((x) => (
          <div key={x.variable} className="train-var">
            <FilterGrid name={x.variable} title={`${x.variable} (Variable)`} view={t.views[x.variable]} />
            {x.gradient && <FilterGrid name={blockOf(x.gradient)} title={`${x.gradient} (its gradient)`}
                                       view={t.views[x.gradient]} size={48} />}
          </div>
        ))}
        {trained.length > 0 && activation && (
          <FilterGrid name={activation} title={`${activation} (activation, first image)`}
                      view={t.views[activation]}
                      layout={t.views[activation] && t.views[activation].shape.length === 4
                        ? 'nhwc' : 'hwio'} />
        )}
        <div className="backward">
          <h3>Backward pass</h3>
          <label>loss <select value={lossRef} onChange={(e) => setLoss(e.target.value)} aria-label="Loss block">
            {scalars.map((s) => <option key={s} value={s}>{s}</option>)}
          </select></label>
          <label>optimizer <select value={opt} onChange={(e) => setOpt(e.target.value)} aria-label="Optimizer">
            <option value="none">none (gradients only)</option>
            <option value="sgd">SGD</option>
            <option value="momentum">Momentum (0.9)</option>
            <option value="adam">Adam</option>
          </select></label>
          <label>learning rate <input type="number" step="any" min="0" value={lr} style={{width: 70}}
                                      onChange={(e) => setLr(e.target.value)} aria-label="Learning rate" /></label>
          <div className="backward-buttons">
            <button disabled={busy || !paused || !lossRef} onClick={build}
                    title="Add the gradient blocks of the whole page (tf.gradients) and the optimizer's update blocks, mirrored to the right">
              Build backward pass{opt !== 'none' ? ' + add optimizer' : ''}
            </button>
            <button disabled={busy || !paused || !lossRef || !trained.length} onClick={runCheck}
                    data-testid="check-backward"
                    title="Compare each applied gradient with finite differences of the loss">
              Check backward pass
            </button>
          </div>
          {!paused && <div className="muted">Pause to change the backward pass.</div>}
          {error && <div className="err">{error}</div>}
          {checked && (
            <table className="check-table" data-testid="check-result">
              <tbody>
                {(checked.variables || []).map((v) => (
                  <tr key={v.variable} className={v.pass ? 'ok' : 'bad'}>
                    <td>{v.pass ? '✓' : '✗'}</td><td>{v.variable}</td><td>{v.gradient}</td>
                    <td>{v.n_checked}/{v.n_elements}</td>
                    <td>{Number(v.max_rel_error).toExponential(2)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      </div>
    </div>
  );
}
