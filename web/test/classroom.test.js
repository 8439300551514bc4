// classroom.test.js - the editor's classroom model (model/classroom.js) and the served path of
// api.js: which space a tab views, live edits from elsewhere, a teacher's save, "update my copy".
import test from 'node:test';
import assert from 'node:assert/strict';
import {Classroom} from '../src/model/classroom.js';
import {createStore} from '../src/model/store.js';
import {served} from '../src/api.js';

function fakeEditor(me, pages = {pages: ['teach'], copies: []}) {
  const calls = [];
  const sent = [];
  const ed = {
    store: createStore({doc: null, dirty: false}),
    get state() { return this.store.get(); },
    set(p) { this.store.set(p); },
    api: {
      client: 'mine',
      me: async () => me,
      pages: async () => pages,
      roster: async () => ({students: [{name: 'ana', connected: true, page: 'teach',
                                        copies: [], last_run: null}]}),
      updateCopy: async (n) => { calls.push(['updateCopy', n]); return {}; },
      join: async (n) => ({url: `/s/x/?token=t-${n}`}),
    },
    events: {send: (m) => { sent.push(m); return true; }},
    resync: () => calls.push(['resync']),
    openPage: async (n) => calls.push(['open', n]),
    say: (k, t) => calls.push(['say', k, t]),
    dismissMessage() { calls.push(['dismiss']); this.set({message: null}); },
  };
  return {ed, calls, sent};
}

const noTimer = {setInterval: () => 1, clearInterval: () => {}};

test('served: API paths go under the folder the editor was served from', () => {
  assert.equal(served('/api/pages', '/s/abc/'), '/s/abc/api/pages');
  assert.equal(served('/api/pages', '/s/abc/index.html'), '/s/abc/api/pages');
  assert.equal(served('/s/abc/api/x', '/s/abc/'), '/s/abc/api/x', 'idempotent');
  assert.equal(served('/ws', '/'), '/ws');
});

test('a student views the teacher page until the first edit makes a copy', async () => {
  const pages = {pages: ['teach'], copies: []};
  const {ed, sent} = fakeEditor({classroom: true, role: 'student', name: 'ana'}, pages);
  const c = new Classroom(ed, noTimer);
  await c.start();
  ed.set({doc: {name: 'teach', revision: 'r'}});
  assert.deepEqual(sent.at(-1), {type: 'view', page: 'teach', space: ''});
  pages.copies = ['teach'];
  ed.set({dirty: true}); /* the first edit: the server made the copy */
  await new Promise((r) => setTimeout(r, 0));
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(sent.at(-1), {type: 'view', page: 'teach', space: 'ana'});
});

test('an edit from elsewhere reloads the page; our own does not', async () => {
  const {ed, calls} = fakeEditor({classroom: true, role: 'teacher'});
  const c = new Classroom(ed, noTimer);
  await c.start();
  ed.set({doc: {name: 'teach', revision: 'r'}});
  assert.equal(c.onEvent({type: 'page_edited', page: 'teach', by: 'mine'}), true);
  assert.equal(calls.filter((x) => x[0] === 'resync').length, 0);
  c.onEvent({type: 'page_edited', page: 'teach', by: 'other-tab'});
  assert.equal(calls.filter((x) => x[0] === 'resync').length, 1);
  c.onEvent({type: 'page_edited', page: 'other', by: 'other-tab'});
  assert.equal(calls.filter((x) => x[0] === 'resync').length, 1);
  assert.equal(c.onEvent({type: 'run_started', run_id: 'r1'}), false, 'run events pass on');
  assert.equal(c.state.roster.length, 1);
});

test("a teacher's save offers a student 'update my copy'", async () => {
  const {ed, calls} = fakeEditor({classroom: true, role: 'student', name: 'ana'},
                                 {pages: ['teach'], copies: ['teach']});
  const c = new Classroom(ed, noTimer);
  await c.start();
  ed.set({doc: {name: 'teach', revision: 'r'}});
  c.onEvent({type: 'teacher_page_saved', page: 'teach', space: '', by: 'x'});
  assert.equal(c.state.teacherSaved, 'teach');
  await c.updateCopy();
  assert.deepEqual(calls.filter((x) => x[0] !== 'say'), [['updateCopy', 'teach'], ['open', 'teach']]);
  assert.equal(c.state.teacherSaved, null);
});

test('joining goes to the personal URL', async () => {
  const {ed, calls} = fakeEditor({classroom: true, role: 'joining'});
  let went = null;
  const c = new Classroom(ed, {...noTimer, navigate: (u) => { went = u; }});
  await c.start();
  ed.set({message: {kind: 'error', text: 'join the class first (POST ...)'}});
  assert.equal(ed.state.message, null, "the pages list's 403 is not shown to a joiner");
  assert.ok(calls.some((x) => x[0] === 'dismiss'));
  await c.join(' ana ');
  assert.equal(went, '/s/x/?token=t-ana');
});
