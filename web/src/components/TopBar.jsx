/* TopBar.jsx - the page menu (open, new, rename, duplicate, delete), the unsaved mark, save,
 * undo/redo and the run controls. Every control is a button of the action table
 * (model/actions.js) with a visible label and its shortcut in the tooltip. */
import React from 'react';
import ActionButton from './ActionButton.jsx';
import {groupPages} from '../model/pageNames.js';

export default function TopBar({editor, state}) {
  const {doc, dirty, pages, run, wsState} = state;
  const b = (name, props = {}) => <ActionButton editor={editor} state={state} name={name} {...props} />;
  return (
    <header className="topbar">
      <span className="brand">blockflow</span>
      <label className="page-picker">
        <span className="sr-only">Page</span>
        <select aria-label="Open a page" value={doc ? doc.name : ''}
                onChange={(e) => e.target.value && editor.openPage(e.target.value)}>
          <option value="">Open a page…</option>
          {groupPages(pages).map(({folder, pages: ps}) => (folder
            ? <optgroup key={folder} label={`${folder}/`}>
                {ps.map((p) => <option key={p} value={p}>{p}</option>)}
              </optgroup>
            : ps.map((p) => <option key={p} value={p}>{p}</option>)))}
        </select>
      </label>
      {doc && (
        <span className="docname" data-testid="docname" title={`${doc.name}.json`}>
          <span className="docname-text">{doc.name}.json</span>
          {dirty && <span className="dirty" title="unsaved changes" aria-label="unsaved changes"> ●</span>}
        </span>
      )}
      <div className="group">
        {b('newPage')}{b('renamePage')}{b('duplicatePage')}{b('deletePage')}
        {b('importEnuspace', {ariaLabel: 'Import enuSpace…',
                              children: <>Import<span className="wide-only"> enuSpace</span>…</>})}
      </div>
      <div className="group">
        {b('save', {children: `Save${dirty ? ' ●' : ''}`})}
        {b('undo', {ariaLabel: 'Undo', children: <>↶<span className="wide-only"> Undo</span></>})}
        {b('redo', {ariaLabel: 'Redo', children: <>↷<span className="wide-only"> Redo</span></>})}
      </div>
      <div className="group run-group">
        {b('run', {className: 'primary'})}
        {b('runTo')}
        {b('cancel')}
        {run && run.id && <span className={`run-state run-${run.state}`} data-testid="run-state">{run.state}</span>}
      </div>
      <span className={`ws ws-${wsState}`} data-testid="ws-state"
            title={`${wsState === 'open' ? 'connected' : 'offline'}: the live connection that brings run events`}>
        <span aria-hidden="true">● </span><span className="wide-only">{wsState === 'open' ? 'connected' : 'offline'}</span>
        <span className="sr-only narrow-only">{wsState === 'open' ? 'connected' : 'offline'}</span>
      </span>
    </header>
  );
}
