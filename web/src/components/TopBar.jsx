/* TopBar.jsx - the page menu (open, new, rename, duplicate, delete), the unsaved mark, save,
 * undo/redo and the run controls. Every control is a button with a visible label and its
 * shortcut in the tooltip. */
import React from 'react';

export default function TopBar({doc, dirty, pages, run, wsState, canUndo, canRedo,
                                selectedBlock, onOpen, onSave, onUndo, onRedo, onRun, onRunTo,
                                onCancel, onPageAction}) {
  const running = run && run.state === 'running';
  return (
    <header className="topbar">
      <span className="brand">blockflow</span>
      <label className="page-picker">
        <span className="sr-only">Page</span>
        <select aria-label="Open a page" value={doc ? doc.name : ''}
                onChange={(e) => e.target.value && onOpen(e.target.value)}>
          <option value="">Open a page…</option>
          {pages.map((p) => <option key={p} value={p}>{p}</option>)}
        </select>
      </label>
      {doc && (
        <span className="docname" data-testid="docname">
          {doc.name}.json
          {dirty && <span className="dirty" title="unsaved changes" aria-label="unsaved changes"> ●</span>}
        </span>
      )}
      <div className="group">
        <button onClick={() => onPageAction('new')} title="Create a new, empty page">New</button>
        <button disabled={!doc} onClick={() => onPageAction('rename', doc.name)}>Rename</button>
        <button disabled={!doc} onClick={() => onPageAction('duplicate', doc.name)}>Duplicate</button>
        <button disabled={!doc} onClick={() => onPageAction('delete', doc.name)}>Delete</button>
      </div>
      <div className="group">
        <button disabled={!doc} onClick={onSave} title="Save the page file (Ctrl+S)">
          Save{dirty ? ' ●' : ''}
        </button>
        <button disabled={!canUndo} onClick={onUndo} title="Undo (Ctrl+Z)" aria-label="Undo">↶ Undo</button>
        <button disabled={!canRedo} onClick={onRedo} title="Redo (Ctrl+Shift+Z)" aria-label="Redo">↷ Redo</button>
      </div>
      <div className="group run-group">
        <button className="primary" disabled={!doc || running} onClick={onRun}
                title="Run the page (computes the page's outputs; unchanged blocks are reused)">
          ▶ Run
        </button>
        <button disabled={!doc || running || !selectedBlock} onClick={onRunTo}
                title="Run only what the selected block needs">
          ▶ Run to {selectedBlock ? `“${selectedBlock.id}”` : 'selected'}
        </button>
        <button disabled={!running} onClick={onCancel} title="Stop the run">■ Cancel</button>
        {run && run.id && <span className={`run-state run-${run.state}`} data-testid="run-state">{run.state}</span>}
      </div>
      <span className={`ws ws-${wsState}`} title="the live connection that brings run events">
        {wsState === 'open' ? 'connected' : 'offline'}
      </span>
    </header>
  );
}
