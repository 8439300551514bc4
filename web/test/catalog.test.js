// Unit tests of src/model/catalog.js against the committed catalogue (the server's /api/blocks).
import test from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {attrWidgets, categoryTitle, formatAttrValue, freshId, indexCatalog, initialAttrs,
        parseAttrInput, searchBlocks} from '../src/model/catalog.js';

const catalog = JSON.parse(readFileSync(fileURLToPath(
  new URL('../../graph_schemas/block_catalog.json', import.meta.url)), 'utf8'));
const index = indexCatalog(catalog);
const widget = (type, name) => attrWidgets(index.byType.get(type)).find((w) => w.name === name);

test('the palette groups every block, convolutions first', () => {
  const all = index.groups.flatMap((g) => g.blocks.map((b) => b.type));
  assert.equal(all.length, catalog.blocks.length);
  assert.equal(index.groups[0].category, 'nn');
  assert.ok(index.groups[0].blocks.some((b) => b.type === 'Conv2DBackpropFilter'));
});

test('search matches type, synopsis and doc words, all of them', () => {
  const types = (q) => searchBlocks(index, q).flatMap((g) => g.blocks.map((b) => b.type));
  assert.deepEqual(types('backpropfilter'),
                   ['Conv2DBackpropFilter', 'DepthwiseConv2dNativeBackpropFilter']);
  assert.ok(types('npy').includes('Const'));
  assert.deepEqual(types('depthwise input'), ['DepthwiseConv2dNative',
                                              'DepthwiseConv2dNativeBackpropInput']
    .filter((t) => types('depthwise input').includes(t)));
  assert.equal(types('').length, catalog.blocks.length);
  assert.deepEqual(types('no-such-block-anywhere'), []);
});

test('attribute widgets come from the catalogue entry', () => {
  const pad = widget('Conv2D', 'padding');
  assert.equal(pad.widget, 'enum');
  assert.deepEqual(pad.options, ['SAME', 'VALID', 'EXPLICIT']);
  assert.equal(pad.required, true);
  const fmt = widget('Conv2D', 'data_format');
  assert.deepEqual(fmt.options, ['NHWC', 'NCHW']);
  assert.equal(fmt.default, 'NHWC');
  assert.equal(widget('Conv2D', 'strides').length, 4);
  assert.equal(widget('Conv2D', 'dilations').length, 4);
  assert.deepEqual(widget('Conv2D', 'dilations').default, [1, 1, 1, 1]);
  assert.equal(widget('Conv2D', 'explicit_paddings').length, 8);
  const cudnn = widget('Conv2D', 'use_cudnn_on_gpu');
  assert.equal(cudnn.widget, 'bool');
  assert.equal(cudnn.default, true);
  assert.equal(widget('Const', 'dtype').widget, 'dtype');
  assert.ok(widget('Const', 'dtype').options.includes('bfloat16'));
  assert.equal(widget('Const', 'file').widget, 'file');
  assert.equal(widget('Placeholder', 'shape').widget, 'shape');
  assert.ok(widget('Conv2D', 'strides').doc.length > 10);
});

test('parsing typed attribute values', () => {
  const strides = widget('Conv2D', 'strides');
  assert.deepEqual(parseAttrInput(strides, '1, 2,2 1'), {ok: true, value: [1, 2, 2, 1]});
  assert.deepEqual(parseAttrInput(strides, ['1', '2', '2', '1']), {ok: true, value: [1, 2, 2, 1]});
  assert.match(parseAttrInput(strides, '1,2,2').error, /needs 4 numbers, got 3/);
  assert.match(parseAttrInput(strides, '1,x,2,1').error, /whole numbers/);
  assert.match(parseAttrInput(strides, '').error, /required/);
  assert.deepEqual(parseAttrInput(widget('Conv2D', 'dilations'), ''), {ok: true, value: null});
  assert.deepEqual(parseAttrInput(widget('Conv2D', 'explicit_paddings'), '[]'),
                   {ok: true, value: []});
  assert.deepEqual(parseAttrInput(widget('Conv2D', 'padding'), 'VALID'), {ok: true, value: 'VALID'});
  assert.equal(parseAttrInput(widget('Conv2D', 'padding'), 'FULL').ok, false);
  assert.deepEqual(parseAttrInput(widget('Conv2D', 'use_cudnn_on_gpu'), 'false'),
                   {ok: true, value: false});
  assert.deepEqual(parseAttrInput(widget('RandomNormal', 'seed'), ' 7 '), {ok: true, value: 7});
  assert.equal(parseAttrInput(widget('RandomNormal', 'seed'), '7.5').ok, false);
  assert.deepEqual(parseAttrInput(widget('RandomNormal', 'stddev'), '0.5'), {ok: true, value: 0.5});
  assert.deepEqual(parseAttrInput(widget('Const', 'value'), '[[1,2],[3,4]]'),
                   {ok: true, value: [[1, 2], [3, 4]]});
  assert.deepEqual(parseAttrInput(widget('Const', 'value'), '1, 2'), {ok: true, value: [1, 2]});
  assert.equal(parseAttrInput(widget('Placeholder', 'shape'), '1,-2').ok, false);
  assert.equal(formatAttrValue(strides, [1, 2, 2, 1]), '1, 2, 2, 1');
});

test('a block dragged in gets every required attribute, valid', () => {
  assert.deepEqual(initialAttrs(index.byType.get('Conv2DBackpropFilter')),
                   {strides: [1, 1, 1, 1], padding: 'SAME'});
  assert.deepEqual(initialAttrs(index.byType.get('RandomNormal')), {shape: [1, 5, 5, 1]});
  assert.deepEqual(initialAttrs(index.byType.get('Add')), {});
  assert.equal(initialAttrs(index.byType.get('Const')).dtype, 'float32');
  assert.deepEqual(initialAttrs(index.byType.get('Variable')),
                   {shape: [3, 3, 1, 1], initializer: 'glorot_uniform'});
});

test('a data file (path attribute) is typed as text; training categories have titles', () => {
  assert.equal(widget('Dataset', 'file').widget, 'string');
  assert.deepEqual(parseAttrInput(widget('Dataset', 'file'), 'data/x.npy'),
                   {ok: true, value: 'data/x.npy'});
  const titles = index.groups.map((g) => g.title);
  for (const t of ['Elementwise math', 'Arrays, MatMul and reductions', 'Variables and updates',
                   'Data']) assert.ok(titles.includes(t), t);
});

test('the AllReduce category comes after Data, with its own title', () => {
  assert.equal(categoryTitle('distributed'), 'Across machines (MPI)');
  const cat = {blocks: [{type: 'AllReduce', category: 'distributed'},
                        {type: 'Const', category: 'generic'}, {type: 'Dataset', category: 'data'}]};
  assert.deepEqual(indexCatalog(cat).groups.map((g) => g.category),
                   ['data', 'distributed', 'generic']);
});

test('fresh ids are snake case and unique', () => {
  assert.equal(freshId('Conv2DBackpropFilter', new Set()), 'conv2d_backprop_filter');
  assert.equal(freshId('DepthwiseConv2dNative', new Set()), 'depthwise_conv2d_native');
  assert.equal(freshId('Add', new Set(['add'])), 'add_2');
  assert.equal(freshId('Add', new Set(['add', 'add_2'])), 'add_3');
});
