/*
 * App.jsx - the editor's layout: the panels, fed from the editor's store (model/editor.js,
 * read through useSyncExternalStore), and the keyboard, which runs the actions of the action
 * table (model/actions.js). The state and every operation live in the Editor; this file only
 * wires them to the components.
 */
import React, {useEffect, useMemo} from 'react';
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
import Welcome from './Welcome.jsx';
import ClassBar from './ClassBar.jsx';
import {Classroom} from '../model/classroom.js';

/** The one editor of this tab (exported for components that need it outside props). */
export const editor = new Editor(new Api());
/** The classroom side of this tab (model/classroom.js): nothing shows without --classroom. */
export const classroom = new Classroom(editor);

/** The keyboard: the action a key names, unless a text field keeps the key for itself. */
function useActionKeys(ed) {
  useEffect(() => {
    const onKey = (e) => {
      /* text fields keep their own undo; a list (an attribute's choices, an input's wire) has
       * none, so Ctrl+Z there undoes the page edit the list just made */
      const typing = /^(INPUT|TEXTAREA)$/.test((e.target && e.target.tagName) || '') ||
                     !!(e.target && e.target.isContentEditable);
      const a = actionForKey(e, typing);
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
  const {index, pages, files, doc, page, check, dirty, selected, run, message, dialog} = state;

  useEffect(() => ed.start(connectEvents), [ed]);
  useEffect(() => { classroom.start(); return () => classroom.close(); }, []);
  useActionKeys(ed);

  useEffect(() => {
    document.title = doc ? `${dirty ? '● ' : ''}${doc.name} - blockflow` : 'blockflow editor';
    const warn = (e) => { if (dirty) { e.preventDefault(); e.returnValue = ''; } };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [doc, dirty]);

  const problems = useMemo(() => listProblems(check, run), [check, run]);
  const selectedBlock = page && selected.length === 1
    ? page.blocks.find((b) => b.id === selected[0]) : null;

  return (
    <div className="app">
      <TopBar editor={ed} state={state} />
      <ClassBar classroom={classroom} state={state} />
      <div className="main">
        <Palette index={index} disabled={!page} onAdd={(type) => ed.addBlock(type, null)} />
        <div className="centre">
          {page && index ? (
            <ReactFlowProvider key={doc ? doc.name : ''}>
              <Canvas
                page={page} index={index} check={check} run={run} selected={selected}
                onSelect={(ids) => ed.select(ids)} onConnect={(c) => ed.connect(c)}
                onRemoveBlocks={(ids, wires) => ed.removeBlocks(ids, wires)}
                onDisconnect={(w) => ed.disconnect(w)}
                onMove={(moves, key) => ed.moveBlocks(moves, key)}
                onDropBlock={(type, pos) => ed.addBlock(type, pos)}
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
          />
        </div>
        <Inspector
          page={page} index={index} check={check} block={selectedBlock} files={files}
          run={run} onChange={(edits, opts) => ed.change(edits, opts)}
          onEditValue={(edits, opts) => ed.editValue(edits, opts)}
          onRename={(id, to) => ed.renameBlock(id, to)} onRefreshFiles={() => ed.refreshLists()}
          onWire={(t, p, s) => ed.wireFrom(t, p, s)}
        />
      </div>
      {message && (
        <div className={`toast toast-${message.kind}`} role="status" aria-live="polite"
             data-testid="message">
          {message.text}
          <button className="link" onClick={() => ed.dismissMessage()} aria-label="Dismiss">×</button>
        </div>
      )}
      {dialog && (
        <Dialog dialog={dialog} doc={doc} pages={pages} onClose={() => ed.setDialog(null)}
                onPageAction={(a, n, to) => ed.pageAction(a, n, to)} />
      )}
    </div>
  );
}
