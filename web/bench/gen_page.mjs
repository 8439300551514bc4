// gen_page.mjs - the big page of the editor benchmark, generated the same way every time:
// `groups` groups of 10 blocks (a 1x8x8x1 image and a 3x3 filter, Conv2D SAME, Relu, Add of
// the image or of the previous group's last block, Neg, Mul, Sigmoid, Tanh, Identity), laid
// out five groups to a row as a saved page would be, every group's last block an output.
// 50 groups = 500 blocks. `node gen_page.mjs 50 > big.json`
export function bigPage(groups = 50, name = 'big') {
  const blocks = [];
  const outputs = [];
  for (let g = 0; g < groups; g++) {
    const x0 = (g % 5) * 3200, y0 = Math.floor(g / 5) * 420;
    const at = (i, row = 0) => ({x: x0 + i * 310, y: y0 + row * 160});
    const id = (s) => `${s}${g}`;
    blocks.push(
      {id: id('img'), type: 'Const', ui: at(0),
       attrs: {dtype: 'float32', shape: [1, 8, 8, 1], value: ((g * 7) % 10) / 10 + 0.1}},
      {id: id('w'), type: 'Const', ui: at(0, 1),
       attrs: {dtype: 'float32', shape: [3, 3, 1, 1], value: 0.1}},
      {id: id('conv'), type: 'Conv2D', ui: at(1), inputs: {input: id('img'), filter: id('w')},
       attrs: {strides: [1, 1, 1, 1], padding: 'SAME'}},
      {id: id('relu'), type: 'Relu', ui: at(2), inputs: {features: id('conv')}},
      {id: id('add'), type: 'Add', ui: at(3),
       inputs: {x: id('relu'), y: g > 0 ? `id${g - 1}` : id('img')}},
      {id: id('neg'), type: 'Neg', ui: at(4), inputs: {x: id('add')}},
      {id: id('mul'), type: 'Mul', ui: at(5), inputs: {x: id('neg'), y: id('add')}},
      {id: id('sig'), type: 'Sigmoid', ui: at(6), inputs: {x: id('mul')}},
      {id: id('tanh'), type: 'Tanh', ui: at(7), inputs: {x: id('sig')}},
      {id: id('id'), type: 'Identity', ui: at(8), inputs: {input: id('tanh')}},
    );
    outputs.push(id('id'));
  }
  return {format: 'blockflow.page', version: 1, name, blocks, outputs};
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(JSON.stringify(bigPage(Number(process.argv[2] || 50)), null, 1) + '\n');
}
