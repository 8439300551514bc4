/*
 * actions.js - every command of the editor in one table, as Excalidraw keeps its actions: a
 * name, a label, the keys that run it, when it is enabled, and what it does. The keyboard
 * (App's keydown handler), the top bar's buttons and the right-click menus all read this
 * table, so a shortcut, a button and a menu item can never disagree.
 *
 * keys are written "Mod+Shift+Z": Mod is Ctrl (Cmd on a Mac); a key without Shift in its
 * spec does not match with Shift held. `inText: true` runs it while a text field has the focus
 * (Ctrl+S); other actions leave text fields their own keys (their own undo, select-all).
 * enabled(s) and perform(ed, arg) get the editor's state and the editor (model/editor.js).
 */

const sel1 = (s) => (s.page && s.selected.length === 1
  ? s.page.blocks.find((b) => b.id === s.selected[0]) : null);
const running = (s) => !!(s.run && s.run.state === 'running');

export const ACTIONS = [
  {name: 'save', label: 'Save', keys: ['Mod+S'], inText: true,
   title: 'Save the page file (Ctrl+S)',
   enabled: (s) => !!s.doc, perform: (ed) => ed.save()},
  {name: 'undo', label: '↶ Undo', keys: ['Mod+Z'], title: 'Undo (Ctrl+Z)',
   enabled: (s) => s.canUndo, perform: (ed) => ed.undo()},
  {name: 'redo', label: '↷ Redo', keys: ['Mod+Shift+Z', 'Mod+Y'], title: 'Redo (Ctrl+Shift+Z)',
   enabled: (s) => s.canRedo, perform: (ed) => ed.redo()},
  {name: 'copy', label: 'Copy', keys: ['Mod+C'], title: 'Copy the selected blocks (Ctrl+C)',
   enabled: (s) => !!s.page && s.selected.length > 0, perform: (ed) => ed.copy()},
  {name: 'paste', label: 'Paste', keys: ['Mod+V'], title: 'Paste the copied blocks (Ctrl+V)',
   enabled: (s) => !!s.page && s.hasClipboard, perform: (ed) => ed.paste()},
  {name: 'run', label: '▶ Run', keys: ['Mod+Enter'],
   title: "Run the page (computes the page's outputs; unchanged blocks are reused) (Ctrl+Enter)",
   enabled: (s) => !!s.doc && !running(s), perform: (ed) => ed.startRun(null)},
  {name: 'runTo', label: (s) => `▶ Run to ${sel1(s) ? `“${sel1(s).id}”` : 'selected'}`,
   keys: ['Mod+Shift+Enter'], title: 'Run only what the selected block needs (Ctrl+Shift+Enter)',
   enabled: (s) => !!s.doc && !running(s) && !!sel1(s),
   perform: (ed, id) => ed.startRun(id || sel1(ed.state).id)},
  {name: 'cancel', label: '■ Cancel', keys: [], title: 'Stop the run',
   enabled: running, perform: (ed) => ed.cancelRun()},
  {name: 'newPage', label: 'New', keys: [], title: 'Create a new, empty page',
   enabled: () => true, perform: (ed) => ed.setDialog({kind: 'new'})},
  {name: 'renamePage', label: 'Rename', keys: [], title: 'Rename the page file',
   enabled: (s) => !!s.doc, perform: (ed) => ed.setDialog({kind: 'rename', name: ed.state.doc.name})},
  {name: 'duplicatePage', label: 'Duplicate', keys: [], title: 'Copy the page file',
   enabled: (s) => !!s.doc,
   perform: (ed) => ed.setDialog({kind: 'duplicate', name: ed.state.doc.name})},
  {name: 'deletePage', label: 'Delete', keys: [], title: 'Delete the page file',
   enabled: (s) => !!s.doc, perform: (ed) => ed.setDialog({kind: 'delete', name: ed.state.doc.name})},
];

export const ACTION = Object.fromEntries(ACTIONS.map((a) => [a.name, a]));

/** The label of an action in state `s` (some labels name the selection). */
export function actionLabel(a, s) {
  return typeof a.label === 'function' ? a.label(s) : a.label;
}

/** Whether keyboard event `e` is the key spec `spec` ("Mod+Shift+Z", "Delete", "ArrowUp"). */
export function keyMatches(e, spec) {
  const parts = spec.split('+');
  const key = parts.pop().toLowerCase();
  const want = new Set(parts.map((p) => p.toLowerCase()));
  const mod = !!(e.ctrlKey || e.metaKey);
  if (want.has('mod') !== mod) return false;
  if (want.has('shift') !== !!e.shiftKey) return false;
  if (want.has('alt') !== !!e.altKey) return false;
  return String(e.key || '').toLowerCase() === key;
}

/**
 * The action a key press runs: {action} when one of `actions` has a matching key and may run
 * here (`typing`: the focus is in a text field), else null. A disabled action still claims its
 * key (so Ctrl+S never reaches the browser's "save page as").
 */
export function actionForKey(e, typing, actions = ACTIONS) {
  for (const a of actions) {
    if (!a.keys.some((k) => keyMatches(e, k))) continue;
    if (typing && !a.inText) return null;
    return a;
  }
  return null;
}
