/* Dialog.jsx - the small modal dialogs: a page name for new / rename / duplicate, a
 * confirmation for delete, and the save conflict's choices. Escape cancels; the name field,
 * or else the harmless choice (Cancel), takes the focus, so a reflexive Enter never deletes a
 * page or overwrites someone else's file. */
import React, {useEffect, useRef, useState} from 'react';
import {pageNameProblem} from '../model/pageNames.js';

const TITLES = {new: 'New page', rename: 'Rename page', duplicate: 'Duplicate page',
                delete: 'Delete page'};

export default function Dialog({dialog, onClose, onPageAction}) {
  const [name, setName] = useState(dialog.kind === 'duplicate' ? `${dialog.name}-copy`
    : dialog.kind === 'rename' ? dialog.name : '');
  const first = useRef(null);
  useEffect(() => {
    if (first.current) first.current.focus();
    const k = (e) => { if (e.key === 'Escape') onClose(); };
    window.addEventListener('keydown', k);
    return () => window.removeEventListener('keydown', k);
  }, [onClose]);
  const problem = pageNameProblem(name);
  const valid = !problem;
  let body;
  if (dialog.kind === 'conflict') {
    body = (
      <>
        <h2>{dialog.title}</h2>
        <p>{dialog.text}</p>
        <div className="actions">
          {dialog.actions.map((a, i) => (
            <button key={a.label} ref={i === dialog.actions.length - 1 ? first : null}
                    onClick={() => { onClose(); a.run(); }}>{a.label}</button>
          ))}
        </div>
      </>
    );
  } else if (dialog.kind === 'delete') {
    body = (
      <>
        <h2>{TITLES.delete}</h2>
        <p>Delete <b>{dialog.name}.json</b> from the pages folder? This cannot be undone.</p>
        <div className="actions">
          <button className="danger"
                  onClick={() => { onClose(); onPageAction('delete', dialog.name); }}>Delete</button>
          <button ref={first} onClick={onClose}>Cancel</button>
        </div>
      </>
    );
  } else {
    const go = () => { if (valid) { onClose(); onPageAction(dialog.kind, dialog.name, name); } };
    body = (
      <form onSubmit={(e) => { e.preventDefault(); go(); }}>
        <h2>{TITLES[dialog.kind]}</h2>
        <label className="field">Page name (saved as NAME.json in the pages folder; folder/NAME in a subfolder)
          <input ref={first} value={name} onChange={(e) => setName(e.target.value)}
                 aria-label="Page name" aria-invalid={!valid} />
        </label>
        {!valid && name && <p className="err">{problem[0].toUpperCase() + problem.slice(1)}.</p>}
        <div className="actions">
          <button type="submit" className="primary" disabled={!valid}>OK</button>
          <button type="button" onClick={onClose}>Cancel</button>
        </div>
      </form>
    );
  }
  return (
    <div className="modal-back" onMouseDown={(e) => { if (e.target === e.currentTarget) onClose(); }}>
      <div className="modal" role="dialog" aria-modal="true">{body}</div>
    </div>
  );
}
