/*
 * App.jsx - the editor's layout: the panels, fed from the editor's store (model/editor.js,
 * read through useSyncExternalStore), and the keyboard, which runs the actions of the action
 * table (model/actions.js). The state and every operation live in the Editor; this file only
 * wires them to the components.
 */
import React, {useCallback, useEffect, useMemo} from 'react';
import {ReactFlowProvider} from '@xyflow/react';
import {Api, connectEvents} from '../api.js';
import {Editor} from '../model/editor.js';
import {useStore} from '../model/useStore.js';
import {actionForKey} from '../model/actions.js';
import {listProblems} from '../model/runState.js';
import TopBar from './TopBar.jsx';
import Palette from './Palette.jsx';
import Canvas from './Canvas.jsx';
import Inspector from './Inspector.jsx';
import BottomPanel from './BottomPanel.jsx';
import Dialog from './Dialog.jsx';
import ImportDialog from './ImportDialog.jsx';
import Welcome from './Welcome.jsx';
import Toast from './Toast.jsx';
import ContextMenu from './ContextMenu.jsx';
import TrainBar from './TrainBar.jsx';
import {trainables} from '../model/training.js';
import ClassBar from './ClassBar.jsx';
import {filesNear} from '../model/pageNames.js';
import {Classroom} from '../model/classroom.js';

/** The one editor of this tab (exported for components that need it outside props). */
export const editor = new Editor(new Api());
/** The classroom side of this tab (model/classroom.js): nothing shows without --classroom. */
export const classroom = new Classroom(editor);

/* The open page is in the address bar (?page=NAME): a reload, a bookmark or a link opens it
 * again; Back and Forward move between the pages opened. */
const pageInUrl = () => new URLSearchParams(location.search).get('page');
editor.onOpened = (name) => {
  if (name === pageInUrl()) return;
  const u = new URL(location.href);
  if (name) u.searchParams.set('page', name);
  else u.searchParams.delete('page');
  history.pushState(null, '', u.pathname + u.search + u.hash);
};

function useUrlPage(ed) {
  useEffect(() => {
    const first = pageInUrl();
    if (first) ed.openPage(first);
    const onPop = () => {
      const name = pageInUrl();
      const doc = ed.state.doc;
      if (name && (!doc || doc.name !== name)) ed.openPage(name);
    };
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, [ed]);
}

/** The keyboard: the action a key names, unless a text field keeps the key for itself. */
function useActionKeys(ed) {
  useEffect(() => {
    const onKey = (e) => {
      /* text fields keep their own undo; a list (an attribute's choices, an input's wire) has
       * none, so Ctrl+Z there undoes the page edit the list just made */
      const typing = /^(INPUT|TEXTAREA)$/.test((e.target && e.target.tagName) || '') ||
                     !!(e.target && e.target.isContentEditable);
      /* where the key was pressed: the canvas (or nothing focused), a block, elsewhere */
      const t = e.target;
      const where = !t || t === document.body ? 'canvas'
        : t.closest && t.closest('.react-flow__node') ? 'node'
        : t.closest && t.closest('.react-flow') ? 'canvas' : 'other';
      const a = actionForKey(e, typing, undefined, where);
      if (!a) return;
      e.preventDefault();
      if (a.enabled(ed.state)) a.perform(ed);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [ed]);
}

export default function App() {
  const ed = editor;
  const state = useStore(ed.store);
  const {index, pages, files, doc, page, check, dirty, selected, run, message, dialog,
         marks} = state;

  useEffect(() => ed.start(connectEvents), [ed]);
  useEffect(() => { classroom.start(); return () => classroom.close(); }, []);
  useActionKeys(ed);
  useUrlPage(ed);

  useEffect(() => {
    document.title = doc ? `${dirty ? '● ' : ''}${doc.name} - blockflow` : 'blockflow editor';
    const warn = (e) => { if (dirty) { e.preventDefault(); e.returnValue = ''; } };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [doc, dirty]);

  const problems = useMemo(() => listProblems(check, run), [check, run]);
  const dismiss = useCallback(() => ed.dismissMessage(), [ed]);
  const onMenu = useCallback((m) => ed.openMenu(m), [ed]);
  const onRename = useCallback((id) => ed.startRename(id), [ed]);
  const onView = useCallback((v) => { ed.view = v; }, [ed]);
  const setTab = useCallback((t) => ed.setTab(t), [ed]);
  const addBlock = useCallback((type) => ed.addBlock(type, null), [ed]);
  const selectedBlock = page && selected.length === 1
    ? page.blocks.find((b) => b.id === selected[0]) : null;
  /* a `file` attribute names files from its page's folder, as the CLI resolves them */
  const nearFiles = useMemo(() => filesNear(doc ? doc.name : '', files), [doc, files]);
  const selection = useMemo(() => (page && selected.length > 1
    ? page.blocks.filter((b) => selected.includes(b.id)) : null), [page, selected]);

  return (
    <div className="app">
      <TopBar editor={ed} state={state} />
      <ClassBar classroom={classroom} state={state} />
      {page && trainables(page).length > 0 && <TrainBar training={ed.training} />}
      <div className="main">
        <Palette index={index} disabled={!page} onAdd={addBlock} />
        <div className="centre">
          {/* the message over the canvas's top: clear of the header and the training bar */}
          <Toast message={message} onDismiss={dismiss} />
          {page && index ? (
            <ReactFlowProvider key={doc ? doc.name : ''}>
              <Canvas
                page={page} index={index} check={check} run={run} selected={selected} marks={marks}
                onSelect={(ids) => ed.select(ids)} onConnect={(c) => ed.connect(c)}
                onRemoveBlocks={(ids, wires) => ed.removeBlocks(ids, wires)}
                onDisconnect={(w) => ed.disconnect(w)}
                onMove={(moves, key) => ed.moveBlocks(moves, key)}
                onDropBlock={(type, pos) => ed.addBlock(type, pos)} reveal={state.reveal}
                onMenu={onMenu} onRename={onRename} onView={onView}
              />
            </ReactFlowProvider>
          ) : (
            <Welcome pages={pages} onOpen={(n) => ed.openPage(n)} ready={!!index}
                     onNew={() => ed.setDialog({kind: 'new'})} />
          )}
          <BottomPanel
            api={ed.api} page={page} problems={problems} run={run} selectedBlock={selectedBlock}
            index={index} onSelect={(id) => ed.select(id ? [id] : [])}
            onRunTo={(id) => ed.startRun(id)} events={ed.jobEvents} gate={ed.gate}
            docName={doc && doc.name} check={check} onAddGradients={(id) => ed.addGradients(id)}
            tab={state.tab} setTab={setTab}
            training={ed.training} onBackwardBuilt={(res) => ed.backwardBuilt(res)}
            onMarks={(m) => ed.setMarks(m)}
          />
        </div>
        <Inspector
          page={page} index={index} check={check} block={selectedBlock} files={nearFiles}
          run={run} onChange={(edits, opts) => ed.change(edits, opts)}
          onEditValue={(edits, opts) => ed.editValue(edits, opts)}
          onRename={(id, to) => ed.renameBlock(id, to)} onRefreshFiles={() => ed.refreshLists()}
          onWire={(t, p, s) => ed.wireFrom(t, p, s)} feeds={state.feeds}
          onFeed={(id, bytes, info) => ed.setFeed(id, bytes, info)}
          allFiles={files} onFeedFile={(id, path) => ed.feedFromFile(id, path)}
          selection={selection} editor={ed} state={state} renaming={state.renaming}
          onPlot={(ref) => {
            const m = ed.training.getSnapshot().metrics;
            if (!m.includes(ref)) ed.training.configure({metrics: [...m, ref]});
          }}
        />
      </div>
      {state.menu && <ContextMenu editor={ed} state={state} menu={state.menu} />}
      {dialog && dialog.kind === 'importEnuspace' && (
        <ImportDialog api={ed.api} onClose={() => ed.setDialog(null)}
                      onImported={() => ed.refreshLists()} onOpen={(n) => ed.openPage(n)} />
      )}
      {dialog && dialog.kind !== 'importEnuspace' && (
        <Dialog dialog={dialog} doc={doc} pages={pages} onClose={() => ed.setDialog(null)}
                onPageAction={(a, n, to) => ed.pageAction(a, n, to)} />
      )}
    </div>
  );
}
