// tidy.test.js - "Tidy up" (src/model/tidy.js): layers left to right along the wires, no two
// blocks overlapping, the page's top-left corner kept, only the given blocks moved.
import test from 'node:test';
import assert from 'node:assert/strict';
import {tidyLayout} from '../src/model/tidy.js';

const page = {blocks: [
  {id: 'a', type: 'Const', ui: {x: 100, y: 50}}, {id: 'b', type: 'Const', ui: {x: 900, y: 900}},
  {id: 's', type: 'Add', inputs: {x: 'a', y: 'b'}, ui: {x: 120, y: 60}},
  {id: 'o', type: 'Identity', inputs: {input: 's:z'}, ui: {x: 110, y: 40}},
]};

test('tidy: each block right of what feeds it, none overlapping, from the old top-left', () => {
  const sizes = new Map([['a', {width: 200, height: 60}], ['b', {width: 200, height: 60}],
                         ['s', {width: 260, height: 80}], ['o', {width: 220, height: 60}]]);
  const m = tidyLayout(page, sizes);
  assert.ok(m.a.x + 200 < m.s.x && m.b.x + 200 < m.s.x && m.s.x + 260 < m.o.x);
  const ids = Object.keys(m);
  for (let i = 0; i < ids.length; i++) {
    for (let j = i + 1; j < ids.length; j++) {
      const p = m[ids[i]], q = m[ids[j]], sp = sizes.get(ids[i]), sq = sizes.get(ids[j]);
      assert.ok(p.x + sp.width <= q.x || q.x + sq.width <= p.x || p.y + sp.height <= q.y ||
                q.y + sq.height <= p.y, `${ids[i]} and ${ids[j]} overlap`);
    }
  }
  assert.equal(Math.min(...ids.map((id) => m[id].x)), 100);
  assert.equal(Math.min(...ids.map((id) => m[id].y)), 40);
  assert.deepEqual(Object.keys(tidyLayout(page, sizes, ['s', 'o'])).sort(), ['o', 's']);
});
