// far_draw.test.js - a big page zoomed far out: the far boxes' geometry (farBlock.js), what
// the pointer finds on them, the wires as React Flow's own Bezier curves, the drawing's
// culling, and the minimap's framing (farDraw.js); stableNodes hands React Flow the far
// geometry so that it measures nothing.
import test from 'node:test';
import assert from 'node:assert/strict';
import {getBezierPath, Position} from '@xyflow/system';
import {FAR_WIDTH, farGeometry, isFar} from '../src/model/farBlock.js';
import {blockAt, blocksInside, drawFar, farBoxes, minimapFrame, wireCurves} from '../src/model/farDraw.js';
import {createGraphCache, stableNodes} from '../src/model/stableGraph.js';

const entry = (ins, outs) => ({inputs: ins.map((name) => ({name})), outputs: outs.map((name) => ({name}))});
const node = (id, x, y, e = entry(['x', 'y'], ['z']), extra = {}) => ({
  id, type: 'block', position: {x, y},
  data: {block: {id}, entry: e, problems: [], ports: null, status: undefined, isOutput: false, ...extra},
});

test('farGeometry: a box as tall as its rows, a dot per port on its edges', () => {
  const g = farGeometry('add', [{name: 'x'}, {name: 'y'}], [{name: 'z'}]);
  assert.equal(g.width, FAR_WIDTH);
  assert.equal(g.height, 30 + 2 * 19);
  assert.deepEqual(g.handles.map((h) => [h.id, h.type, h.position, h.x, h.y]), [
    ['in:x', 'target', 'left', -5, 34], ['in:y', 'target', 'left', -5, 53],
    ['out:z', 'source', 'right', FAR_WIDTH - 5, 34]]);
  assert.equal(farGeometry('c', [], [{name: 'output'}]).height, 49, 'one row at least');
  assert.equal(isFar(0.39, 151), true);
  assert.equal(isFar(0.39, 150), false, 'a small page is never far');
  assert.equal(isFar(0.4, 500), false);
});

test('blockAt finds the topmost box under a point; blocksInside the boxes wholly inside', () => {
  const boxes = farBoxes([node('a', 0, 0), node('b', 100, 20), node('c', 1000, 0)]);
  assert.equal(blockAt(boxes, 50, 10), 'a');
  assert.equal(blockAt(boxes, 150, 30), 'b', 'b is drawn over a');
  assert.equal(blockAt(boxes, 600, 10), null);
  assert.equal(blockAt(boxes, 1000 + FAR_WIDTH + 1, 10), null);
  assert.deepEqual(blocksInside(boxes, {x: -1, y: -1, width: 400, height: 200}), ['a', 'b']);
  assert.deepEqual(blocksInside(boxes, {x: 50, y: -1, width: 400, height: 200}), ['b'], 'a only partly inside');
});

test('wireCurves: the curve React Flow draws from an output dot to an input dot', () => {
  const boxes = farBoxes([node('a', 0, 0), node('b', 400, 100), node('c', -600, 300)]);
  const edges = [
    {id: 'b.x', source: 'a', sourceHandle: 'out:z', target: 'b', targetHandle: 'in:x', data: {}},
    {id: 'c.y', source: 'b', sourceHandle: 'out:z', target: 'c', targetHandle: 'in:y', data: {problem: 'bad'}},
    {id: 'c.x', source: 'gone', sourceHandle: 'out:z', target: 'c', targetHandle: 'in:x', data: {}},
  ];
  const ws = wireCurves(edges, boxes);
  assert.equal(ws.length, 2, 'a wire from a block not on the page is not drawn');
  for (const [w, e] of [[ws[0], edges[0]], [ws[1], edges[1]]]) {
    const s = boxes.find((b) => b.id === e.source), t = boxes.find((b) => b.id === e.target);
    const sh = s.handles.find((h) => h.id === e.sourceHandle), th = t.handles.find((h) => h.id === e.targetHandle);
    /* React Flow's edge ends: a right handle's middle of its right side, a left one's left */
    const [path] = getBezierPath({sourceX: s.x + sh.x + sh.width, sourceY: s.y + sh.y + sh.height / 2,
                                  sourcePosition: Position.Right, targetX: t.x + th.x,
                                  targetY: t.y + th.y + th.height / 2, targetPosition: Position.Left});
    const nums = path.match(/-?[\d.]+(e-?\d+)?/g).map(Number);
    assert.deepEqual([w.x0, w.y0, w.c1x, w.c1y, w.c2x, w.c2y, w.x1, w.y1].map((v) => +v.toFixed(6)),
                     nums.map((v) => +v.toFixed(6)), `${e.id}: ${path}`);
  }
  assert.deepEqual(ws.map((w) => w.bad), [false, true]);
});

/** A 2D context that records what is drawn. */
function recorder() {
  const calls = [];
  const ctx = new Proxy({}, {
    get: (o, k) => (k in o ? o[k] : (...a) => calls.push([k, ...a])),
    set: (o, k, v) => { calls.push([`=${String(k)}`, v]); return true; },
  });
  return {ctx, calls};
}

test('drawFar draws the boxes in view (not those React Flow draws), wires, and ids only when readable', () => {
  const boxes = farBoxes([node('a', 0, 0), node('b', 300, 0), node('far', 50000, 0),
                          node('bad', 600, 0, undefined, {problems: [{message: 'x'}]})]);
  const wires = wireCurves([{source: 'a', sourceHandle: 'out:z', target: 'b', targetHandle: 'in:x', data: {}}], boxes);
  const {ctx, calls} = recorder();
  const shown = drawFar(ctx, {boxes, wires, transform: [0, 0, 0.1], width: 1000, height: 600,
                              skip: new Set(['b'])});
  assert.equal(shown, 2, 'a and bad: b is drawn by React Flow, far is out of view');
  const rects = calls.filter((c) => c[0] === 'strokeRect').map((c) => c[1]);
  assert.deepEqual(rects, [0, 600], 'no selected block: no halo');
  assert.ok(calls.some((c) => c[0] === '=strokeStyle' && c[1] === '#c62828'), 'a problem is red');
  assert.equal(calls.filter((c) => c[0] === 'bezierCurveTo').length, 1);
  assert.equal(calls.filter((c) => c[0] === 'fillText').length, 0, 'no ids at zoom 0.1');
  const sel = boxes.map((b) => ({...b, selected: b.id === 'b'}));
  const withSel = recorder();
  drawFar(withSel.ctx, {boxes: sel, wires, transform: [0, 0, 0.1], width: 1000, height: 600,
                        skip: new Set(['b'])});
  assert.deepEqual(withSel.calls.filter((c) => c[0] === 'strokeRect').map((c) => c[1]),
                   [0, 600, 300 - 50], 'the selected block, drawn by React Flow, gets a halo 5 px out');
  const again = recorder();
  drawFar(again.ctx, {boxes, wires, transform: [0, 0, 0.3], width: 1000, height: 600});
  assert.deepEqual(again.calls.filter((c) => c[0] === 'fillText').map((c) => c[1]), ['a', 'b', 'bad']);
});

test('minimapFrame fits every box and the view inside the minimap', () => {
  const boxes = farBoxes([node('a', -500, 0), node('b', 9000, 2000)]);
  const seen = {x: 100, y: -800, width: 1000, height: 600};
  const {s, ox, oy} = minimapFrame(boxes, seen, 160, 110);
  const inside = (x, y) => x >= 4.99 && x <= 155.01 && y >= 4.99 && y <= 105.01;
  for (const b of boxes) {
    assert.ok(inside(ox + b.x * s, oy + b.y * s) && inside(ox + (b.x + b.width) * s, oy + (b.y + b.height) * s), b.id);
  }
  assert.ok(inside(ox + seen.x * s, oy + seen.y * s));
});

test('stableNodes, far: each node carries its far size and dots, hidden unless selected', () => {
  const cache = createGraphCache();
  const graph = [node('a', 0, 0), node('b', 10, 10)];
  const opts = {sizes: new Map([['a', {width: 222, height: 77}]]), initial: {width: 240, height: 70}};
  const far = stableNodes(cache, graph, {...opts, far: true, selected: ['b']});
  assert.deepEqual(far[0].measured, {width: FAR_WIDTH, height: 68});
  assert.equal(far[0].handles.length, 3);
  assert.deepEqual(far.map((n) => n.hidden), [true, false]);
  assert.equal(stableNodes(cache, graph, {...opts, far: true, selected: ['b']}), far, 'the same array again');
  const near = stableNodes(cache, graph, {...opts, selected: ['b']});
  assert.notEqual(near[0], far[0]);
  assert.equal(near[0].handles, undefined, 'near, React Flow measures the dots');
  assert.equal(near[0].hidden, undefined);
  assert.deepEqual(near[0].measured, {width: 222, height: 77});
});

test('farBoxes with a cache: a node seen before with the same status gets the same box', () => {
  const cache = new WeakMap();
  const a = node('a', 0, 0), b = node('b', 300, 0);
  const first = farBoxes([a, b], {}, cache);
  const again = farBoxes([a, b], {}, cache);
  assert.equal(again[0], first[0]);
  assert.equal(again[1], first[1]);
  const moved = {...b, position: {x: 310, y: 0}};
  const run = {a: {state: 'finished'}};
  const third = farBoxes([a, moved], run, cache);
  assert.notEqual(third[0], first[0], 'a new status: a new box');
  assert.equal(third[0].state, 'finished');
  assert.equal(third[1].x, 310, 'a new node object: a new box');
});
