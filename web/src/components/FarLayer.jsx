/* FarLayer.jsx - a big page zoomed far out: its blocks and wires drawn on one canvas under
 * React Flow's viewport (model/farDraw.js), drawn again when the view, the page or the run's
 * statuses change. The blocks React Flow still draws (selected, being dragged) are skipped. */
import React, {useLayoutEffect, useRef} from 'react';
import {drawFar} from '../model/farDraw.js';
import {useView} from './farView.js';

export default function FarLayer({boxes, wires, skip}) {
  const ref = useRef(null);
  const view = useView();
  const draws = useRef(0);
  /* drawn before the browser paints, in step with React Flow's DOM (the selected blocks) */
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const [tx, ty, k, width, height] = view;
    const dpr = window.devicePixelRatio || 1;
    if (el.width !== Math.round(width * dpr) || el.height !== Math.round(height * dpr)) {
      el.width = Math.round(width * dpr);
      el.height = Math.round(height * dpr);
    }
    const ctx = el.getContext('2d');
    if (!ctx) return;
    const shown = drawFar(ctx, {boxes, wires, transform: [tx, ty, k], width, height, dpr, skip});
    /* for the browser tests: how many blocks this drawing shows */
    el.dataset.shown = String(shown);
    el.dataset.draws = String(++draws.current);
  }, [view, boxes, wires, skip]);
  return <canvas ref={ref} className="far-layer" data-testid="far-layer" aria-hidden="true" />;
}
