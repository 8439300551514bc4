/* MetricsPanel.jsx - the live curves of the chosen scalars (loss, accuracy, any rank-0 output
 * added from the list), drawn by uPlot: a log-scale toggle, the values under the pointer (the
 * legend follows the cursor) and a smoothing slider (TensorBoard's debiased moving average;
 * the raw curve stays, faint, under the smoothed one). */
import React, {useEffect, useRef, useState, useSyncExternalStore} from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import {plotData} from '../model/training.js';

const COLORS = ['#1565c0', '#c62828', '#2e7d32', '#6a1b9a', '#ef6c00', '#00838f'];

function options(names, width, height, log) {
  const series = [{label: 'step'}];
  names.forEach((n, i) => {
    const c = COLORS[i % COLORS.length];
    series.push({label: `${n} (raw)`, stroke: c + '55', width: 1, points: {show: false}});
    series.push({label: n, stroke: c, width: 2, points: {show: false}});
  });
  return {
    width, height, series,
    scales: {x: {time: false}, y: log ? {distr: 3} : {}},
    axes: [{label: 'step'},
           {size: 64, values: (u, vals) => {
             /* on a log scale: the decades, at most about six of them labelled */
             const decades = vals.filter((v) => v && Math.abs(Math.log10(Math.abs(v)) % 1) < 1e-9);
             const every = Math.max(1, Math.ceil(decades.length / 6));
             return vals.map((v) => {
               if (v === null) return '';
               if (!log) return Number(v).toPrecision(3);
               const k = decades.indexOf(v);
               return k >= 0 && k % every === 0 ? Number(v).toExponential(0) : '';
             });
           }}],
    legend: {live: true},
    cursor: {drag: {x: true, y: false}},
  };
}

export default function MetricsPanel({training, scalars = []}) {
  const t = useSyncExternalStore(training.subscribe, training.getSnapshot);
  const [log, setLog] = useState(true);
  const [weight, setWeight] = useState(0.6);
  const box = useRef(null);
  const plot = useRef(null);
  const [width, setWidth] = useState(480);
  const names = t.metrics;
  const data = plotData(t.series, names, {weight, log});
  const points = data[0].length;
  const s0 = names.length ? t.series[names[0]] : null; /* read by the tests: first and last raw */
  const first = s0 && s0.vals.length ? s0.vals[0] : '';
  const last = s0 && s0.vals.length ? s0.vals[s0.vals.length - 1] : '';
  useEffect(() => {
    const ro = new ResizeObserver(([e]) => setWidth(Math.max(240, Math.floor(e.contentRect.width))));
    ro.observe(box.current);
    return () => ro.disconnect();
  }, []);
  const key = `${names.join('|')}/${log}/${width}`;
  useEffect(() => {
    plot.current = new uPlot(options(names, width, 220, log), data, box.current);
    return () => { plot.current.destroy(); plot.current = null; };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  /* redraw at most every 200 ms (the newest data always drawn last): a software-rendered
   * canvas redrawn at every step event costs a busy machine its frames */
  const latest = useRef(data);
  latest.current = data;
  const timer = useRef({at: 0, id: null});
  useEffect(() => {
    const tm = timer.current;
    const draw = () => {
      tm.id = null;
      tm.at = Date.now();
      if (plot.current) plot.current.setData(latest.current);
    };
    if (tm.id) return;
    const wait = 200 - (Date.now() - tm.at);
    if (wait <= 0) draw();
    else tm.id = setTimeout(draw, wait);
  });
  useEffect(() => () => clearTimeout(timer.current.id), []);
  const add = (ref) => ref && !names.includes(ref) && training.configure({metrics: [...names, ref]});
  const remove = (ref) => training.configure({metrics: names.filter((n) => n !== ref)});
  return (
    <section className="metrics" aria-label="Metrics" data-testid="metrics" data-points={points}
             data-first={first} data-last={last} data-first-step={data[0].length ? data[0][0] : ''}>
      <div className="metrics-tools">
        <label><input type="checkbox" checked={log} onChange={(e) => setLog(e.target.checked)}
                      data-testid="metrics-log" /> log scale</label>
        <label>smoothing <input type="range" min="0" max="0.99" step="0.01" value={weight}
                                onChange={(e) => setWeight(Number(e.target.value))}
                                aria-label="smoothing" data-testid="metrics-smoothing" />
          <span className="muted"> {weight.toFixed(2)}</span></label>
        <label>plot <select value="" onChange={(e) => add(e.target.value)} aria-label="Add a scalar to the plot">
          <option value="">add a scalar…</option>
          {scalars.filter((s) => !names.includes(s)).map((s) => <option key={s} value={s}>{s}</option>)}
        </select></label>
        {names.map((n) => (
          <button key={n} className="chip" onClick={() => remove(n)} title={`Stop plotting ${n}`}>{n} ×</button>
        ))}
      </div>
      <div ref={box} className="metrics-plot" />
      {!points && <div className="muted">Press ▶ Play or ⏭ Step: the curves appear here.</div>}
    </section>
  );
}
