/*
 * editor.js - the editor's state and every operation on it, outside React.
 *
 * The state (a store.js store, read by components through useSyncExternalStore) holds the
 * catalogue index, the pages list, the open page (`page`, the same JSON the file holds), the
 * server's check answer, the run state, the selection, the message and the dialog. The undo
 * history, the edit queue, the clipboard, the run/job gate and the teaching jobs' events are
 * the editor's own objects beside it.
 *
 * Every change is a list of server edits: the model is updated at once (applyEdits), the
 * edits go to the server's open session as a batch (EditQueue), and the server's check answer
 * brings the dtype/shape labels and problems back. Undo and redo send diffPages(...) the same
 * way, so the session, the model and what a run computes always agree, and re-runs stay
 * incremental. Run events are applied in batches, once per animation frame (runState.js).
 */
import {ApiError} from '../api.js';
import {Gate, JobEvents, addGradients as addGradientsCall} from '../api/teach.js';
import {indexCatalog, initialAttrs, freshId} from './catalog.js';
import {applyEdits, copyBlocks, diffPages, emptyPage, pasteBlocks, freeSpot,
        sourcePort} from './page.js';
import {History} from './history.js';
import {EditQueue} from './batch.js';
import {checkWire} from './wires.js';
import {createStore} from './store.js';
import {invalidateRun, reduceRunEvents, runMessage} from './runState.js';

export const INITIAL = {
  index: null,      /* the catalogue, indexed (catalog.js) */
  pages: [],        /* page names of the pages folder */
  files: [],        /* .npy files of the pages folder */
  doc: null,        /* {name, revision} of the open page */
  page: null,       /* the open page's JSON, as the session holds it */
  check: null,      /* the server's check answer for `page` */
  dirty: false,     /* the session differs from the file */
  selected: [],     /* selected block ids */
  run: null,        /* runState.js */
  message: null,    /* {kind, text, at} */
  dialog: null,     /* Dialog.jsx's description */
  wsState: 'connecting',
  canUndo: false,
  canRedo: false,
  hasClipboard: false,
  detached: false,  /* the file does not load: no server session, edits checked one by one */
};

const frame = typeof requestAnimationFrame === 'function'
  ? (f) => requestAnimationFrame(f) : (f) => setTimeout(f, 0);

/** The ids of `ids` that are blocks of `page`. */
function existing(ids, page) {
  const have = new Set((page.blocks || []).map((b) => b.id));
  return ids.filter((id) => have.has(id));
}

/** The selection after `edits`: renamed blocks keep their place in it, removed ones leave. */
export function followSelection(selected, edits, after) {
  let sel = selected;
  for (const e of edits) {
    if (e.op === 'rename_block') sel = sel.map((id) => (id === e.id ? e.new_id : id));
  }
  sel = existing(sel, after);
  return sel.length === selected.length && sel.every((id, i) => id === selected[i])
    ? selected : sel;
}

export class Editor {
  /** `api`: an Api (api.js) or a stand-in; `schedule(f)`: when to apply queued run events. */
  constructor(api, {schedule = frame} = {}) {
    this.api = api;
    this.store = createStore({...INITIAL});
    this.history = new History();
    this.queue = null;
    this.clipboard = null;
    this.jobEvents = new JobEvents(); /* the teaching jobs' events (explain, gradcheck) */
    this.gate = new Gate();           /* page runs and teaching jobs, in turn */
    this.schedule = schedule;
    this.pendingEvents = [];
  }

  get state() { return this.store.get(); }
  set(patch) { this.store.set(patch); }

  say(kind, text) { this.set({message: {kind, text, at: Date.now()}}); }
  dismissMessage() { this.set({message: null}); }
  setDialog(dialog) { this.set({dialog}); }
  select(ids) { this.set({selected: ids}); }
  syncHistory() {
    this.set({canUndo: this.history.canUndo(), canRedo: this.history.canRedo()});
  }

  /* ---- start: catalogue, pages, events ---------------------------------------------- */
  async refreshLists() {
    try {
      const [p, f] = await Promise.all([this.api.pages(),
                                        this.api.files().catch(() => ({files: []}))]);
      this.set({pages: p.pages, files: f.files || []});
    } catch (e) {
      this.say('error', e.message);
    }
  }

  /** Load the catalogue and the lists, connect the events with `connect` (api.js's
   * connectEvents); returns the function that disconnects. */
  start(connect) {
    this.api.blocks().then((c) => this.set({index: indexCatalog(c)})).catch((e) => {
      this.say('error', e.status === 401
        ? 'Not signed in: open the URL that `blockflow serve` printed (it ends in ?token=...).'
        : e.message);
    });
    this.refreshLists();
    this.events = connect({
      onHello: (client) => {
        this.api.client = client;
        this.jobEvents.connected = true;
        this.set({wsState: 'open'});
      },
      onEvent: (ev) => this.onEvent(ev),
      onState: (s) => {
        if (s !== 'open') this.jobEvents.connected = false;
        this.set({wsState: s === 'open' ? 'open' : 'closed'});
        if (s === 'open' && this.onConnected) this.onConnected();
      },
    });
    return this.events;
  }

  /* ---- run events: queued, applied once per frame ------------------------------------ */
  onEvent(ev) {
    if (this.onOtherEvent && this.onOtherEvent(ev)) return; /* the classroom's (classroom.js) */
    if (ev.kind) this.jobEvents.push(ev);
    else if (/^run_(finished|failed|cancelled)$/.test(ev.type)) this.gate.running = false;
    this.pendingEvents.push(ev);
    if (this.pendingEvents.length === 1) this.schedule(() => this.flushEvents());
  }

  flushEvents() {
    const evs = this.pendingEvents;
    this.pendingEvents = [];
    if (!evs.length) return;
    const doc = this.state.doc;
    const run = reduceRunEvents(this.state.run, evs, doc && doc.name);
    let message = this.state.message;
    for (const ev of evs) {
      const m = runMessage(ev);
      if (m && doc && ev.page === doc.name) message = {...m, at: Date.now()};
    }
    this.set({run, message});
  }

  /* ---- open, save, and the page list ------------------------------------------------ */
  async openPage(name) {
    const api = this.api;
    try {
      if (this.state.doc && this.queue) await this.queue.idle();
      const got = await api.getPage(name);
      if (!got.page) {
        this.say('error', `${name}.json is not valid JSON; fix it in a text editor.`);
        return;
      }
      /* A file that does not load (an attribute value the block refuses, an unknown type)
       * gets no session: the page is then edited here, "detached", each change checked with
       * POST .../check, until a save writes a page that loads and the session opens. */
      let ck, detached = false;
      try {
        ck = await api.open(name);
      } catch (e) {
        ck = e.body && e.body.problems ? {ok: false, problems: e.body.problems, blocks: {}} : null;
        if (!ck) throw e;
        detached = true;
      }
      /* the session may hold unsaved edits of an earlier visit: show what it holds */
      const sess = detached ? {} : await api.getPage(name, true);
      const held = sess.session_page || got.page;
      this.queue = new EditQueue((edits) => (this.state.detached
        ? api.check(name, this.state.page) : api.edits(name, edits)));
      this.history.clear();
      this.set({doc: {name, revision: got.revision}, page: held, check: ck, detached,
                dirty: JSON.stringify(held) !== JSON.stringify(got.page), selected: [],
                run: null});
      this.syncHistory();
      this.say('info', `Opened ${name}.`);
    } catch (e) {
      this.say('error', e.message);
    }
  }

  /** After a refused edit: the page and check as the server's session holds them. */
  async resync() {
    const d = this.state.doc;
    if (!d || this.state.detached) return;
    try {
      const sess = await this.api.getPage(d.name, true);
      if (sess.session_page) {
        this.set({page: sess.session_page,
                  selected: existing(this.state.selected, sess.session_page)});
      }
      this.set({check: await this.api.open(d.name)});
    } catch (e) {
      this.say('error', e.message);
    }
  }

  /**
   * Apply `edits` (their result is `next`, when already known), record them for undo. The
   * selection follows renamed blocks and drops removed ones. False when the edits cannot
   * apply (the message says why; nothing changed).
   */
  change(edits, {key = null, next = null, record = true} = {}) {
    const before = this.state.page;
    if (!before || !edits.length) return false;
    let after;
    try {
      after = next || applyEdits(before, edits);
    } catch (e) {
      this.say('error', e.message.replace(/^edit \d+: /, 'Refused: '));
      return false;
    }
    const selBefore = this.state.selected;
    this.set({page: after, dirty: true, selected: followSelection(selBefore, edits, after),
              run: invalidateRun(this.state.run, edits, after)});
    if (edits.some((e) => e.op !== 'set_ui')) this.gate.stale();
    if (record) this.history.push(before, after, key, Date.now(), selBefore);
    this.syncHistory();
    this.queue.enqueue(edits).then((ck) => { if (ck) this.set({check: ck}); }).catch((e) => {
      if (e instanceof ApiError && e.status === 422) {
        this.say('error', `Refused: ${e.message}`);
        this.resync();
      } else if (e instanceof ApiError && e.code === 'busy') {
        this.say('error',
                 'The page is running: wait for the run to end or cancel it, then edit.');
        this.resync();
      } else {
        this.say('error', e.message);
      }
    });
    return true;
  }

  /** Rename block `id` to `newId`; it stays selected under its new id, or, when the id is
   * refused, under its old one. */
  renameBlock(id, newId) {
    if (!newId || newId === id) return false;
    return this.change([{op: 'rename_block', id, new_id: newId}]);
  }

  async save(overwrite = false) {
    const d = this.state.doc;
    if (!d) return;
    await this.queue.idle();
    try {
      const res = await this.api.putPage(d.name, this.state.page, d.revision);
      this.set({doc: {...d, revision: res.revision}, dirty: false});
      this.say('ok', `Saved ${d.name}.json.`);
      if (this.state.detached) await this.attach();
    } catch (e) {
      if (e instanceof ApiError && e.code === 'stale_revision' && !overwrite) {
        this.setDialog({
          kind: 'conflict',
          title: 'The file changed on disk',
          text: `${d.name}.json was changed by someone else (or another tab) since you opened ` +
                'it. Overwrite it with your version, or load the version on disk and lose ' +
                'your unsaved edits?',
          actions: [
            {label: 'Overwrite the file', run: async () => {
              this.set({doc: {...d, revision: e.body.revision}});
              await this.save(true);
            }},
            {label: 'Load the disk version', run: async () => {
              await this.api.close(d.name).catch(() => {});
              await this.openPage(d.name);
            }},
            {label: 'Cancel', run: () => {}},
          ],
        });
      } else if (e instanceof ApiError && e.body.problems) {
        this.say('error', `Not saved: ${e.message}`);
      } else {
        this.say('error', e.message);
      }
    }
  }

  /** A detached page was saved: open its session, if the file now loads. */
  async attach() {
    const d = this.state.doc;
    try {
      const ck = await this.api.open(d.name);
      this.set({detached: false, check: ck});
    } catch (e) {
      if (!(e.body && e.body.problems)) this.say('error', e.message);
    }
  }

  async pageAction(action, name, to) {
    const api = this.api;
    const isOpen = () => this.state.doc && this.state.doc.name === name;
    try {
      if (action === 'new') {
        await api.putPage(to, emptyPage(to), null);
        await this.refreshLists();
        await this.openPage(to);
      } else if (action === 'rename') {
        await api.rename(name, to);
        await this.refreshLists();
        if (isOpen()) await this.openPage(to);
      } else if (action === 'duplicate') {
        await api.duplicate(name, to);
        await this.refreshLists();
        await this.openPage(to);
      } else if (action === 'delete') {
        await api.deletePage(name);
        await this.refreshLists();
        if (isOpen()) this.set({doc: null, page: null, check: null, run: null});
        this.say('info', `Deleted ${name}.json.`);
      }
    } catch (e) {
      this.say('error', e.message);
    }
  }

  /* ---- editing operations ----------------------------------------------------------- */
  addBlock(type, position) {
    const {page: p, index} = this.state;
    const entry = index && index.byType.get(type);
    if (!p || !entry) return;
    const at = position || freeSpot(p);
    const id = freshId(type, new Set(p.blocks.map((b) => b.id)));
    const e = {op: 'add_block', id, type, attrs: initialAttrs(entry),
               ui: {x: Math.round(at.x), y: Math.round(at.y)}};
    this.change([e]);
    this.select([id]);
    this.say('info', `Added ${type} "${id}": wire its inputs (drag from an output dot to an ` +
                     'input dot, or pick each input\'s source under Ports, on the right).');
  }

  connect({source, sourceHandle, target, targetHandle}, opts = {}) {
    const {page: p, index, check} = this.state;
    const sp = sourceHandle.replace(/^out:/, '');
    const tp = targetHandle.replace(/^in:/, '');
    const verdict = checkWire(p, index, check, source, sp, target, tp);
    if (!verdict.ok) {
      this.say('error', `Wire refused: ${verdict.reason}`);
      return;
    }
    const entry = index.byType.get(p.blocks.find((b) => b.id === source).type);
    const first = entry && entry.outputs[0] && entry.outputs[0].name === sp;
    this.change([{op: 'connect', block: target, port: tp,
                  source: first ? source : `${source}:${sp}`}], opts);
  }

  /** Remove blocks `ids` (their wires go with them) and cut `wires`, as one undo step. */
  removeBlocks(ids, wires = []) {
    const edits = [...wires.map(({block, port}) => ({op: 'disconnect', block, port})),
                   ...ids.map((id) => ({op: 'remove_block', id}))];
    if (edits.length) this.change(edits);
    this.select([]);
  }

  disconnect(wires) {
    this.change(wires.map(({block, port}) => ({op: 'disconnect', block, port})));
  }

  /** The Inspector's wiring: `src` as the page stores it ("b" or "b:port"), or '' to cut.
   * Picks in one input's list merge into one undo step: the list's type-ahead picks "dy" on
   * the way to "dw". */
  wireFrom(target, port, src) {
    const key = `wire:${target}:${port}`;
    if (!src) {
      this.change([{op: 'disconnect', block: target, port}], {key});
      return;
    }
    const {block, port: sp} = sourcePort(src, this.state.page, this.state.index);
    this.connect({source: block, sourceHandle: `out:${sp}`, target, targetHandle: `in:${port}`},
                 {key});
  }

  /** Blocks moved to `moves` ({id: {x, y}}): one set_ui edit each, one undo step. */
  moveBlocks(moves, key = null) {
    const p = this.state.page;
    const edits = [];
    for (const [id, pos] of Object.entries(moves)) {
      const b = p.blocks.find((x) => x.id === id);
      if (!b) continue;
      const ui = {...(b.ui || {}), x: Math.round(pos.x), y: Math.round(pos.y)};
      if (b.ui && b.ui.x === ui.x && b.ui.y === ui.y) continue;
      edits.push({op: 'set_ui', block: id, ui});
    }
    if (edits.length) this.change(edits, {key});
  }

  /** Undo the last step; the selection goes back to what it was before that step. */
  undo() {
    const s = this.history.undo();
    if (!s) return;
    s.selectionAfter = this.state.selected;
    this.change(diffPages(this.state.page, s.before), {next: s.before, record: false});
    if (s.selection) this.select(existing(s.selection, s.before));
  }

  redo() {
    const s = this.history.redo();
    if (!s) return;
    this.change(diffPages(this.state.page, s.after), {next: s.after, record: false});
    if (s.selectionAfter) this.select(existing(s.selectionAfter, s.after));
  }

  copy() {
    const sel = this.state.selected;
    if (!sel.length || !this.state.page) return;
    this.clipboard = copyBlocks(this.state.page, sel);
    this.set({hasClipboard: true});
    this.say('info', `Copied ${sel.length} block${sel.length > 1 ? 's' : ''}.`);
  }

  paste() {
    const page = this.state.page;
    if (!this.clipboard || !page) return;
    const minX = Math.min(...this.clipboard.blocks.map((b) => (b.ui || {}).x || 0));
    const minY = Math.min(...this.clipboard.blocks.map((b) => (b.ui || {}).y || 0));
    const {page: next, ids} = pasteBlocks(page, this.clipboard, {x: minX + 60, y: minY + 60});
    this.change(diffPages(page, next), {next});
    this.select(ids);
  }

  /* ---- runs ------------------------------------------------------------------------- */
  async startRun(upTo) {
    const d = this.state.doc;
    if (!d) return;
    if (this.state.detached) {
      this.say('error', `${d.name}.json does not load (see Problems): fix it, then save ` +
                        '(Ctrl+S) to run it.');
      return;
    }
    try {
      await this.queue.idle();
      if (!this.api.client) this.say('info', 'Waiting for the event connection...');
      const res = await this.gate.run(() => this.api.run(d.name, upTo ? [upTo] : null));
      this.set((s) => ({run: s.run && s.run.id === res.run_id
        ? {...s.run, upTo: upTo || null}
        : {id: res.run_id, state: 'running', status: {}, upTo: upTo || null}}));
    } catch (e) {
      if (e instanceof ApiError && e.body.problems) {
        this.set({run: {id: null, state: 'failed', status: {}, error: e.body.error,
                        problems: e.body.problems}});
      }
      this.say('error', `Run refused: ${e.message}`);
    }
  }

  async cancelRun() {
    const r = this.state.run;
    if (r && r.id) await this.api.cancel(r.id).catch((e) => this.say('error', e.message));
  }

  /** "Add gradient blocks" on a forward block: one server call, then the page as it holds it. */
  async addGradients(id) {
    const d = this.state.doc;
    if (!d) return;
    try {
      await this.queue.idle();
      const before = this.state.page;
      this.gate.stale();
      const res = await addGradientsCall(this.api, d.name, id);
      const sess = await this.api.getPage(d.name, true);
      const after = sess.session_page || before;
      this.set({page: after, check: res.page, dirty: true});
      this.history.push(before, after, null);
      this.syncHistory();
      const g = res.created.gradients || {};
      this.say('ok', `Added ${res.created.blocks.join(', ')}: ${Object.entries(g).map(([k, v]) =>
        `${v} is d/d${k}`).join(', ')}; ${res.created.dy} is the incoming gradient dy.`);
    } catch (e) {
      this.say('error', `Gradient blocks not added: ${e.message}`);
    }
  }

  /** A constant's grid changed: send the edit, then re-run (only what depends on it runs). */
  editValue(edits, opts) {
    this.change(edits, opts);
    if (this.state.run && this.state.run.id) this.startRun(null);
  }
}
