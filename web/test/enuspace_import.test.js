// enuspace_import.test.js - the pure part of "Import enuSpace page" (src/model/enuspaceImport.js):
// which chosen file is the page and which its .dat, the name offered, the request body (base64
// that decodes to the same bytes), and the report as the dialog's lines.
import test from 'node:test';
import assert from 'node:assert/strict';
import {importBody, pageNameFrom, pickFiles, summarizeReport, toBase64, validImportName}
  from '../src/model/enuspaceImport.js';

const f = (name) => ({name});

test('the page and its .dat are picked from the chosen files', () => {
  const p = pickFiles([f('Xor.dat'), f('Xor.svg')]);
  assert.equal(p.page.name, 'Xor.svg');
  assert.equal(p.dat.name, 'Xor.dat');
  assert.equal(p.warning, '');
  assert.equal(pickFiles([f('basic.json')]).dat, null);
  assert.match(pickFiles([f('a.svg'), f('b.dat')]).warning, /not named after a\.svg/);
  assert.match(pickFiles([f('a.svg'), f('b.svg')]).error, /one page/);
  assert.match(pickFiles([f('a.dat')]).error, /Choose the page/);
  assert.match(pickFiles([f('a.png'), f('a.svg')]).error, /not an enuSpace file/);
  assert.match(pickFiles([f('a.svg'), f('a.dat'), f('b.dat')]).error, /at most one/);
  assert.match(pickFiles([]).error, /Choose the page/);
});

test('the name offered is safe; the server takes only safe names', () => {
  assert.equal(pageNameFrom('convolution_neural_network_eval.svg'), 'convolution_neural_network_eval');
  assert.equal(pageNameFrom('C:\\pages\\Xor 2.svg'), 'Xor_2');
  assert.equal(pageNameFrom('..svg'), 'imported');
  assert.equal(pageNameFrom('.hidden.svg'), 'hidden');
  assert.equal(pageNameFrom('x'.repeat(80) + '.json').length, 60);
  assert.ok(validImportName('basic'));
  assert.ok(!validImportName('../evil'));
  assert.ok(!validImportName('.x'));
  assert.ok(!validImportName(''));
  assert.ok(!validImportName('x'.repeat(61)));
});

test('base64 of every byte value, in chunks, decodes to the same bytes', () => {
  const bytes = new Uint8Array(70000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) & 255;
  const back = Buffer.from(toBase64(bytes), 'base64');
  assert.deepEqual(new Uint8Array(back), bytes);
  const body = importBody({name: 'p', pageBytes: new Uint8Array([0xff, 0xfe, 0x3c, 0]),
                           datBytes: null, partial: 1});
  assert.deepEqual(body, {name: 'p', page: '//48AA==', partial: true});
  assert.equal(importBody({name: 'p', pageBytes: [], datBytes: new Uint8Array([1]).buffer}).dat, 'AQ==');
});

test('the report becomes a headline, lines and the unsupported blocks', () => {
  const ok = summarizeReport({
    page: 'Xor', source: 'svg', enuspace_version: '3.0.2.0', blocks_read: 46, wires_read: 68,
    mapped: [{id: 'a', type: 'Subtract', op: 'Sub'}, {id: 'b', type: 'Subtract', op: 'Sub'},
             {id: 'c', type: 'MatMul', op: 'MatMul'}],
    literals: [{}], dat_values: [], dropped: [{id: 'S', type: 'ClientSession'}],
    result_caches_dropped: 45, outputs: ['cost', 'W1'], sessions: [{infinite_loop: true}],
    notes: ['a note'], unsupported: [], placeholders: [], ok: true,
  });
  assert.equal(ok.headline, 'Imported Xor: 3 blocks.');
  assert.ok(ok.ok);
  assert.deepEqual(ok.lines, [
    '46 blocks and 68 wires read (SVG page, enuSpace 3.0.2.0).',
    '3 blocks mapped: Subtract → Sub.',
    '1 literal values became Consts.',
    'Dropped: S (ClientSession).',
    '45 saved results (result_* pins, display only) dropped.',
    'Outputs: cost, W1.',
    'The ClientSession ran steps back to back (INFINITE_LOOP): train it.',
    'a note',
  ]);
  const bad = summarizeReport({page: 'g', source: 'task-json', blocks_read: 2, wires_read: 1,
                               mapped: [], ok: false,
                               unsupported: [{id: 'g', type: 'AddSymbolicGradients', why: 'no',
                                              feeds: ['n:x <- grad_outputs[3]']}]});
  assert.equal(bad.headline, 'g cannot be imported: 1 block cannot be mapped.');
  assert.equal(bad.lines[0], '2 blocks and 1 wires read (Task JSON export).');
  assert.deepEqual(bad.unsupported[0].feeds, ['n:x <- grad_outputs[3]']);
  assert.deepEqual(summarizeReport(null), {headline: '', lines: [], unsupported: []});
});
