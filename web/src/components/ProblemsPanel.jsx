/* ProblemsPanel.jsx - every problem, one line each (block, port or attribute, message);
 * clicking one selects its block. */
import React from 'react';

export default function ProblemsPanel({problems, onSelect}) {
  if (!problems.length) {
    return <p className="ok-line" data-testid="no-problems">✓ No problems: every block checks out.</p>;
  }
  return (
    <ul className="problems" data-testid="problems">
      {problems.map((p, i) => (
        <li key={i}>
          <button className={`problem ${p.severity === 'warning' ? 'warn' : ''}`}
                  onClick={() => onSelect(p.block || null)} disabled={!p.block}>
            <span className="where">{p.block || 'page'}{p.port ? `.${p.port}` : ''}{p.attr ? ` (${p.attr})` : ''}</span>
            <span className="msg">{p.message}</span>
          </button>
        </li>
      ))}
    </ul>
  );
}
