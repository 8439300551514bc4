// Unit tests of src/model/viewport.js: the pan that keeps the selected block in view.
import test from 'node:test';
import assert from 'node:assert/strict';
import {panToShow} from '../src/model/viewport.js';

const box = {x: 100, y: 400, width: 200, height: 80};

test('a block already inside the pane leaves the view alone', () => {
  assert.equal(panToShow(box, {x: 0, y: 0, zoom: 1}, 800, 600), null);
});

test('a block below a pane that shrank moves up just enough, same zoom', () => {
  /* the panel grew: the pane is 300 px tall, the block's bottom is at 480 */
  assert.deepEqual(panToShow(box, {x: 0, y: 0, zoom: 1}, 800, 300), {x: 0, y: -196, zoom: 1});
});

test('above, left and right: the smallest pan on each axis, zoom kept', () => {
  assert.deepEqual(panToShow(box, {x: -150, y: -420, zoom: 1}, 800, 600),
                   {x: -84, y: -384, zoom: 1});
  /* at zoom 2 the box is 400 x 160 px from (200, 800): right edge 600 past a 500 px pane */
  assert.deepEqual(panToShow(box, {x: 0, y: -700, zoom: 2}, 500, 400),
                   {x: -116, y: -700, zoom: 2});
});

test('a block larger than the pane is centred on that axis', () => {
  const v = panToShow(box, {x: 0, y: 0, zoom: 1}, 150, 600);
  assert.deepEqual(v, {x: -125, y: 0, zoom: 1});
});
