/* SelectionSummary.jsx - the right panel with several blocks selected: how many of each
 * type, the wires among them and to the rest of the page, their problems, and what can be
 * done to all of them (the action table's buttons). Clicking an id selects that block. */
import React from 'react';
import {parseSource} from '../model/page.js';
import ActionButton from './ActionButton.jsx';

export default function SelectionSummary({editor, state, blocks}) {
  const ids = new Set(blocks.map((b) => b.id));
  const types = new Map();
  for (const b of blocks) types.set(b.type, (types.get(b.type) || 0) + 1);
  let inside = 0, into = 0, out = 0;
  for (const b of state.page.blocks) {
    for (const src of Object.values(b.inputs || {})) {
      const from = ids.has(parseSource(src).block);
      if (from && ids.has(b.id)) inside++;
      else if (ids.has(b.id)) into++;
      else if (from) out++;
    }
  }
  const problems = ((state.check && state.check.problems) || []).filter((p) => ids.has(p.block));
  const outputs = (state.page.outputs || []).filter((o) => ids.has(parseSource(o).block));
  return (
    <aside className="inspector" aria-label="Inspector" data-testid="selection-summary">
      <h2>{blocks.length} blocks selected</h2>
      <table className="ports-table sel-types">
        <tbody>
          {[...types].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([t, n]) => (
            <tr key={t}><td>{t}</td><td>{n}</td></tr>
          ))}
        </tbody>
      </table>
      <p className="muted">{inside} wire{inside === 1 ? '' : 's'} among them, {into} coming
        in, {out} going out{outputs.length ? `; ${outputs.length} output${outputs.length > 1 ? 's' : ''} of the page` : ''}.</p>
      <p className={problems.length ? 'err' : 'ok-line'}>
        {problems.length ? `⚠ ${problems.length} problem${problems.length > 1 ? 's' : ''}` : '✓ no problems'}
      </p>
      <div className="sel-actions">
        {['duplicate', 'copy', 'tidy', 'delete'].map((n) => (
          <ActionButton key={n} editor={editor} state={state} name={n} />
        ))}
      </div>
      <h3>Blocks</h3>
      <ul className="sel-list">
        {blocks.map((b) => (
          <li key={b.id}>
            <button className="link" onClick={() => editor.select([b.id])}>{b.id}</button>
            <span className="muted"> {b.type}</span>
          </li>
        ))}
      </ul>
    </aside>
  );
}
