/* ActionButton.jsx - a button for one action of the table (model/actions.js): its label,
 * tooltip (with the shortcut) and enabled state come from the table, so the button, the
 * shortcut and the menus always agree. */
import React from 'react';
import {ACTION, actionLabel} from '../model/actions.js';

export default function ActionButton({editor, state, name, className, ariaLabel, children}) {
  const a = ACTION[name];
  return (
    <button className={className} disabled={!a.enabled(state)} title={a.title}
            aria-label={ariaLabel} data-action={name}
            onClick={() => a.perform(editor)}>
      {children || actionLabel(a, state)}
    </button>
  );
}
