/* PageMinimap.jsx - the minimap of a big page: every block as a small box coloured as React
 * Flow's minimap colours them (a problem red, done green), the view as a frame; pressing or
 * dragging in it moves the view there, the wheel zooms. Drawn on one canvas (farDraw.js's
 * boxes) rather than by React Flow's minimap, which draws only the blocks React Flow draws
 * (not those of the far canvas) and redrew 500 rectangles at every batch of run events. */
import React, {useCallback, useLayoutEffect, useRef} from 'react';
import {Panel, useReactFlow} from '@xyflow/react';
import {minimapFrame} from '../model/farDraw.js';
import {useView} from './farView.js';

const COLOR = {problem: '#e57373', finished: '#81c784', other: '#b0bec5'};

export default function PageMinimap({boxes, width, height}) {
  const ref = useRef(null);
  const flow = useReactFlow();
  const [tx, ty, k, vw, vh] = useView();
  /* the page rectangle in view, and the minimap's scale and offset framing it with the page */
  const seen = {x: -tx / k, y: -ty / k, width: vw / k, height: vh / k};
  const frame = minimapFrame(boxes, seen, width, height);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const dpr = window.devicePixelRatio || 1;
    if (el.width !== width * dpr) { el.width = width * dpr; el.height = height * dpr; }
    const ctx = el.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, width, height);
    const {s, ox, oy} = frame;
    for (const [c, pick] of [[COLOR.other, (b) => !b.problem && b.state !== 'finished'],
                             [COLOR.finished, (b) => !b.problem && b.state === 'finished'],
                             [COLOR.problem, (b) => b.problem]]) {
      ctx.fillStyle = c;
      for (const b of boxes) {
        if (pick(b)) ctx.fillRect(ox + b.x * s, oy + b.y * s, Math.max(1, b.width * s), Math.max(1, b.height * s));
      }
    }
    ctx.strokeStyle = '#1565c0';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(ox + seen.x * s, oy + seen.y * s, seen.width * s, seen.height * s);
    /* for the browser tests: what is drawn, and where a page point is drawn */
    el.dataset.blocks = String(boxes.length);
    el.dataset.frame = `${s},${ox},${oy}`;
  });
  /* a press or a drag centres the view on that point of the page */
  const centreAt = useCallback((e) => {
    const r = ref.current.getBoundingClientRect();
    const {s, ox, oy} = frame;
    const px = (e.clientX - r.left - ox) / s, py = (e.clientY - r.top - oy) / s;
    flow.setViewport({x: vw / 2 - px * k, y: vh / 2 - py * k, zoom: k});
  }, [frame, flow, vw, vh, k]);
  const onPointerDown = useCallback((e) => {
    e.preventDefault();
    e.currentTarget.setPointerCapture(e.pointerId);
    centreAt(e);
  }, [centreAt]);
  const onPointerMove = useCallback((e) => {
    if (e.currentTarget.hasPointerCapture(e.pointerId)) centreAt(e);
  }, [centreAt]);
  const onWheel = useCallback((e) => {
    const z = Math.min(2.5, Math.max(0.02, k * Math.pow(2, -e.deltaY / 500)));
    const cx = (vw / 2 - tx) / k, cy = (vh / 2 - ty) / k; /* keep the view's centre */
    flow.setViewport({x: vw / 2 - cx * z, y: vh / 2 - cy * z, zoom: z});
  }, [flow, tx, ty, k, vw, vh]);
  return (
    <Panel position="bottom-right" className="page-minimap nowheel nopan">
      <canvas ref={ref} style={{width, height, display: 'block'}} aria-label="Minimap of the page"
              role="img" data-testid="page-minimap" onPointerDown={onPointerDown}
              onPointerMove={onPointerMove} onWheel={onWheel} />
    </Panel>
  );
}
