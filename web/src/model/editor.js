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
import {applyEdits, copyBlocks, diffPages, emptyPage, pasteBlocks, freeSpot, freeSpotNear,
        layout, pasteOffset, samePage, sourcePort} from './page.js';
import {tidyLayout} from './tidy.js';
import {History} from './history.js';
import {EditQueue} from './batch.js';
import {checkWire} from './wires.js';
import {createStore} from './store.js';
import {invalidateRun, reduceRunEvents, runMessage} from './runState.js';
import {planRun} from './runPlan.js';
import {placeGradients} from './gradients.js';
import {feedProblem, toBase64} from './npy.js';
import {Training} from './training.js';

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
  marks: {},        /* gradient blocks a check marked: {id: {ok, text}} (TrainPanel) */
  detached: false,  /* the file does not load: no server session, edits checked one by one */
  feeds: {},        /* Placeholder id -> {dtype, shape, source, name}: what the editor feeds */
  reveal: null,     /* {ids, at}: blocks the canvas should bring into view */
  tab: 'problems',  /* the tab of the panel under the canvas: problems, output, teach */
  renaming: null,   /* {id, at}: the Inspector puts the focus in the block's id field */
  menu: null,       /* the right-click menu: {kind: block|wire|pane, id?, x, y, at?: flow pos} */
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
    this.onOpened = () => {}; /* the page `name` is open (App puts it in the address bar) */
    this.feedData = new Map();  /* Placeholder id -> {b64, sent}: sent once per session */
    this.feedRetry = false;
    this.training = new Training(api); /* live training of the open page (training.js) */
  }

  get state() { return this.store.get(); }
  set(patch) { this.store.set(patch); }

  say(kind, text) { this.set({message: {kind, text, at: Date.now()}}); }
  dismissMessage() { this.set({message: null}); }
  setDialog(dialog) { this.set({dialog}); }
  select(ids) { this.set({selected: ids}); }
  /** Ask the canvas to bring blocks `ids` into view (new blocks placed off screen). */
  reveal(ids) { this.set({reveal: {ids, at: Date.now()}}); }
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
    if (this.training.handle(ev)) return; /* train_*, step_finished, edits_* */
    if (ev.kind) this.jobEvents.push(ev);
    else if (/^run_(finished|failed|cancelled)$/.test(ev.type)) this.gate.running = false;
    /* the server forgot a feed (its session closed meanwhile): send them all again, once */
    const e = ev.type === 'run_failed' && ev.error;
    const doc = this.state.doc;
    if (e && e.code === 'missing_feed' && this.feedData.has(e.block) && !this.feedRetry &&
        doc && ev.page === doc.name) {
      this.feedRetry = true;
      for (const f of this.feedData.values()) f.sent = false;
      const upTo = this.state.run && this.state.run.upTo;
      setTimeout(() => this.startRun(upTo || null), 0);
      return;
    }
    this.pendingEvents.push(ev);
    /* the run's end is shown at once, with the events before it: waiting for the next frame
     * only delays the last state a person waits for */
    if (/^run_(finished|failed|cancelled)$/.test(ev.type)) this.flushEvents();
    else if (this.pendingEvents.length === 1) this.schedule(() => this.flushEvents());
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
      if (m && ev.type === 'run_finished' && run && run.skipped && run.skipped.length) {
        message.text += ` Skipped ${run.skipped.map((k) => k.output).join(', ')}: see Problems.`;
      }
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
      /* while the page trains, an edit is applied at the next step: training.edits waits */
      this.queue = new EditQueue((edits) => (this.state.detached
        ? api.check(name, this.state.page) : this.training.edits(name, edits)));
      this.training.open(detached ? null : name);
      this.history.clear();
      this.feedData = new Map();
      this.set({doc: {name, revision: got.revision}, page: held, check: ck, detached, feeds: {},
                dirty: !samePage(held, got.page), selected: [],
                run: null, marks: {}});
      this.syncHistory();
      this.say('info', `Opened ${name}.`);
      this.onOpened(name);
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
    /* sent first, then drawn: the request leaves before React draws the edit (about 45 ms of
     * a 500-block page), so the labels come back that much sooner. The run's tensors the edit
     * drops on the server are those invalidateRun marks stale here: an Output or Teach tab
     * drawn for the edit does not read them, and a read already on its way gets 410, which
     * both show as "the page changed since the last run". */
    const sent = this.queue.enqueue(edits);
    this.set({page: after, dirty: true, selected: followSelection(selBefore, edits, after),
              run: invalidateRun(this.state.run, edits, after)});
    if (edits.some((e) => e.op !== 'set_ui')) this.gate.stale();
    if (record) this.history.push(before, after, key, Date.now(), selBefore);
    this.syncHistory();
    sent.then((ck) => { if (ck) this.set({check: ck}); }).catch((e) => {
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
      if (e instanceof ApiError && e.code === 'busy' &&
          this.training.getSnapshot().state === 'running') {
        this.say('error', 'The page is training: pause it, then save.');
      } else if (e instanceof ApiError && e.code === 'stale_revision' && !overwrite) {
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
        if (isOpen()) {
          this.set({doc: null, page: null, check: null, run: null});
          this.onOpened(null);
        }
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
    const at = position ? freeSpotNear(p, position) : freeSpot(p);
    const id = freshId(type, new Set(p.blocks.map((b) => b.id)));
    const e = {op: 'add_block', id, type, attrs: initialAttrs(entry),
               ui: {x: Math.round(at.x), y: Math.round(at.y)}};
    this.change([e]);
    this.select([id]);
    this.say('info', entry.inputs.length
      ? `Added ${type} "${id}": wire its inputs (drag from an output dot to an input dot, or ` +
        'pick each input\'s source under Ports, on the right).'
      : `Added ${type} "${id}": set its attributes on the right, and wire its output to the ` +
        'blocks it feeds.');
  }

  /**
   * A new wire. One rule for every block: a wire whose dtype the block refuses is refused
   * with the reason, whether the catalogue says so at once (a port that never takes int32)
   * or only the check of the page with the wire does (Add's two inputs must agree): the page
   * with the wire is checked first (POST .../check, nothing changes), then connected.
   */
  async connect({source, sourceHandle, target, targetHandle}, opts = {}) {
    const {page: p, index, check, doc} = this.state;
    const sp = sourceHandle.replace(/^out:/, '');
    const tp = targetHandle.replace(/^in:/, '');
    const verdict = checkWire(p, index, check, source, sp, target, tp);
    if (!verdict.ok) {
      this.say('error', `Wire refused: ${verdict.reason}`);
      return false;
    }
    const entry = index.byType.get(p.blocks.find((b) => b.id === source).type);
    const first = entry && entry.outputs[0] && entry.outputs[0].name === sp;
    const edit = {op: 'connect', block: target, port: tp,
                  source: first ? source : `${source}:${sp}`};
    if (doc && this.api.check) {
      try {
        if (this.queue) await this.queue.idle();
        const ck = await this.api.check(doc.name, applyEdits(this.state.page, [edit]));
        const bad = (ck.problems || []).find((q) => q.block === target && q.port === tp &&
                                                    /dtype/.test(q.code || ''));
        if (bad) {
          this.say('error', `Wire refused: ${bad.message}`);
          return false;
        }
      } catch (e) {
        /* no answer (or the page changed under the wire): the edit itself will tell */
      }
    }
    return this.change([edit], opts);
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

  /** Paste the clipboard: beside the originals, or at `at` (flow coordinates), in free space. */
  paste(at = null) {
    const page = this.state.page;
    if (!this.clipboard || !page) return;
    const {page: next, ids} = pasteBlocks(page, this.clipboard,
                                          pasteOffset(page, this.clipboard, at));
    this.change(diffPages(page, next), {next});
    this.select(ids);
    this.say('info', `Pasted ${ids.length} block${ids.length > 1 ? 's' : ''}: ${ids.join(', ')}.`);
  }

  /* ---- selection, layout, menus ------------------------------------------------------ */
  selectAll() {
    const p = this.state.page;
    if (p) this.select(p.blocks.map((b) => b.id));
  }

  /** Move the selected blocks by (dx, dy); repeated presses are one undo step. */
  nudge(dx, dy) {
    const {page, selected} = this.state;
    if (!page || !selected.length) return;
    const pos = layout(page);
    const moves = {};
    for (const id of selected) {
      const p = pos.get(id);
      if (p) moves[id] = {x: p.x + dx, y: p.y + dy};
    }
    this.moveBlocks(moves, 'nudge');
  }

  /** Copies of blocks `ids` (the selection), offset and clear of the others, selected. */
  duplicate(ids = this.state.selected) {
    const page = this.state.page;
    if (!page || !ids.length) return;
    const frag = copyBlocks(page, ids, {keepInputs: true}); /* the copies read the same inputs */
    const {page: next, ids: made} = pasteBlocks(page, frag, pasteOffset(page, frag));
    this.change(diffPages(page, next), {next});
    this.select(made);
    this.say('info', `Duplicated ${ids.length} block${ids.length > 1 ? 's' : ''}: ${made.join(', ')}.`);
  }

  deleteSelected(ids = this.state.selected) {
    if (ids.length) this.removeBlocks(ids);
  }

  /** Select block `id` and put the focus in its id field (double-click, the menu's Rename). */
  startRename(id) {
    this.select([id]);
    this.set({renaming: {id, at: Date.now()}});
  }

  setTab(tab) { this.set({tab}); }

  /** Explain a convolution's numbers: its Teach tab. */
  explain(id) {
    this.select([id]);
    this.set({tab: 'teach'});
  }

  openMenu(menu) { this.set({menu}); }
  closeMenu() { if (this.state.menu) this.set({menu: null}); }

  /** Tidy up: a layered layout (dagre) of the selection, or of the page, as one undo step. */
  tidy(ids = null) {
    const page = this.state.page;
    if (!page) return;
    const sizes = this.view && this.view.sizes ? this.view.sizes() : new Map();
    const only = ids && ids.length > 1 ? ids : null;
    this.moveBlocks(tidyLayout(page, sizes, only));
    if (this.view && this.view.fit) this.view.fit();
    this.say('info', only ? `Tidied ${only.length} blocks.` : 'Tidied the page.');
  }

  fitView() {
    if (this.view && this.view.fit) this.view.fit();
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
      /* a partial run: outputs below a problem (or an unfed Placeholder) are left out */
      const {page, index, check} = this.state;
      const plan = upTo ? {fetch: [upTo], skipped: []}
        : planRun(page, index, check, (id) => this.feedData.has(id));
      const feeds = {};
      for (const [id, f] of this.feedData) if (!f.sent) feeds[id] = f.value;
      const res = await this.gate.run(() => this.api.run(d.name, plan.fetch, feeds));
      for (const id of Object.keys(feeds)) this.feedData.get(id).sent = true;
      const skipped = plan.fetch ? plan.skipped : [];
      this.set((s) => ({run: s.run && s.run.id === res.run_id
        ? {...s.run, upTo: upTo || null, skipped}
        : {id: res.run_id, state: 'running', status: {}, upTo: upTo || null, skipped}}));
      if (skipped.length) {
        this.say('info', `Running ${plan.fetch.length} of ${page.outputs.length} outputs; ` +
                         `skipped ${skipped.map((k) => `${k.output} (${k.reason})`).join('; ')}.`);
      }
    } catch (e) {
      if (e instanceof ApiError && e.body.problems) {
        this.set({run: {id: null, state: 'failed', status: {}, error: e.body.error,
                        problems: e.body.problems}});
      }
      this.say('error', `Run refused: ${e.message}`);
    }
  }

  /**
   * Feed Placeholder `id` with `bytes` (a .npy file's) described by `info` ({dtype, shape,
   * source: 'grid'|'upload'|'file', name?}). It goes with the next run (once: the server's
   * session keeps it); what depends on the Placeholder computes again.
   */
  setFeed(id, bytes, info) {
    this.useFeed(id, toBase64(bytes), info);
  }

  /**
   * Feed Placeholder `id` from .npy file `path` of the pages folder (as /api/files names it):
   * the server says what the file holds, which must fit the block; the run names the file
   * (the server reads it, nothing is uploaded). Resolves to '' or why the file cannot feed it.
   */
  async feedFromFile(id, path) {
    const block = this.state.page && this.state.page.blocks.find((b) => b.id === id);
    if (!block) return `no block ${id}`;
    let info;
    try {
      info = await this.api.fileInfo(path);
    } catch (e) {
      return e.message;
    }
    const why = feedProblem(block, info, path);
    if (why) return why;
    this.useFeed(id, {file: path}, {dtype: info.dtype, shape: info.shape, source: 'file', name: path});
    return '';
  }

  /* the feed `value` (base64 .npy, or {file}) goes with the next run */
  useFeed(id, value, info) {
    this.feedData.set(id, {value, sent: false});
    this.feedRetry = false;
    this.set((s) => ({feeds: {...s.feeds, [id]: info},
                      run: invalidateRun(s.run, [{op: 'feed', block: id}], s.page)}));
    this.say('ok', `${id} will be fed ${info.dtype}[${info.shape.join(',')}] ` +
                   `(${info.name || info.source}) with the next run.`);
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
      const held = sess.session_page || before;
      this.set({page: held, check: res.page, dirty: true});
      /* clear of the other blocks, and the gradients are outputs: one undo step in all */
      this.change(placeGradients(held, id, res.created), {record: false});
      this.history.push(before, this.state.page, null, Date.now(), this.state.selected);
      this.syncHistory();
      this.reveal([id, ...res.created.blocks]);
      const g = res.created.gradients || {};
      this.say('ok', `Added ${res.created.blocks.join(', ')}: ${Object.entries(g).map(([k, v]) =>
        `${v} is d/d${k}`).join(', ')}; ${res.created.dy} is the incoming gradient dy.`);
    } catch (e) {
      this.say('error', `Gradient blocks not added: ${e.message}`);
    }
  }

  /** The backward pass was built on the server (TrainPanel): show the page its session holds. */
  async backwardBuilt(res) {
    const d = this.state.doc;
    const before = this.state.page;
    this.gate.stale();
    const sess = await this.api.getPage(d.name, true);
    const after = sess.session_page || before;
    this.set({page: after, check: res.page, dirty: true});
    this.history.push(before, after, null);
    this.syncHistory();
    this.say('ok', `Backward pass built: ${res.created.blocks.length} blocks added on the right.`);
    /* the page has doubled: framed whole, the new blocks with the ones they train */
    this.reveal(after.blocks.map((b) => b.id));
  }

  setMarks(marks) { this.set({marks}); }

  /** A constant's grid changed: send the edit, then re-run (only what depends on it runs). */
  editValue(edits, opts) {
    this.change(edits, opts);
    if (this.state.run && this.state.run.id) this.startRun(null);
  }
}
