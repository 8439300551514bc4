// page_names.test.js - page names with folders (src/model/pageNames.js), as the server's
// store.c accepts them, the page list's groups, and the files a page's `file` attribute names.
import test from 'node:test';
import assert from 'node:assert/strict';
import {filesNear, groupPages, pageFolder, pageLeaf, pageNameProblem} from '../src/model/pageNames.js';

test('page names: folders allowed, nothing that could leave the pages folder', () => {
  for (const ok of ['a', 'teach/conv_grad', 'a/b/c/d', 'x.y-z_1', 'teach/run-2', 'run']) {
    assert.equal(pageNameProblem(ok), '', ok);
  }
  for (const bad of ['', '.hidden', 'a/.b', '../x', 'a/../b', '/abs', 'a/', 'a//b', 'a/b/c/d/e',
                     'a b', 'x'.repeat(101), 'teach/run', 'teach/train', 'a\\b']) {
    assert.notEqual(pageNameProblem(bad), '', bad);
  }
});

test('folders, leaves and groups', () => {
  assert.equal(pageFolder('teach/conv'), 'teach');
  assert.equal(pageFolder('a/b/c'), 'a/b');
  assert.equal(pageFolder('top'), '');
  assert.equal(pageLeaf('a/b/c'), 'c');
  assert.equal(pageLeaf('top'), 'top');
  assert.deepEqual(groupPages(['z', 'teach/b', 'a/x', 'teach/a', 'b']),
                   [{folder: '', pages: ['z', 'b']}, {folder: 'a', pages: ['a/x']},
                    {folder: 'teach', pages: ['teach/b', 'teach/a']}]);
});

test("a page's files are named from its folder", () => {
  const files = ['x.npy', 'data/y.npy', 'teach/w.npy', 'teach/d/v.npy'];
  assert.deepEqual(filesNear('top', files), files);
  assert.deepEqual(filesNear('teach/conv', files), ['w.npy', 'd/v.npy']);
  assert.deepEqual(filesNear('other/p', files), []);
});
