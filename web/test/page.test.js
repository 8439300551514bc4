// Unit tests of src/model/page.js: page JSON <-> graph model, edits applied and diffed.
import test from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {indexCatalog} from '../src/model/catalog.js';
import {applyEdits, copyBlocks, diffPages, freeSpot, layout, pageToGraph, parseSource,
        pasteBlocks} from '../src/model/page.js';

const read = (p) => JSON.parse(readFileSync(fileURLToPath(new URL(p, import.meta.url)), 'utf8'));
const index = indexCatalog(read('../../graph_schemas/block_catalog.json'));
const same = read('../../examples/filter_grad_same.json');
const depthwise = read('../../examples/depthwise.json');

test('sources name a block and maybe a port', () => {
  assert.deepEqual(parseSource('dy'), {block: 'dy', port: null});
  assert.deepEqual(parseSource('dy:output'), {block: 'dy', port: 'output'});
});

test('a page becomes nodes and labelled edges', () => {
  const check = {ok: true, problems: [{block: 'dw', port: 'out_backprop', message: 'bad'}],
                 blocks: {dw: {inputs: {input: {dtype: 'float32', shape: [1, 5, 5, 1],
                                                label: 'float32[1,5,5,1]', source: 'x'}}}}};
  const {nodes, edges} = pageToGraph(same, index, check);
  assert.deepEqual(nodes.map((n) => n.id), ['x', 'fs', 'dy', 'dw']);
  assert.equal(nodes[3].data.entry.type, 'Conv2DBackpropFilter');
  assert.equal(nodes[3].data.problems.length, 1);
  assert.equal(nodes[3].data.isOutput, true);
  const e = edges.find((x) => x.id === 'dw.input');
  assert.equal(e.source, 'x');
  assert.equal(e.sourceHandle, 'out:output');
  assert.equal(e.targetHandle, 'in:input');
  assert.equal(e.data.label, 'float32[1,5,5,1]');
  assert.equal(edges.find((x) => x.id === 'dw.out_backprop').data.problem, 'bad');
  assert.equal(edges.length, 3);
});

test('layout: sources left, consumers right; ui positions are kept', () => {
  const pos = layout(same);
  assert.ok(pos.get('dw').x > pos.get('x').x);
  assert.equal(pos.get('x').x, pos.get('dy').x);
  const moved = applyEdits(same, [{op: 'set_ui', block: 'x', ui: {x: 7, y: 9}}]);
  assert.deepEqual(layout(moved).get('x'), {x: 7, y: 9});
});

test('applyEdits mirrors the server, never mutating the input', () => {
  const before = JSON.stringify(same);
  let p = applyEdits(same, [{op: 'set_attr', block: 'dw', attr: 'strides', value: [1, 2, 2, 1]}]);
  assert.deepEqual(p.blocks[3].attrs.strides, [1, 2, 2, 1]);
  p = applyEdits(p, [{op: 'remove_block', id: 'x'}]);
  assert.equal(p.blocks[2].inputs.input, undefined);
  p = applyEdits(p, [{op: 'rename_block', id: 'dw', new_id: 'grad'}]);
  assert.deepEqual(p.outputs, ['grad']);
  p = applyEdits(p, [{op: 'set_attr', block: 'grad', attr: 'padding', value: null}]);
  assert.equal(p.blocks[2].attrs.padding, undefined);
  assert.throws(() => applyEdits(p, [{op: 'add_block', id: 'grad', type: 'Add'}]), /used by/);
  assert.throws(() => applyEdits(p, [{op: 'connect', block: 'nope', port: 'x', source: 'fs'}]),
                /no block "nope"/);
  assert.equal(JSON.stringify(same), before);
});

const norm = (p) => ({...p, blocks: p.blocks.slice().sort((a, b) => a.id.localeCompare(b.id))});

test('diffPages gives the edits that turn one page into the other', () => {
  const pages = [same, depthwise];
  const variants = [
    (p) => applyEdits(p, [{op: 'set_attr', block: p.blocks.at(-1).id, attr: 'padding',
                           value: 'VALID'}]),
    (p) => applyEdits(p, [{op: 'remove_block', id: p.blocks[0].id}]),
    (p) => applyEdits(p, [{op: 'add_block', id: 'extra', type: 'Identity', ui: {x: 1, y: 2}},
                          {op: 'connect', block: 'extra', port: 'input', source: p.blocks[0].id},
                          {op: 'set_outputs', outputs: ['extra']}]),
    (p) => applyEdits(p, [{op: 'rename_block', id: p.blocks[0].id, new_id: 'renamed'}]),
    (p) => applyEdits(p, [{op: 'set_name', name: 'other'}, {op: 'set_device',
                           block: p.blocks[1].id, device: 'cpu'}]),
    (p) => applyEdits(p, [{op: 'disconnect', block: p.blocks.at(-1).id,
                           port: Object.keys(p.blocks.at(-1).inputs)[0]}]),
  ];
  for (const p of pages) {
    for (const v of variants) {
      const q = v(p);
      /* blocks that are re-added land at the end, as the server appends them */
      assert.deepEqual(norm(applyEdits(p, diffPages(p, q))), norm(q));
      assert.deepEqual(norm(applyEdits(q, diffPages(q, p))), norm(p)); /* the undo */
    }
  }
  assert.deepEqual(diffPages(same, same), []);
});

test('copy and paste keep inner wires and pick fresh ids', () => {
  const frag = copyBlocks(same, ['x', 'dw']);
  assert.deepEqual(frag.blocks.map((b) => b.id), ['x', 'dw']);
  assert.deepEqual(frag.blocks[1].inputs, {input: 'x'});
  const {page, ids} = pasteBlocks(same, frag);
  assert.deepEqual(ids, ['x_copy', 'dw_copy']);
  assert.equal(page.blocks.find((b) => b.id === 'dw_copy').inputs.input, 'x_copy');
  assert.equal(page.blocks.length, 6);
  const again = pasteBlocks(page, frag);
  assert.deepEqual(again.ids, ['x_copy3', 'dw_copy3']);
  assert.equal(new Set(again.page.blocks.map((b) => b.id)).size, 8);
});

test('a block added without a drop point goes to a free cell, clear of every block', () => {
  const at = (id, x, y) => ({id, type: 'Const', ui: {x, y}});
  assert.deepEqual(freeSpot({blocks: []}), {x: 40, y: 40});
  /* the first row is taken by three blocks, one of them off the grid */
  const page = {blocks: [at('a', 40, 40), at('b', 360, 60), at('c', 1100, 40)]};
  assert.deepEqual(freeSpot(page), {x: 720, y: 40});
  page.blocks.push(at('d', 700, 100)); /* b and d reach into the second row */
  assert.deepEqual(freeSpot(page), {x: 1060, y: 190});
  /* the spot found is clear of every block by a block's size */
  const p = freeSpot(page);
  for (const b of page.blocks) {
    assert.ok(Math.abs(b.ui.x - p.x) >= 340 || Math.abs(b.ui.y - p.y) >= 140, b.id);
  }
});

test('samePage: key order, an empty outputs list and empty inputs do not count', async () => {
  const {samePage} = await import('../src/model/page.js');
  const a = {format: 'blockflow.page', version: 1, name: 'n', outputs: [],
             blocks: [{id: 'x', type: 'Const', ui: {x: 0, y: 1}, attrs: {dtype: 'float32'}}]};
  const b = {format: 'blockflow.page', version: 1, name: 'n',
             blocks: [{type: 'Const', id: 'x', attrs: {dtype: 'float32'}, inputs: {}, ui: {y: 1, x: 0}}]};
  assert.ok(samePage(a, b));
  assert.ok(!samePage(a, {...b, name: 'm'}));
  assert.ok(!samePage(a, {...a, blocks: [{...a.blocks[0], ui: {x: 1, y: 1}}]}));
});

test('applyEdits never changes the page it is given, and shares the blocks it does not edit', async () => {
  const {applyEdits} = await import('../src/model/page.js');
  const freeze = (x) => { if (x && typeof x === 'object') { Object.values(x).forEach(freeze); Object.freeze(x); } return x; };
  const page = freeze({name: 'p', outputs: ['c'], blocks: [
    {id: 'a', type: 'Const', attrs: {value: 1}, ui: {x: 0, y: 0}},
    {id: 'b', type: 'Const', attrs: {value: 2}},
    {id: 'c', type: 'Add', inputs: {x: 'a', y: 'b'}},
    {id: 'd', type: 'Neg', inputs: {x: 'c'}},
    {id: 'e', type: 'Neg', inputs: {x: 'b'}},
  ]});
  const before = JSON.stringify(page);
  const q = applyEdits(page, [
    {op: 'set_ui', block: 'a', ui: {x: 5, y: 5}},
    {op: 'remove_block', id: 'b'},
    {op: 'set_attr', block: 'd', attr: 'k', value: 3},
    {op: 'rename_block', id: 'c', new_id: 'sum'},
    {op: 'connect', block: 'e', port: 'x', source: 'a'},
    {op: 'add_block', id: 'f', type: 'Neg'},
    {op: 'disconnect', block: 'sum', port: 'x'},
  ]);
  assert.equal(JSON.stringify(page), before, 'the input page is unchanged');
  assert.deepEqual(q.blocks.map((b) => b.id), ['a', 'sum', 'd', 'e', 'f']);
  assert.deepEqual(q.blocks[1].inputs, undefined, 'y went with b, x was cut');
  assert.deepEqual(q.blocks[2].inputs, {x: 'sum'});
  assert.deepEqual(q.outputs, ['sum']);
  const r = applyEdits(page, [{op: 'set_attr', block: 'a', attr: 'value', value: 9}]);
  assert.equal(r.blocks[1], page.blocks[1], 'an untouched block is the same object');
  assert.notEqual(r.blocks[0], page.blocks[0]);
});

test('pageToGraph with a cache: the blocks an edit does not touch keep their node objects', () => {
  const cache = {};
  const check = {ok: true, problems: [], blocks: {}};
  const first = pageToGraph(same, index, check, {cache});
  const again = pageToGraph(same, index, check, {cache});
  again.nodes.forEach((n, i) => assert.equal(n, first.nodes[i], n.id));
  const edited = applyEdits(same, [{op: 'set_attr', block: 'dw', attr: 'padding', value: 'VALID'}]);
  const after = pageToGraph(edited, index, check, {cache});
  assert.equal(after.nodes[0], first.nodes[0], 'x untouched: the same node');
  assert.notEqual(after.nodes[3], first.nodes[3], 'dw edited: a new node');
  assert.equal(after.nodes[3].data.block.attrs.padding, 'VALID');
  const bad = {...check, problems: [{block: 'x', message: 'no'}]};
  const third = pageToGraph(edited, index, bad, {cache});
  assert.notEqual(third.nodes[0], after.nodes[0], 'a new problem: a new node');
  assert.equal(third.nodes[1], after.nodes[1]);
  const moved = applyEdits(edited, [{op: 'set_ui', block: 'fs', ui: {x: 999, y: 5}}]);
  const fourth = pageToGraph(moved, index, bad, {cache});
  assert.notEqual(fourth.nodes[1], third.nodes[1], 'moved: a new node');
  assert.deepEqual(fourth.nodes[1].position, {x: 999, y: 5});
});
