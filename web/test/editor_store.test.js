// editor_store.test.js - the editor's store (src/model/store.js) and operations
// (src/model/editor.js) against a stand-in server: edits reach the server as batches and
// update the page at once, moves are undoable set_ui edits, run events are applied once per
// scheduled frame.
import test from 'node:test';
import assert from 'node:assert/strict';
import {createStore} from '../src/model/store.js';
import {Editor} from '../src/model/editor.js';
import {indexCatalog} from '../src/model/catalog.js';

test('store: set merges, tells listeners once per change, and skips no-op sets', () => {
  const s = createStore({a: 1, b: 2});
  let calls = 0;
  const stop = s.subscribe(() => calls++);
  const first = s.get();
  s.set({a: 1});
  assert.equal(calls, 0);
  assert.equal(s.get(), first, 'an unchanged state keeps its identity');
  s.set((st) => ({b: st.b + 1}));
  assert.deepEqual(s.get(), {a: 1, b: 3});
  assert.equal(calls, 1);
  stop();
  s.set({a: 5});
  assert.equal(calls, 1);
});

const catalog = {blocks: [
  {type: 'Const', category: 'generic', inputs: [], outputs: [{name: 'output'}], attrs: []},
  {type: 'Identity', category: 'array', inputs: [{name: 'input', dtypes: ['float32']}],
   outputs: [{name: 'output'}], attrs: []},
]};
const page0 = {format: 'blockflow.page', version: 1, name: 'p', outputs: ['b'], blocks: [
  {id: 'a', type: 'Const', ui: {x: 0, y: 0}},
  {id: 'b', type: 'Identity', inputs: {input: 'a'}, ui: {x: 300, y: 0}},
]};

function fakeApi() {
  const sent = [];
  return {
    sent, client: 'c1',
    getPage: async () => ({page: structuredClone(page0), revision: 'r1',
                           session_page: null}),
    open: async () => ({ok: true, problems: [], blocks: {}}),
    edits: async (name, edits) => { sent.push(edits); return {ok: true, problems: [], blocks: {}}; },
  };
}

async function opened() {
  const api = fakeApi();
  const frames = [];
  const ed = new Editor(api, {schedule: (f) => frames.push(f)});
  ed.set({index: indexCatalog(catalog)});
  await ed.openPage('p');
  return {ed, api, frames};
}

test('a move is a set_ui edit: sent, marked unsaved, undoable, redoable', async () => {
  const {ed, api} = await opened();
  assert.equal(ed.state.dirty, false);
  ed.moveBlocks({a: {x: 150.4, y: 20}, b: {x: 300, y: 0}});
  await ed.queue.idle();
  assert.deepEqual(api.sent, [[{op: 'set_ui', block: 'a', ui: {x: 150, y: 20}}]],
                   'one edit, only for the block that moved');
  assert.equal(ed.state.dirty, true);
  assert.deepEqual(ed.state.page.blocks[0].ui, {x: 150, y: 20});
  assert.equal(ed.state.canUndo, true);
  ed.undo();
  await ed.queue.idle();
  assert.deepEqual(ed.state.page.blocks[0].ui, {x: 0, y: 0});
  assert.deepEqual(api.sent[1], [{op: 'set_ui', block: 'a', ui: {x: 0, y: 0}}]);
  ed.redo();
  assert.deepEqual(ed.state.page.blocks[0].ui, {x: 150, y: 20});
});

test('run events wait for the next frame and are applied together; the run\'s end at once', async () => {
  const {ed, frames} = await opened();
  let renders = 0;
  ed.store.subscribe(() => renders++);
  for (let i = 0; i < 50; i++) {
    ed.onEvent({type: 'block_finished', page: 'p', run_id: 'r9', block: i % 2 ? 'a' : 'b',
                device: 'cpu', ms: i});
  }
  assert.equal(frames.length, 1, 'one frame scheduled for the whole burst');
  assert.equal(renders, 0);
  frames[0]();
  assert.equal(renders, 1, 'one state change for the burst');
  assert.equal(ed.state.run.status.a.ms, 49);
  for (let i = 0; i < 10; i++) {
    ed.onEvent({type: 'block_finished', page: 'p', run_id: 'r9', block: 'b', device: 'cpu', ms: 100 + i});
  }
  ed.onEvent({type: 'run_finished', page: 'p', run_id: 'r9', ms: 7});
  assert.equal(renders, 2, 'the end and the events before it: one state change, not waiting for a frame');
  assert.equal(ed.state.run.state, 'finished');
  assert.equal(ed.state.run.status.b.ms, 109);
  assert.match(ed.state.message.text, /finished in 7\.00 ms/);
  frames[frames.length - 1]();
  assert.equal(renders, 2, 'the frame asked for before finds nothing left to apply');
});

test('the selection follows a rename, leaves removed blocks, and comes back on undo', async () => {
  const {followSelection} = await import('../src/model/editor.js');
  const after = {blocks: [{id: 'x'}, {id: 'b'}]};
  assert.deepEqual(followSelection(['a', 'b', 'c'],
                                   [{op: 'rename_block', id: 'a', new_id: 'x'}], after), ['x', 'b']);
  const same = ['b'];
  assert.equal(followSelection(same, [], after), same, 'unchanged: the same array');
  const {ed} = await opened();
  ed.select(['b']);
  assert.equal(ed.renameBlock('b', 'a'), false, 'the id is taken: refused');
  assert.deepEqual(ed.state.selected, ['b']);
  assert.match(ed.state.message.text, /used by another block/);
  assert.equal(ed.renameBlock('b', 'c'), true);
  assert.deepEqual(ed.state.selected, ['c']);
  ed.select([]);
  ed.undo();
  assert.deepEqual(ed.state.selected, ['b'], 'undo selects the block it brings back');
  ed.redo();
  assert.deepEqual(ed.state.selected, [], 'redo restores the selection after the step');
});

test('a Placeholder fed from a .npy of the pages folder: checked, then named in the run', async () => {
  const api = fakeApi();
  const ph = {format: 'blockflow.page', version: 1, name: 'f', outputs: ['p'], blocks: [
    {id: 'p', type: 'Placeholder', attrs: {dtype: 'float32', shape: [2, 2]}, ui: {x: 0, y: 0}}]};
  api.getPage = async () => ({page: structuredClone(ph), revision: 'r1', session_page: null});
  const infos = {'data/x.npy': {dtype: 'float32', shape: [2, 2]},
                 'data/i.npy': {dtype: 'int32', shape: [2, 2]},
                 'data/big.npy': {dtype: 'float32', shape: [3, 2]}};
  api.fileInfo = async (path) => ({file: path, ...infos[path]});
  const runs = [];
  api.run = async (name, fetch, feeds) => { runs.push(feeds); return {run_id: 'r1'}; };
  const ed = new Editor(api, {schedule: (f) => f()});
  ed.set({index: indexCatalog({blocks: [...catalog.blocks, {type: 'Placeholder',
    category: 'generic', inputs: [], outputs: [{name: 'output'}], attrs: [], feedable: true}]})});
  await ed.openPage('f');
  assert.match(await ed.feedFromFile('p', 'data/i.npy'), /holds int32; p takes float32/);
  assert.match(await ed.feedFromFile('p', 'data/big.npy'), /shape \[3,2\]/);
  assert.equal(ed.state.feeds.p, undefined, 'a file that does not fit feeds nothing');
  assert.equal(await ed.feedFromFile('p', 'data/x.npy'), '');
  assert.deepEqual(ed.state.feeds.p, {dtype: 'float32', shape: [2, 2], source: 'file',
                                      name: 'data/x.npy'});
  await ed.startRun();
  assert.deepEqual(runs[0], {p: {file: 'data/x.npy'}}, 'the run names the file');
  await ed.startRun();
  assert.deepEqual(runs[1], {}, 'once: the session keeps the feed');
});
