// actions.test.js - the action table (src/model/actions.js): key specs match the key presses
// a person makes (and only those), and the table's enabled rules.
import test from 'node:test';
import assert from 'node:assert/strict';
import {ACTION, ACTIONS, actionForKey, actionLabel, keyMatches} from '../src/model/actions.js';

const key = (k, mods = {}) => ({key: k, ctrlKey: false, metaKey: false, shiftKey: false,
                                altKey: false, ...mods});

test('key specs: Mod is Ctrl or Cmd; Shift must match exactly', () => {
  assert.ok(keyMatches(key('z', {ctrlKey: true}), 'Mod+Z'));
  assert.ok(keyMatches(key('z', {metaKey: true}), 'Mod+Z'));
  assert.ok(!keyMatches(key('Z', {ctrlKey: true, shiftKey: true}), 'Mod+Z'));
  assert.ok(keyMatches(key('Z', {ctrlKey: true, shiftKey: true}), 'Mod+Shift+Z'));
  assert.ok(!keyMatches(key('z'), 'Mod+Z'));
  assert.ok(keyMatches(key('Delete'), 'Delete'));
  assert.ok(!keyMatches(key('Delete', {altKey: true}), 'Delete'));
});

test('the keys pick their action; text fields keep their keys except Save', () => {
  assert.equal(actionForKey(key('z', {ctrlKey: true}), false).name, 'undo');
  assert.equal(actionForKey(key('Z', {ctrlKey: true, shiftKey: true}), false).name, 'redo');
  assert.equal(actionForKey(key('y', {ctrlKey: true}), false).name, 'redo');
  assert.equal(actionForKey(key('z', {ctrlKey: true}), true), null);
  assert.equal(actionForKey(key('s', {ctrlKey: true}), true).name, 'save');
  assert.equal(actionForKey(key('q', {ctrlKey: true}), false), null);
});

test('no two actions claim the same key', () => {
  const seen = new Map();
  for (const a of ACTIONS) {
    for (const k of a.keys) {
      const norm = k.toLowerCase();
      assert.ok(!seen.has(norm), `${k}: ${a.name} and ${seen.get(norm)}`);
      seen.set(norm, a.name);
    }
  }
});

test('enabled rules read the state', () => {
  const page = {blocks: [{id: 'a', type: 'Const'}]};
  const s = {doc: {name: 'p'}, page, selected: ['a'], run: null, canUndo: false,
             canRedo: true, hasClipboard: false};
  assert.equal(ACTION.undo.enabled(s), false);
  assert.equal(ACTION.redo.enabled(s), true);
  assert.equal(ACTION.runTo.enabled(s), true);
  assert.equal(actionLabel(ACTION.runTo, s), '▶ Run to “a”');
  assert.equal(ACTION.run.enabled({...s, run: {state: 'running'}}), false);
  assert.equal(ACTION.cancel.enabled({...s, run: {state: 'running'}}), true);
  assert.equal(ACTION.paste.enabled(s), false);
});
