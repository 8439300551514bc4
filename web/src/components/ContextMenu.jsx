/* ContextMenu.jsx - the right-click menu of a block, a selection of blocks, a wire or the
 * empty canvas: the actions of the action table (model/actions.js) that apply there, each
 * with its shortcut, disabled where it cannot run. Escape, a click elsewhere or a choice
 * closes it; the arrow keys move between its items. */
import React, {useEffect, useRef} from 'react';
import {ACTION, MENUS, actionLabel, keyText} from '../model/actions.js';

export default function ContextMenu({editor, state, menu}) {
  const box = useRef(null);
  useEffect(() => {
    const first = box.current && box.current.querySelector('button:not(:disabled)');
    if (first) first.focus();
    const away = (e) => { if (box.current && !box.current.contains(e.target)) editor.closeMenu(); };
    const key = (e) => {
      if (e.key === 'Escape') { e.stopPropagation(); editor.closeMenu(); return; }
      if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
      e.preventDefault();
      e.stopPropagation();
      const items = [...box.current.querySelectorAll('button:not(:disabled)')];
      const i = items.indexOf(document.activeElement);
      const next = items[(i + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length];
      if (next) next.focus();
    };
    window.addEventListener('pointerdown', away, true);
    window.addEventListener('keydown', key, true);
    return () => {
      window.removeEventListener('pointerdown', away, true);
      window.removeEventListener('keydown', key, true);
    };
  }, [editor, menu]);
  const names = MENUS[menu.kind] || [];
  /* keep the menu inside the window */
  const x = Math.min(menu.x, window.innerWidth - 230);
  const y = Math.min(menu.y, window.innerHeight - names.length * 30 - 16);
  const arg = menu.kind === 'block' ? menu.id : menu.kind === 'wire' ? menu.wire
    : menu.kind === 'pane' ? menu.at : undefined;
  return (
    <div className="context-menu" role="menu" ref={box} style={{left: x, top: y}}
         data-testid="context-menu" aria-label={`${menu.kind} menu`}>
      {names.map((n, i) => {
        if (n === '-') return <hr key={`-${i}`} />;
        const a = ACTION[n];
        const ok = a.enabled(state);
        return (
          <button key={n} role="menuitem" disabled={!ok} data-action={n} title={a.title}
                  onClick={() => { editor.closeMenu(); a.perform(editor, arg); }}>
            <span>{actionLabel(a, state)}</span>
            {a.keys.length > 0 && <kbd>{keyText(a)}</kbd>}
          </button>
        );
      })}
    </div>
  );
}
