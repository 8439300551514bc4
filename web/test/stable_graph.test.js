// stable_graph.test.js - the canvas reuses a block's node object only while nothing shown on
// the block changed: its status, problems, ports and a gradient check's mark among them.
import test from 'node:test';
import assert from 'node:assert/strict';
import {createGraphCache, stableNodes} from '../src/model/stableGraph.js';

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
