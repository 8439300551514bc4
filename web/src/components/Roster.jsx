/* Roster.jsx - the teacher's list of students: connected or not, the page each shows, their
 * last run (and its error), and "Look" to read a student's copy over their shoulder. */
import React from 'react';

function LastRun({run}) {
  if (!run) return <span className="muted">no run yet</span>;
  return (
    <span className={`run-state run-${run.status}`} title={run.message || ''}>
      {run.page}: {run.status}{run.code ? ` (${run.code})` : ''}
    </span>
  );
}

export default function Roster({classroom, roster, looking}) {
  return (
    <div className="roster" data-testid="roster">
      {roster.length === 0 && <span className="muted">No student has joined yet.</span>}
      <table>
        <tbody>
          {roster.map((s) => (
            <tr key={s.name} data-testid={`student-${s.name}`}>
              <td><span className={`dot ${s.connected ? 'on' : 'off'}`}
                        aria-label={s.connected ? 'connected' : 'not connected'} />{s.name}</td>
              <td>{s.page || <span className="muted">-</span>}</td>
              <td><LastRun run={s.last_run} /></td>
              <td>
                {s.copies.map((p) => (
                  <button key={p} className="link" data-testid={`look-${s.name}-${p}`}
                          onClick={() => classroom.look(s.name, p)}>Look at {p}</button>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {looking && (
        <div className="looking" data-testid="looking">
          <strong>{looking.student}'s {looking.page}</strong> (read-only):{' '}
          {looking.blocks.map((b) => `${b.id} (${b.type})`).join(', ')}
          <button className="link" onClick={() => classroom.stopLooking()}>Close</button>
        </div>
      )}
    </div>
  );
}
