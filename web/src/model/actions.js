/*
 * actions.js - every command of the editor in one table, as Excalidraw keeps its actions: a
 * name, a label, the keys that run it, when it is enabled, and what it does. The keyboard
 * (App's keydown handler), the top bar's buttons and the right-click menus all read this
 * table, so a shortcut, a button and a menu item can never disagree.
 *
 * keys are written "Mod+Shift+Z": Mod is Ctrl (Cmd on a Mac); a key without Shift in its
 * spec does not match with Shift held. `inText: true` runs it while a text field has the focus
 * (Ctrl+S); other actions leave text fields their own keys (their own undo, select-all).
 * `canvas` keeps a key for the canvas: 'any' (the page or a block has the focus), 'pane' (the
 * page, not a block: React Flow moves a focused block with the arrows itself); elsewhere (a
 * list, a button) the key does what it does there.
 * enabled(s) and perform(ed, arg) get the editor's state and the editor (model/editor.js).
 */

import {trainables} from './training.js';

const sel1 = (s) => (s.page && s.selected.length === 1
  ? s.page.blocks.find((b) => b.id === s.selected[0]) : null);
const running = (s) => !!(s.run && s.run.state === 'running');
const trains = (s) => !!(s.doc && s.page && trainables(s.page).length);

export const ACTIONS = [
  {name: 'save', label: 'Save', keys: ['Mod+S'], inText: true,
   title: 'Save the page file (Ctrl+S)',
   enabled: (s) => !!s.doc, perform: (ed) => ed.save()},
  {name: 'undo', label: '↶ Undo', keys: ['Mod+Z'], title: 'Undo (Ctrl+Z)',
   enabled: (s) => s.canUndo, perform: (ed) => ed.undo()},
  {name: 'redo', label: '↷ Redo', keys: ['Mod+Shift+Z', 'Mod+Y'], title: 'Redo (Ctrl+Shift+Z)',
   enabled: (s) => s.canRedo, perform: (ed) => ed.redo()},
  {name: 'copy', label: 'Copy', keys: ['Mod+C'], title: 'Copy the selected blocks (Ctrl+C)',
   enabled: (s) => !!s.page && s.selected.length > 0,
   perform: (ed, id) => { if (id) ed.select([id]); ed.copy(); }},
  {name: 'paste', label: 'Paste', keys: ['Mod+V'], title: 'Paste the copied blocks (Ctrl+V)',
   enabled: (s) => !!s.page && s.hasClipboard, perform: (ed, at) => ed.paste(at || null)},
  {name: 'run', label: '▶ Run', keys: ['Mod+Enter'],
   title: "Run the page (computes the page's outputs; unchanged blocks are reused) (Ctrl+Enter)",
   enabled: (s) => !!s.doc && !running(s), perform: (ed) => ed.startRun(null)},
  {name: 'runTo', label: (s) => `▶ Run to ${sel1(s) ? `“${sel1(s).id}”` : 'selected'}`,
   keys: ['Mod+Shift+Enter'], title: 'Run only what the selected block needs (Ctrl+Shift+Enter)',
   enabled: (s) => !!s.doc && !running(s) && !!sel1(s),
   perform: (ed, id) => ed.startRun(id || sel1(ed.state).id)},
  {name: 'cancel', label: '■ Cancel', keys: [], title: 'Stop the run',
   enabled: running, perform: (ed) => ed.cancelRun()},
  {name: 'selectAll', label: 'Select all', keys: ['Mod+A'], canvas: 'any',
   title: 'Select every block (Ctrl+A)',
   enabled: (s) => !!s.page && s.page.blocks.length > 0, perform: (ed) => ed.selectAll()},
  {name: 'delete', label: 'Delete', keys: [], title: 'Delete the selected blocks (Delete)',
   /* the Delete key itself is React Flow's, which removes selected wires too */
   enabled: (s) => !!s.page && s.selected.length > 0,
   perform: (ed, id) => ed.deleteSelected(id ? [id] : ed.state.selected)},
  {name: 'duplicate', label: 'Duplicate', keys: ['Mod+D'],
   title: 'Copy the selected blocks beside them (Ctrl+D)',
   enabled: (s) => !!s.page && s.selected.length > 0,
   perform: (ed, id) => ed.duplicate(id ? [id] : ed.state.selected)},
  {name: 'rename', label: 'Rename…', keys: ['F2'], title: 'Rename the block (F2, or double-click it)',
   enabled: (s) => !!sel1(s), perform: (ed, id) => ed.startRename(id || sel1(ed.state).id)},
  {name: 'addGradients', label: 'Add gradient blocks', keys: [],
   title: 'Add the blocks computing the gradients of this convolution',
   enabled: (s) => !!sel1(s) && /^(Conv2D|DepthwiseConv2dNative)$/.test(sel1(s).type),
   perform: (ed, id) => ed.addGradients(id || sel1(ed.state).id)},
  {name: 'explain', label: 'Explain (Teach tab)', keys: [],
   title: 'Where each number of this convolution comes from',
   enabled: (s) => !!sel1(s) && /Conv2D|Conv2dNative/.test(sel1(s).type),
   perform: (ed, id) => ed.explain(id || sel1(ed.state).id)},
  {name: 'tidy', label: 'Tidy up', keys: ['Mod+Shift+L'],
   title: 'Lay the page (or the selected blocks) out in layers along the wires (Ctrl+Shift+L)',
   enabled: (s) => !!s.page && s.page.blocks.length > 1,
   perform: (ed) => ed.tidy(ed.state.selected)},
  {name: 'fit', label: 'Fit the page in view', keys: ['Shift+F'], title: 'Show the whole page (Shift+F)',
   enabled: (s) => !!s.page, perform: (ed) => ed.fitView()},
  ...[['Left', -1, 0], ['Right', 1, 0], ['Up', 0, -1], ['Down', 0, 1]].flatMap(([k, x, y]) => [
    {name: `nudge${k}`, label: `Nudge ${k.toLowerCase()}`, keys: [`Arrow${k}`], canvas: 'pane',
     title: `Move the selected blocks 10 px ${k.toLowerCase()}`,
     enabled: (s) => !!s.page && s.selected.length > 0, perform: (ed) => ed.nudge(10 * x, 10 * y)},
    {name: `nudge${k}Far`, label: `Nudge ${k.toLowerCase()} far`, keys: [`Shift+Arrow${k}`],
     canvas: 'pane',
     title: `Move the selected blocks 50 px ${k.toLowerCase()}`,
     enabled: (s) => !!s.page && s.selected.length > 0, perform: (ed) => ed.nudge(50 * x, 50 * y)},
  ]),
  {name: 'deleteWire', label: 'Delete the wire', keys: [], title: 'Cut this wire',
   enabled: (s) => !!s.page, perform: (ed, wire) => wire && ed.disconnect([wire])},
  {name: 'newPage', label: 'New', keys: [], title: 'Create a new, empty page',
   enabled: () => true, perform: (ed) => ed.setDialog({kind: 'new'})},
  {name: 'renamePage', label: 'Rename', keys: [], title: 'Rename the page file',
   enabled: (s) => !!s.doc, perform: (ed) => ed.setDialog({kind: 'rename', name: ed.state.doc.name})},
  {name: 'duplicatePage', label: 'Duplicate', keys: [], title: 'Copy the page file',
   enabled: (s) => !!s.doc,
   perform: (ed) => ed.setDialog({kind: 'duplicate', name: ed.state.doc.name})},
  {name: 'importEnuspace', label: 'Import enuSpace…', keys: [],
   title: 'Import an enuSpace-Tensorflow page (.svg with its .dat, or a Task .json export)',
   enabled: () => true, perform: (ed) => ed.setDialog({kind: 'importEnuspace'})},
  {name: 'deletePage', label: 'Delete', keys: [], title: 'Delete the page file',
   enabled: (s) => !!s.doc, perform: (ed) => ed.setDialog({kind: 'delete', name: ed.state.doc.name})},
];

/* training (model/training.js; TrainBar's buttons): the training state is the Training store's,
 * read when the action runs */
ACTIONS.push(
  {name: 'trainPlayPause', label: '▶ Play / ⏸ Pause', keys: ['Alt+P'],
   title: 'Play: train step after step; Pause: stop after this step (Alt+P)', enabled: trains,
   perform: (ed) => (ed.training.getSnapshot().state === 'running' ? ed.training.pause()
     : ed.training.play()).catch(() => {})},
  {name: 'trainStep', label: '⏭ Step', keys: ['Alt+.'], title: 'One training step (Alt+.)',
   enabled: trains,
   perform: (ed) => (ed.training.getSnapshot().state === 'paused' ||
                     ed.training.getSnapshot().state === 'idle'
     ? ed.training.stepOnce().catch(() => {}) : null)},
  {name: 'trainReset', label: '⟲ Reset', keys: ['Alt+R'],
   title: 'Variables back to their initial values, step 0 (Alt+R)', enabled: trains,
   perform: (ed) => ed.training.reset().catch(() => {})},
);

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
export function actionForKey(e, typing, actions = ACTIONS, where = 'canvas') {
  for (const a of actions) {
    if (!a.keys.some((k) => keyMatches(e, k))) continue;
    if (typing && !a.inText) return null;
    if (a.canvas === 'pane' && where !== 'canvas') return null;
    if (a.canvas === 'any' && where !== 'canvas' && where !== 'node') return null;
    return a;
  }
  return null;
}

/** The keys of an action as a person reads them ("Ctrl+Shift+Z"). */
export function keyText(a) {
  const mac = typeof navigator !== 'undefined' && /Mac/.test(navigator.platform || '');
  return (a.keys[0] || '').replace('Mod', mac ? '⌘' : 'Ctrl');
}

/** The right-click menu of a block, a wire or the empty canvas: action names, '-' a rule. */
export const MENUS = {
  block: ['runTo', 'explain', 'addGradients', '-', 'rename', 'duplicate', 'copy', '-', 'delete'],
  blocks: ['duplicate', 'copy', 'tidy', '-', 'delete'],
  wire: ['deleteWire'],
  pane: ['paste', 'selectAll', '-', 'tidy', 'fit', '-', 'run'],
};
