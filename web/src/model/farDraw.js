/*
 * farDraw.js - a big page zoomed far out, drawn on one <canvas> instead of a DOM element per
 * block and wire: the boxes and dots of farBlock.js, the wires as the same Bezier curves React
 * Flow draws, the colours of the blocks' CSS (state, problem, selection). React Flow's 500
 * block components and 450 wire components were most of a 500-block page's first render.
 * Also what the pointer is on (`blockAt`), since the far blocks have no elements to click.
 * Pure functions over plain objects and a 2D context: unit-tested with a recording context.
 */
import {blockPorts, farGeometry} from './farBlock.js';

/* the colours of styles.css's .block rules, in the order they override each other */
const BORDER = {finished: '#2e7d32', cached: '#6a8caf', running: '#f9a825', failed: '#c62828'};
export const COLORS = {fill: '#ffffff', head: '#eef2f6', border: '#90a4ae', problem: '#c62828',
                       selected: '#1565c0', failedFill: '#fff5f5', wire: '#7a8794',
                       wireBad: '#c62828', dot: '#546e7a', text: '#263238'};

/**
 * The far boxes of `nodes` (React Flow nodes as Canvas builds them: id, position, data with
 * entry, status, problems) in page pixels, each with its dots; `status` ({id: status}), when
 * given, holds the run's statuses instead of the nodes. `cache` (a WeakMap the caller keeps):
 * a node object seen before with the same status gets the same box (an edit changes one node
 * of 500).
 */
export function farBoxes(nodes, status = null, cache = null) {
  return nodes.map((n) => {
    const s = status ? status[n.id] : n.data.status;
    const known = cache && cache.get(n);
    if (known && known.s === s) return known.box;
    const {inputs, outputs} = blockPorts(n.data.entry);
    const g = farGeometry(n.id, inputs, outputs);
    const st = s ? s.state : '';
    const box = {id: n.id, x: n.position.x, y: n.position.y, width: g.width, height: g.height,
                 handles: g.handles, state: st, problem: n.data.problems.length > 0,
                 selected: !!n.selected};
    if (cache) cache.set(n, {s, box});
    return box;
  });
}

/** The box under page point (x, y): the last drawn (topmost) one, or null. */
export function blockAt(boxes, x, y) {
  for (let i = boxes.length - 1; i >= 0; i--) {
    const b = boxes[i];
    if (x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height) return b.id;
  }
  return null;
}

/** The ids of the boxes wholly inside the page rectangle r ({x, y, width, height}). */
export function blocksInside(boxes, r) {
  return boxes.filter((b) => b.x >= r.x && b.y >= r.y && b.x + b.width <= r.x + r.width &&
                             b.y + b.height <= r.y + r.height).map((b) => b.id);
}

/* React Flow's Bezier control offset (getBezierPath's curvature 0.25) */
function controlOffset(distance) {
  return distance >= 0 ? 0.5 * distance : 0.25 * 25 * Math.sqrt(-distance);
}

/**
 * Each wire of `edges` between two boxes as a cubic Bezier {x0, y0, c1x, c1y, c2x, c2y, x1,
 * y1, bad}: from the source's output dot's right edge to the target's input dot's left
 * edge, as React Flow draws a wire from a right handle to a left one.
 */
export function wireCurves(edges, boxes) {
  const byId = new Map(boxes.map((b) => [b.id, b]));
  const out = [];
  for (const e of edges) {
    const s = byId.get(e.source), t = byId.get(e.target);
    const sh = s && s.handles.find((h) => h.id === e.sourceHandle);
    const th = t && t.handles.find((h) => h.id === e.targetHandle);
    if (!sh || !th) continue;
    const x0 = s.x + sh.x + sh.width, y0 = s.y + sh.y + sh.height / 2;
    const x1 = t.x + th.x, y1 = t.y + th.y + th.height / 2;
    out.push({x0, y0, c1x: x0 + controlOffset(x1 - x0), c1y: y0,
              c2x: x1 - controlOffset(x1 - x0), c2y: y1, x1, y1,
              bad: !!(e.data && e.data.problem)});
  }
  return out;
}

const borderOf = (b) => (b.selected ? COLORS.selected : b.problem ? COLORS.problem
  : BORDER[b.state] || COLORS.border);

/**
 * Draw `boxes` and `wires` on ctx (a 2D context of a canvas `width` x `height` CSS pixels,
 * scaled by `dpr`) at React Flow's transform [tx, ty, zoom]. Only what meets the canvas is
 * drawn; the ids are written when they can be read (zoom of at least `textZoom`).
 */
export function drawFar(ctx, {boxes, wires, transform, width, height, dpr = 1, skip = null,
                              textZoom = 0.22}) {
  const [tx, ty, k] = transform;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * tx, dpr * ty);
  /* the page rectangle in view, with a margin for wires and borders */
  const vx0 = -tx / k - 20, vy0 = -ty / k - 20, vx1 = (width - tx) / k + 20,
        vy1 = (height - ty) / k + 20;
  const inView = (x0, y0, x1, y1) => x1 >= vx0 && x0 <= vx1 && y1 >= vy0 && y0 <= vy1;
  for (const bad of [false, true]) { /* the wires with a problem over the others */
    ctx.beginPath();
    for (const w of wires) {
      if (w.bad !== bad) continue;
      if (!inView(Math.min(w.x0, w.x1, w.c1x, w.c2x), Math.min(w.y0, w.y1),
                  Math.max(w.x0, w.x1, w.c1x, w.c2x), Math.max(w.y0, w.y1))) continue;
      ctx.moveTo(w.x0, w.y0);
      ctx.bezierCurveTo(w.c1x, w.c1y, w.c2x, w.c2y, w.x1, w.y1);
    }
    ctx.strokeStyle = bad ? COLORS.wireBad : COLORS.wire;
    ctx.lineWidth = Math.max(2, 1 / k); /* never thinner than a screen pixel */
    ctx.stroke();
  }
  const shown = boxes.filter((b) => (!skip || !skip.has(b.id)) &&
                                    inView(b.x, b.y, b.x + b.width, b.y + b.height));
  for (const b of shown) {
    ctx.fillStyle = b.state === 'failed' ? COLORS.failedFill : COLORS.fill;
    ctx.fillRect(b.x, b.y, b.width, b.height);
    ctx.fillStyle = COLORS.head;
    ctx.fillRect(b.x, b.y, b.width, 26);
    ctx.lineWidth = Math.max(b.selected || b.state === 'running' ? 4 : 3, 1.2 / k);
    ctx.strokeStyle = borderOf(b);
    ctx.strokeRect(b.x, b.y, b.width, b.height);
  }
  ctx.fillStyle = COLORS.dot;
  ctx.beginPath();
  for (const b of shown) {
    for (const h of b.handles) ctx.rect(b.x + h.x, b.y + h.y, h.width, h.height);
  }
  ctx.fill();
  /* the selected blocks (React Flow draws them, over this canvas) get a halo that can be
   * seen at any zoom: at the zoom framing 300 blocks a block is 17 x 3 pixels */
  ctx.strokeStyle = COLORS.selected;
  ctx.lineWidth = Math.max(4, 3 / k);
  for (const b of boxes) {
    if (!b.selected || !inView(b.x, b.y, b.x + b.width, b.y + b.height)) continue;
    const m = Math.max(6, 5 / k);
    ctx.strokeRect(b.x - m, b.y - m, b.width + 2 * m, b.height + 2 * m);
  }
  if (k >= textZoom) {
    ctx.fillStyle = COLORS.text;
    ctx.font = 'bold 14px ui-monospace, monospace';
    ctx.textBaseline = 'middle';
    for (const b of shown) ctx.fillText(b.id, b.x + 8, b.y + 14, b.width - 16);
  }
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  return shown.length;
}

/**
 * The minimap's scale `s` and offset (ox, oy) (minimap pixel = o + page pixel * s) that frame
 * the boxes and the page rectangle in view (`seen`) in a `width` x `height` minimap, centred,
 * with a margin of 5 minimap pixels.
 */
export function minimapFrame(boxes, seen, width, height) {
  let x0 = seen.x, y0 = seen.y, x1 = seen.x + seen.width, y1 = seen.y + seen.height;
  for (const b of boxes) {
    x0 = Math.min(x0, b.x); y0 = Math.min(y0, b.y);
    x1 = Math.max(x1, b.x + b.width); y1 = Math.max(y1, b.y + b.height);
  }
  const m = 5;
  const s = Math.min((width - 2 * m) / Math.max(1, x1 - x0), (height - 2 * m) / Math.max(1, y1 - y0));
  return {s, ox: (width - (x1 - x0) * s) / 2 - x0 * s, oy: (height - (y1 - y0) * s) / 2 - y0 * s};
}
