/*
 * App.jsx - the editor: state, the server conversation, and the layout of the panels.
 *
 * The page model lives here (`page`, the same JSON the file holds). Every change is made as
 * a list of server edits: the model is updated at once (applyEdits), the edits go to the
 * server's open session as a batch (EditQueue), and the server's check answer brings the
 * dtype/shape labels and problems back. Undo and redo send diffPages(...) the same way, so the
 * session, the model and what a run computes always agree, and re-runs stay incremental.
 */
import React, {useCallback, useEffect, useMemo, useRef, useState} from 'react';
import {ReactFlowProvider} from '@xyflow/react';
import {Api, ApiError, connectEvents} from '../api.js';
import {Gate, JobEvents, addGradients as addGradientsCall} from '../api/teach.js';
import {indexCatalog, initialAttrs, freshId} from '../model/catalog.js';
import {applyEdits, copyBlocks, diffPages, emptyPage, pasteBlocks,
        freeSpot, parseSource, sourcePort} from '../model/page.js';
import {History} from '../model/history.js';
import {EditQueue} from '../model/batch.js';
import {checkWire} from '../model/wires.js';
import TopBar from './TopBar.jsx';
import Palette from './Palette.jsx';
import Canvas from './Canvas.jsx';
import Inspector from './Inspector.jsx';
import BottomPanel from './BottomPanel.jsx';
import Dialog from './Dialog.jsx';
import Welcome from './Welcome.jsx';
import TrainBar from './TrainBar.jsx';
import {Training, trainables} from '../model/training.js';

const api = new Api();
const training = new Training(api); /* live training of the open page (model/training.js) */

/** A block event's state for the canvas (started, reused, done with device, kernel and ms,
 * failed or cancelled); null for an event that is not about one block. */
function blockState(ev) {
  switch (ev.type) {
    case 'block_cached': return {state: 'cached'};
    case 'block_started': return {state: 'running'};
    case 'block_finished':
      return {state: 'finished', device: ev.device, kernel: ev.kernel, ms: ev.ms,
              outputs: ev.outputs};
    case 'block_failed':
      /* the block a Cancel stopped did not fail: it was cancelled */
      return ev.code === 'ECANCELED' ? {state: 'cancelled'}
        : {state: 'failed', code: ev.code, message: ev.message};
    default: return null;
  }
}

export default function App() {
  const [index, setIndex] = useState(null);
  const [pages, setPages] = useState([]);
  const [files, setFiles] = useState([]);
  const [doc, setDoc] = useState(null); /* {name, revision} of the open page */
  const [page, setPage] = useState(null);
  const [check, setCheck] = useState(null);
  const [dirty, setDirty] = useState(false);
  const [selected, setSelected] = useState([]);
  const [run, setRun] = useState(null); /* {id, state, status: {block: {...}}, error} */
  const [message, setMessage] = useState(null); /* {kind, text} */
  const [dialog, setDialog] = useState(null);
  const [wsState, setWsState] = useState('connecting');
  const [marks, setMarks] = useState({}); /* gradient blocks checked: {id: {ok, text}} */
  const [, bump] = useState(0);
  const pageRef = useRef(null);
  const docRef = useRef(null);
  const history = useRef(new History());
  const queue = useRef(null);
  const clipboard = useRef(null);
  const runRef = useRef(null);
  const jobEvents = useRef(new JobEvents()); /* the teaching jobs' events (explain, gradcheck) */
  const gate = useRef(new Gate()); /* page runs and teaching jobs, in turn */
  pageRef.current = page;
  docRef.current = doc;
  runRef.current = run;

  const say = useCallback((kind, text) => setMessage({kind, text, at: Date.now()}), []);

  /* ---- start: catalogue, pages, events ---------------------------------------------- */
  const refreshLists = useCallback(async () => {
    try {
      const [p, f] = await Promise.all([api.pages(), api.files().catch(() => ({files: []}))]);
      setPages(p.pages);
      setFiles(f.files || []);
    } catch (e) {
      say('error', e.message);
    }
  }, [say]);

  useEffect(() => {
    api.blocks().then((c) => setIndex(indexCatalog(c))).catch((e) => {
      say('error', e.status === 401
        ? 'Not signed in: open the URL that `blockflow serve` printed (it ends in ?token=...).'
        : e.message);
    });
    refreshLists();
    return connectEvents({
      onHello: (client) => {
        api.client = client;
        jobEvents.current.connected = true;
        setWsState('open');
      },
      onEvent: (ev) => onRunEvent(ev),
      onState: (s) => {
        if (s !== 'open') jobEvents.current.connected = false;
        setWsState(s === 'open' ? 'open' : 'closed');
      },
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  /* ---- run events ------------------------------------------------------------------- */
  const onRunEvent = (ev) => {
    if (training.handle(ev)) return;
    const mine = docRef.current && ev.page === docRef.current.name;
    /* a teaching job (it names its kind) is not the page's run: the Teach tab waits for its
     * end, and the blocks its runs computed light up on the canvas as a run's do */
    if (ev.kind) {
      jobEvents.current.push(ev);
      const st = blockState(ev);
      if (st && mine) {
        setRun((r) => ({...(r || {id: null, state: 'idle'}),
                        status: {...((r && r.status) || {}), [ev.block]: st}}));
      }
      return;
    }
    if (/^run_(finished|failed|cancelled)$/.test(ev.type)) gate.current.running = false;
    setRun((r) => {
      /* events may arrive before the run request's answer: the first one starts the run */
      if (!r || ev.run_id !== r.id) {
        if (!mine) return r;
        r = {id: ev.run_id, state: 'running', status: {}};
      }
      const st = blockState(ev);
      if (st) return {...r, status: {...r.status, [ev.block]: st}};
      const status = {...r.status};
      switch (ev.type) {
        case 'run_finished': return {...r, state: 'finished', status, ms: ev.ms};
        case 'run_failed': return {...r, state: 'failed', status, error: ev.error,
                                   problems: ev.problems};
        case 'run_cancelled':
          for (const [id, s] of Object.entries(status)) {
            if (s.state === 'running') status[id] = {state: 'cancelled'};
          }
          return {...r, state: 'cancelled', status};
        default: return r;
      }
    });
    if (ev.type === 'run_finished') say('ok', `Run finished in ${Number(ev.ms || 0).toFixed(2)} ms.`);
    if (ev.type === 'run_failed') say('error', `Run failed: ${(ev.error || {}).message || ''}`);
    if (ev.type === 'run_cancelled') say('info', 'Run cancelled.');
  };

  /* ---- open, save, and the page list ------------------------------------------------ */
  const openPage = useCallback(async (name) => {
    try {
      if (docRef.current && queue.current) await queue.current.idle();
      const got = await api.getPage(name);
      if (!got.page) {
        say('error', `${name}.json is not valid JSON; fix it in a text editor.`);
        return;
      }
      let ck;
      try {
        ck = await api.open(name);
      } catch (e) {
        ck = e.body && e.body.problems ? {ok: false, problems: e.body.problems, blocks: {}} : null;
        if (!ck) throw e;
      }
      /* the session may hold unsaved edits of an earlier visit: show what it holds */
      const sess = await api.getPage(name, true);
      const held = sess.session_page || got.page;
      queue.current = new EditQueue((edits) => training.edits(name, edits));
      training.open(name);
      setMarks({});
      history.current.clear();
      setDoc({name, revision: got.revision});
      setPage(held);
      setCheck(ck);
      setDirty(JSON.stringify(held) !== JSON.stringify(got.page));
      setSelected([]);
      setRun(null);
      say('info', `Opened ${name}.`);
    } catch (e) {
      say('error', e.message);
    }
  }, [say]);

  const resync = useCallback(async () => {
    const d = docRef.current;
    if (!d) return;
    const sess = await api.getPage(d.name, true);
    if (sess.session_page) setPage(sess.session_page);
    setCheck(await api.open(d.name));
  }, []);

  /** Apply `edits` (their result is `next`, when already known), record them for undo. */
  const change = useCallback((edits, {key = null, next = null, record = true} = {}) => {
    const before = pageRef.current;
    if (!before || !edits.length) return;
    let after;
    try {
      after = next || applyEdits(before, edits);
    } catch (e) {
      say('error', e.message);
      return;
    }
    setPage(after);
    pageRef.current = after;
    setDirty(true);
    if (edits.some((e) => e.op !== 'set_ui')) gate.current.stale();
    if (record) history.current.push(before, after, key);
    bump((n) => n + 1);
    queue.current.enqueue(edits).then((ck) => { if (ck) setCheck(ck); }).catch((e) => {
      if (e instanceof ApiError && e.status === 422) {
        say('error', `Refused: ${e.message}`);
        resync();
      } else if (e instanceof ApiError && e.code === 'busy') {
        say('error', 'The page is running: wait for the run to end or cancel it, then edit.');
        resync();
      } else {
        say('error', e.message);
      }
    });
  }, [say, resync]);

  const save = useCallback(async (overwrite = false) => {
    const d = docRef.current;
    if (!d) return;
    await queue.current.idle();
    try {
      const res = await api.putPage(d.name, pageRef.current, d.revision);
      setDoc({...d, revision: res.revision});
      setDirty(false);
      say('ok', `Saved ${d.name}.json.`);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'busy' && training.getSnapshot().state === 'running') {
        say('error', 'The page is training: pause it (⏸), then save.');
      } else if (e instanceof ApiError && e.code === 'stale_revision' && !overwrite) {
        setDialog({
          kind: 'conflict',
          title: 'The file changed on disk',
          text: `${d.name}.json was changed by someone else (or another tab) since you opened ` +
                'it. Overwrite it with your version, or load the version on disk and lose ' +
                'your unsaved edits?',
          actions: [
            {label: 'Overwrite the file', run: async () => {
              setDoc({...d, revision: e.body.revision});
              docRef.current = {...d, revision: e.body.revision};
              await save(true);
            }},
            {label: 'Load the disk version', run: async () => {
              await api.close(d.name).catch(() => {});
              await openPage(d.name);
            }},
            {label: 'Cancel', run: () => {}},
          ],
        });
      } else if (e instanceof ApiError && e.body.problems) {
        say('error', `Not saved: ${e.message}`);
      } else {
        say('error', e.message);
      }
    }
  }, [say, openPage]);

  const pageAction = useCallback(async (action, name, to) => {
    try {
      if (action === 'new') {
        await api.putPage(to, emptyPage(to), null);
        await refreshLists();
        await openPage(to);
      } else if (action === 'rename') {
        await api.rename(name, to);
        await refreshLists();
        if (docRef.current && docRef.current.name === name) await openPage(to);
      } else if (action === 'duplicate') {
        await api.duplicate(name, to);
        await refreshLists();
        await openPage(to);
      } else if (action === 'delete') {
        await api.deletePage(name);
        await refreshLists();
        if (docRef.current && docRef.current.name === name) {
          setDoc(null); setPage(null); setCheck(null); setRun(null);
        }
        say('info', `Deleted ${name}.json.`);
      }
    } catch (e) {
      say('error', e.message);
    }
  }, [openPage, refreshLists, say]);

  /* ---- editing operations ----------------------------------------------------------- */
  const addBlock = useCallback((type, position) => {
    const p = pageRef.current;
    const entry = index && index.byType.get(type);
    if (!p || !entry) return;
    const id = freshId(type, new Set(p.blocks.map((b) => b.id)));
    const e = {op: 'add_block', id, type, attrs: initialAttrs(entry),
               ui: {x: Math.round(position.x), y: Math.round(position.y)}};
    change([e]);
    setSelected([id]);
    say('info', `Added ${type} "${id}": wire its inputs (drag from an output dot to an input ` +
                'dot, or pick each input\'s source under Ports, on the right).');
  }, [index, change, say]);

  const connect = useCallback(({source, sourceHandle, target, targetHandle}, opts = {}) => {
    const p = pageRef.current;
    const sp = sourceHandle.replace(/^out:/, '');
    const tp = targetHandle.replace(/^in:/, '');
    const verdict = checkWire(p, index, check, source, sp, target, tp);
    if (!verdict.ok) {
      say('error', `Wire refused: ${verdict.reason}`);
      return;
    }
    const entry = index.byType.get(p.blocks.find((b) => b.id === source).type);
    const first = entry && entry.outputs[0] && entry.outputs[0].name === sp;
    change([{op: 'connect', block: target, port: tp, source: first ? source : `${source}:${sp}`}],
           opts);
  }, [index, check, change, say]);

  /** Remove blocks `ids` (their wires go with them) and cut `wires`, as one undo step. */
  const removeBlocks = useCallback((ids, wires = []) => {
    const edits = [...wires.map(({block, port}) => ({op: 'disconnect', block, port})),
                   ...ids.map((id) => ({op: 'remove_block', id}))];
    if (edits.length) change(edits);
    setSelected([]);
  }, [change]);

  const disconnect = useCallback((wires) => {
    change(wires.map(({block, port}) => ({op: 'disconnect', block, port})));
  }, [change]);

  /** The Inspector's wiring: `src` as the page stores it ("b" or "b:port"), or '' to cut.
   * Picks in one input's list merge into one undo step: the list's type-ahead picks "dy" on
   * the way to "dw". */
  const wireFrom = useCallback((target, port, src) => {
    const key = `wire:${target}:${port}`;
    if (!src) {
      change([{op: 'disconnect', block: target, port}], {key});
      return;
    }
    const {block, port: sp} = sourcePort(src, pageRef.current, index);
    connect({source: block, sourceHandle: `out:${sp}`, target, targetHandle: `in:${port}`},
            {key});
  }, [index, change, connect]);

  const moveBlock = useCallback((id, pos) => {
    const b = pageRef.current.blocks.find((x) => x.id === id);
    const ui = {...(b.ui || {}), x: Math.round(pos.x), y: Math.round(pos.y)};
    change([{op: 'set_ui', block: id, ui}], {key: `move:${id}`});
  }, [change]);

  const undo = useCallback(() => {
    const s = history.current.undo();
    if (!s) return;
    change(diffPages(pageRef.current, s.before), {next: s.before, record: false});
    bump((n) => n + 1);
  }, [change]);

  const redo = useCallback(() => {
    const s = history.current.redo();
    if (!s) return;
    change(diffPages(pageRef.current, s.after), {next: s.after, record: false});
    bump((n) => n + 1);
  }, [change]);

  const copy = useCallback(() => {
    if (!selected.length) return;
    clipboard.current = copyBlocks(pageRef.current, selected);
    say('info', `Copied ${selected.length} block${selected.length > 1 ? 's' : ''}.`);
  }, [selected, say]);

  const paste = useCallback(() => {
    if (!clipboard.current || !pageRef.current) return;
    const minX = Math.min(...clipboard.current.blocks.map((b) => (b.ui || {}).x || 0));
    const minY = Math.min(...clipboard.current.blocks.map((b) => (b.ui || {}).y || 0));
    const {page: next, ids} = pasteBlocks(pageRef.current, clipboard.current,
                                          {x: minX + 60, y: minY + 60});
    change(diffPages(pageRef.current, next), {next});
    setSelected(ids);
  }, [change]);

  /* ---- runs ------------------------------------------------------------------------- */
  const startRun = useCallback(async (upTo) => {
    const d = docRef.current;
    if (!d) return;
    try {
      await queue.current.idle();
      if (!api.client) say('info', 'Waiting for the event connection...');
      const res = await gate.current.run(() => api.run(d.name, upTo ? [upTo] : null));
      setRun((r) => (r && r.id === res.run_id ? {...r, upTo: upTo || null}
        : {id: res.run_id, state: 'running', status: {}, upTo: upTo || null}));
    } catch (e) {
      if (e instanceof ApiError && e.body.problems) {
        setRun({id: null, state: 'failed', status: {}, error: e.body.error,
                problems: e.body.problems});
      }
      say('error', `Run refused: ${e.message}`);
    }
  }, [say]);

  /** "Add gradient blocks" on a forward block: one server call, then the page as it holds it. */
  const addGradients = useCallback(async (id) => {
    const d = docRef.current;
    if (!d) return;
    try {
      await queue.current.idle();
      const before = pageRef.current;
      gate.current.stale();
      const res = await addGradientsCall(api, d.name, id);
      const sess = await api.getPage(d.name, true);
      const after = sess.session_page || before;
      setPage(after);
      pageRef.current = after;
      setCheck(res.page);
      setDirty(true);
      history.current.push(before, after, null);
      const g = res.created.gradients || {};
      say('ok', `Added ${res.created.blocks.join(', ')}: ${Object.entries(g).map(([k, v]) =>
        `${v} is d/d${k}`).join(', ')}; ${res.created.dy} is the incoming gradient dy.`);
    } catch (e) {
      say('error', `Gradient blocks not added: ${e.message}`);
    }
  }, [say]);

  /** The backward pass was built on the server: show the page as its session holds it. */
  const backwardBuilt = useCallback(async (res) => {
    const d = docRef.current;
    const before = pageRef.current;
    gate.current.stale();
    const sess = await api.getPage(d.name, true);
    const after = sess.session_page || before;
    setPage(after);
    pageRef.current = after;
    setCheck(res.page);
    setDirty(true);
    history.current.push(before, after, null);
    say('ok', `Backward pass built: ${res.created.blocks.length} blocks added on the right.`);
  }, [say]);

  /** A constant's grid changed: send the edit, then re-run (only what depends on it runs). */
  const editValue = useCallback((edits, opts) => {
    change(edits, opts);
    if (runRef.current && runRef.current.id) startRun(null);
  }, [change, startRun]);

  const cancelRun = useCallback(async () => {
    const r = runRef.current;
    if (r && r.id) await api.cancel(r.id).catch((e) => say('error', e.message));
  }, [say]);

  /* ---- keyboard --------------------------------------------------------------------- */
  useEffect(() => {
    const onKey = (e) => {
      const mod = e.ctrlKey || e.metaKey;
      /* text fields keep their own undo; a list (an attribute's choices, an input's wire) has
       * none, so Ctrl+Z there undoes the page edit the list just made */
      const typing = /^(INPUT|TEXTAREA)$/.test((e.target && e.target.tagName) || '');
      const k = e.key.toLowerCase();
      if (mod && k === 's') { e.preventDefault(); save(); return; }
      if (typing) return;
      if (mod && k === 'z' && !e.shiftKey) { e.preventDefault(); undo(); }
      else if (mod && (k === 'y' || (k === 'z' && e.shiftKey))) { e.preventDefault(); redo(); }
      else if (mod && k === 'c') copy();
      else if (mod && k === 'v') { e.preventDefault(); paste(); }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [save, undo, redo, copy, paste]);

  useEffect(() => {
    document.title = doc ? `${dirty ? '● ' : ''}${doc.name} - blockflow` : 'blockflow editor';
    const warn = (e) => { if (dirty) { e.preventDefault(); e.returnValue = ''; } };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [doc, dirty]);

  /* problems of the check, plus those of the last run, each once */
  const problems = useMemo(() => {
    const out = [...((check && check.problems) || [])];
    if (run && run.state === 'failed') {
      for (const [b, s] of Object.entries(run.status)) {
        if (s.state === 'failed') out.push({severity: 'error', code: s.code, block: b,
                                            message: `run: ${s.message}`});
      }
      for (const p of run.problems || []) {
        if (!out.some((q) => q.message === p.message && q.block === p.block)) out.push(p);
      }
      if (run.error && !out.some((q) => q.message === run.error.message)) {
        out.push({...run.error, severity: 'error', message: `run: ${run.error.message}`});
      }
    }
    return out;
  }, [check, run]);

  const selectedBlock = page && selected.length === 1
    ? page.blocks.find((b) => b.id === selected[0]) : null;

  return (
    <div className="app">
      <TopBar
        doc={doc} dirty={dirty} pages={pages} run={run} wsState={wsState}
        canUndo={history.current.canUndo()} canRedo={history.current.canRedo()}
        selectedBlock={selectedBlock}
        onOpen={openPage} onSave={() => save()} onUndo={undo} onRedo={redo}
        onRun={() => startRun(null)} onRunTo={() => selectedBlock && startRun(selectedBlock.id)}
        onCancel={cancelRun} onPageAction={(a, n) => setDialog({kind: a, name: n})}
      />
      {page && trainables(page).length > 0 && <TrainBar training={training} />}
      <div className="main">
        <Palette index={index} disabled={!page}
                 onAdd={(type) => addBlock(type, freeSpot(pageRef.current))} />
        <div className="centre">
          {page && index ? (
            <ReactFlowProvider>
              <Canvas
                page={page} index={index} check={check} run={run} selected={selected} marks={marks}
                onSelect={setSelected} onConnect={connect} onRemoveBlocks={removeBlocks}
                onDisconnect={disconnect} onMove={moveBlock} onDropBlock={addBlock}
              />
            </ReactFlowProvider>
          ) : (
            <Welcome pages={pages} onOpen={openPage} ready={!!index}
                     onNew={() => setDialog({kind: 'new'})} />
          )}
          <BottomPanel
            api={api} page={page} problems={problems} run={run} selectedBlock={selectedBlock}
            index={index} onSelect={(id) => setSelected(id ? [id] : [])}
            onRunTo={(id) => startRun(id)} events={jobEvents.current} gate={gate.current}
            docName={doc && doc.name} check={check} onAddGradients={addGradients}
            training={training} onBackwardBuilt={backwardBuilt} onMarks={setMarks}
          />
        </div>
        <Inspector
          page={page} index={index} check={check} block={selectedBlock} files={files}
          run={run} onChange={change} onEditValue={editValue} onSelect={setSelected} onRefreshFiles={refreshLists}
          onWire={wireFrom}
        />
      </div>
      {message && (
        <div className={`toast toast-${message.kind}`} role="status" aria-live="polite"
             data-testid="message">
          {message.text}
          <button className="link" onClick={() => setMessage(null)} aria-label="Dismiss">×</button>
        </div>
      )}
      {dialog && (
        <Dialog dialog={dialog} doc={doc} pages={pages} onClose={() => setDialog(null)}
                onPageAction={pageAction} />
      )}
    </div>
  );
}

export {parseSource};
