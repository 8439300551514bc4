/* TrainBar.jsx - the training bar of a page that trains: ▶ Play, ⏸ Pause, ⏭ Step, ⟲ Reset,
 * the pace, the step count, the steps per second and the latest metrics. Buttons in the tab
 * order; their shortcuts (Alt+P play or pause, Alt+. one step, Alt+R reset) are actions of
 * the action table (model/actions.js). */
import React, {useSyncExternalStore} from 'react';

/* ⏸ and ⏭ as drawings: not every system font has those two characters */
const PATHS = {
  pause: 'M3 2h3v10H3zM8 2h3v10H8z',
  step: 'M2 2l6 5-6 5zM8 2l4 5-4 5zM11 2h2v10h-2z',
};
function Icon({name}) {
  return (
    <svg className="icon" width="12" height="12" viewBox="0 0 14 14" aria-hidden="true">
      <path d={PATHS[name]} fill="currentColor" />
    </svg>
  );
}

export default function TrainBar({training, onPlay, onStep}) {
  const t = useSyncExternalStore(training.subscribe, training.getSnapshot);
  const playing = t.state === 'running';
  const busy = t.state === 'stepping';
  const say = (p) => p.catch(() => {});
  const play = () => say(onPlay ? onPlay() : training.play());
  const step = () => say(onStep ? onStep() : training.stepOnce());
  return (
    <div className="trainbar" role="toolbar" aria-label="Training">
      <span className="trainbar-title">Training</span>
      {playing ? (
        <button onClick={() => say(training.pause())} title="Pause after this step (Alt+P)"
                data-testid="train-pause" aria-label="Pause"><Icon name="pause" /> Pause</button>
      ) : (
        <button className="primary" onClick={play} disabled={busy}
                title="Train step after step until paused (Alt+P)" data-testid="train-play">▶ Play</button>
      )}
      <button onClick={step} disabled={playing || busy} title="One training step (Alt+.)"
              data-testid="train-step" aria-label="Step"><Icon name="step" /> Step</button>
      <button onClick={() => say(training.reset())} title="Variables back to their initial values, step 0 (Alt+R)"
              data-testid="train-reset">⟲ Reset</button>
      <label className="trainbar-speed">speed{' '}
        <select value={t.rate} onChange={(e) => say(training.setRate(Number(e.target.value)))}
                aria-label="Training speed" data-testid="train-speed">
          <option value={0}>full</option>
          <option value={100}>100 steps/s</option>
          <option value={20}>20 steps/s</option>
          <option value={5}>5 steps/s</option>
          <option value={1}>1 step/s</option>
        </select>
      </label>
      <span className="trainbar-step" aria-live="off">
        step <b data-testid="train-step-count">{t.step}</b>
      </span>
      <span className="trainbar-rate muted" data-testid="train-rate">
        {playing && t.stepsPerS ? `${t.stepsPerS.toFixed(t.stepsPerS < 10 ? 1 : 0)} steps/s` : t.state}
      </span>
      {t.metrics.map((m) => {
        const s = t.series[m];
        const v = s && s.vals.length ? s.vals[s.vals.length - 1] : null;
        return <span key={m} className="trainbar-metric">{m} <b>{v === null ? '–' : Number(v).toPrecision(4)}</b></span>;
      })}
      {t.error && <span className="err" data-testid="train-error">{t.error}</span>}
    </div>
  );
}
