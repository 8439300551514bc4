// Unit tests of src/model/panel.js: the panel's height per tab, its limits and its memory.
import test from 'node:test';
import assert from 'node:assert/strict';
import {clampHeight, defaultHeight, heightLimits, loadHeights, panelHeight,
        saveHeights} from '../src/model/panel.js';

class Memory {
  constructor(init = {}) { this.m = new Map(Object.entries(init)); }
  getItem(k) { return this.m.has(k) ? this.m.get(k) : null; }
  setItem(k, v) { this.m.set(k, String(v)); }
}

test('defaults show each tab: problems short, output a little more, teach most', () => {
  assert.equal(defaultHeight('problems', 900), 260);
  assert.equal(defaultHeight('output', 900), 300);
  assert.equal(defaultHeight('teach', 900), 558);
});

test('the canvas keeps 160 px under the 37 px top bar, and the panel 90 px', () => {
  assert.deepEqual(heightLimits(900), {min: 90, max: 703});
  assert.deepEqual(heightLimits(200), {min: 90, max: 90});
  assert.equal(clampHeight(1e6, heightLimits(900)), 703);
  assert.equal(clampHeight(-5, heightLimits(900)), 90);
  assert.equal(clampHeight(300.4, heightLimits(900)), 300);
  /* a small window shrinks even the default */
  assert.equal(panelHeight('teach', {}, 400), 203);
});

test('a chosen height is remembered per tab; junk in storage means defaults', () => {
  const s = new Memory();
  saveHeights(s, {output: 300});
  assert.deepEqual(loadHeights(s), {output: 300});
  assert.equal(panelHeight('output', loadHeights(s), 900), 300);
  assert.equal(panelHeight('problems', loadHeights(s), 900), 260);
  for (const junk of ['{', '[1]', 'null', '"x"']) {
    assert.deepEqual(loadHeights(new Memory({'blockflow.panelHeights': junk})), {}, junk);
  }
  assert.equal(panelHeight('output', {output: 'tall'}, 900), 300);
  assert.deepEqual(loadHeights(null), {});
  saveHeights({setItem() { throw new Error('quota'); }}, {output: 1}); /* ignored */
});
