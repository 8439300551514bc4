/* DocToggle.jsx - documentation one click away: a small ⓘ button that shows its children. */
import React, {useState} from 'react';

export default function DocToggle({label, children}) {
  const [open, setOpen] = useState(false);
  return (
    <span className="doc-toggle">
      <button className="info" aria-label={label} aria-expanded={open}
              onClick={() => setOpen(!open)} type="button">?</button>
      {open && <div className="doc">{children}</div>}
    </span>
  );
}
