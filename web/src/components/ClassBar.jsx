/* ClassBar.jsx - the classroom strip under the top bar (blockflow serve --classroom): who this
 * tab is; for a student, whether the page shown is the teacher's or their own copy and, when
 * the teacher has saved a change, "Update my copy"; for the teacher, the roster; for the class
 * URL, the form that joins with a name. Nothing without a classroom. */
import React, {useState} from 'react';
import Roster from './Roster.jsx';

function JoinForm({classroom}) {
  const [name, setName] = useState('');
  return (
    <form className="join" onSubmit={(e) => { e.preventDefault(); if (name.trim()) classroom.join(name); }}>
      <label>Your name <input data-testid="join-name" value={name} maxLength={40}
                              onChange={(e) => setName(e.target.value)} /></label>
      <button type="submit" className="primary" data-testid="join">Join the class</button>
      <span className="hint">Letters, digits, '.', '_' or '-'. Keep the address you get: it is yours.</span>
    </form>
  );
}

export default function ClassBar({classroom, state}) {
  const c = state.classroom;
  const [showRoster, setShowRoster] = useState(true);
  if (!c || !c.classroom) return null;
  const doc = state.doc;
  if (c.role === 'joining') {
    return <div className="classbar" data-testid="classbar"><JoinForm classroom={classroom} /></div>;
  }
  if (c.role === 'student') {
    const own = doc && c.copies.includes(doc.name);
    return (
      <div className="classbar" data-testid="classbar">
        <span className="role" data-testid="role">Student: {c.name}</span>
        {doc && (
          <span data-testid="space">
            {own ? `Your copy of ${doc.name}` : `The teacher's ${doc.name}: your first edit or run makes your own copy`}
          </span>
        )}
        {c.teacherSaved && doc && c.teacherSaved === doc.name && (
          <span className="notice" role="status">
            The teacher changed this page.
            {own
              ? <button className="primary" data-testid="update-copy" onClick={() => classroom.updateCopy()}>
                  Update my copy</button>
              : <button data-testid="reload-teacher" onClick={() => classroom.ed.openPage(doc.name)}>
                  Show it</button>}
          </span>
        )}
      </div>
    );
  }
  const n = c.roster ? c.roster.length : 0;
  return (
    <div className="classbar" data-testid="classbar">
      <span className="role" data-testid="role">Teacher</span>
      <button aria-expanded={showRoster} onClick={() => setShowRoster(!showRoster)}>
        Roster ({n})
      </button>
      {showRoster && <Roster classroom={classroom} roster={c.roster || []} looking={c.looking} />}
    </div>
  );
}
