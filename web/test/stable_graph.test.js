// stable_graph.test.js - the canvas reuses a block's node object only while nothing shown on
// the block changed: its status, problems, ports and a gradient check's mark among them.
import test from 'node:test';
import assert from 'node:assert/strict';
import {createGraphCache, noteMeasured, stableEdges, stableNodes} from '../src/model/stableGraph.js';

const block = {id: 'g', type: 'Conv2DBackpropFilter'};
const node = (extra) => ({id: 'g', type: 'block', position: {x: 0, y: 0},
                          data: {block, entry: undefined, problems: [], ports: null,
                                 status: undefined, isOutput: false, ...extra}});
const opts = {sizes: new Map(), initial: {width: 240, height: 70}};

test('an unchanged block keeps its node data object', () => {
  const cache = createGraphCache();
  const [a] = stableNodes(cache, [node({})], opts);
  const [b] = stableNodes(cache, [node({})], opts);
  assert.equal(a.data, b.data);
});

test('a gradient check mark arriving or changing gives the block new data', () => {
  const cache = createGraphCache();
  const [a] = stableNodes(cache, [node({})], opts);
  const [b] = stableNodes(cache, [node({mark: {ok: true, text: 'rel. error 1e-7'}})], opts);
  assert.notEqual(a.data, b.data);
  assert.deepEqual(b.data.mark, {ok: true, text: 'rel. error 1e-7'});
  const [c] = stableNodes(cache, [node({mark: {ok: false, text: 'rel. error 0.5'}})], opts);
  assert.equal(c.data.mark.ok, false);
});

test('nothing changed: the very same arrays; a run status overlay renews only its block', () => {
  const cache = createGraphCache();
  const nodes = [node({}), {...node({}), id: 'h'}];
  const edge = {id: 'h.x', source: 'g', target: 'h', sourceHandle: 'out:output',
                targetHandle: 'in:x', data: {label: 'f32[2]', problem: null}};
  const a = stableNodes(cache, nodes, opts);
  assert.equal(stableNodes(cache, nodes.map((n) => ({...n})), opts), a, 'the same array');
  const e1 = stableEdges(cache, [edge]);
  assert.equal(stableEdges(cache, [{...edge, data: {...edge.data}}]), e1);
  assert.notEqual(stableEdges(cache, [edge], ['h.x']), e1, 'a selected wire is a new one');
  const st = {h: {state: 'finished'}};
  const b = stableNodes(cache, nodes, {...opts, status: st});
  assert.notEqual(b, a);
  assert.equal(b[0], a[0], 'g has no status: the same node');
  assert.equal(b[1].data.status, st.h);
  assert.equal(stableNodes(cache, nodes, {...opts, status: {...st}}), b, 'the same statuses');
  /* a measurement is carried by the node object given out, in place */
  const size = {width: 200, height: 60};
  noteMeasured(cache, 'g', size);
  opts.sizes.set('g', size);
  assert.equal(stableNodes(cache, nodes, {...opts, status: st}), b);
  assert.equal(b[0].measured, size);
  opts.sizes.delete('g');
});
