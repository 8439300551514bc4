/*
 * farBlock.js - a block zoomed far out (below FAR_ZOOM, on pages of more than FAR_BLOCKS
 * blocks) is a plain box whose size and port dots follow from its number of ports alone.
 * BlockNode draws it with these numbers and the canvas hands React Flow the same numbers
 * (`measured` and `handles`), so React Flow has nothing to measure: measuring 500 blocks and
 * their 1500 dots (a layout read per dot) was half of a big page's first render.
 */

/* Below this zoom a block's text cannot be read. */
export const FAR_ZOOM = 0.4;
/* only on big pages: a small page keeps every detail at every zoom */
export const FAR_BLOCKS = 150;

export const FAR_WIDTH = 240;
const HEAD = 30, ROW = 19, FIRST = 39, DOT = 10;

/** Whether blocks are drawn far: at `zoom`, on a page of `blocks` blocks. */
export const isFar = (zoom, blocks) => blocks > FAR_BLOCKS && zoom < FAR_ZOOM;

/** The top of port row `i`'s dot centre, in the block's pixels. */
export const dotTop = (i) => FIRST + i * ROW;

/**
 * A far block's size and its dots as React Flow's handle bounds (position relative to the
 * block's top left corner, in the page's pixels): a dot is DOT x DOT, centred on the block's
 * left edge (inputs, `in:NAME`) or right edge (outputs, `out:NAME`), row by row.
 */
export function farGeometry(id, inputs, outputs) {
  const rows = Math.max(inputs.length, outputs.length, 1);
  const dot = (p, i, type) => ({
    id: `${type === 'target' ? 'in' : 'out'}:${p.name}`, type, nodeId: id,
    position: type === 'target' ? 'left' : 'right',
    x: (type === 'target' ? 0 : FAR_WIDTH) - DOT / 2, y: dotTop(i) - DOT / 2,
    width: DOT, height: DOT,
  });
  return {
    width: FAR_WIDTH, height: HEAD + rows * ROW,
    handles: [...inputs.map((p, i) => dot(p, i, 'target')),
              ...outputs.map((p, i) => dot(p, i, 'source'))],
  };
}

/** The ports a block shows: its catalogue entry's, or one output for an unknown type. */
export const blockPorts = (entry) => ({inputs: entry ? entry.inputs : [],
                                       outputs: entry ? entry.outputs : [{name: 'output'}]});
