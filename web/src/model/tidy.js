/*
 * tidy.js - "Tidy up": a layered left-to-right layout of the page (sources on the left, each
 * block right of what feeds it, crossings kept few) computed by dagre (@dagrejs/dagre, the
 * layout React Flow's own examples use), with each block's measured size. Returns the moves
 * ({id: {x, y}}) that the editor sends as one undoable set_ui batch. Only `ids` move when
 * given (tidying a selection), laid out from their top-left corner.
 */
import dagre from '@dagrejs/dagre';
import {layout, parseSource} from './page.js';

const DEFAULT = {width: 240, height: 90};

export function tidyLayout(page, sizes = new Map(), ids = null) {
  const only = ids ? new Set(ids) : null;
  const blocks = (page.blocks || []).filter((b) => !only || only.has(b.id));
  if (!blocks.length) return {};
  const g = new dagre.graphlib.Graph();
  g.setGraph({rankdir: 'LR', nodesep: 40, ranksep: 90, marginx: 0, marginy: 0});
  g.setDefaultEdgeLabel(() => ({}));
  for (const b of blocks) {
    const s = sizes.get(b.id) || DEFAULT;
    g.setNode(b.id, {width: s.width, height: s.height});
  }
  for (const b of blocks) {
    for (const src of Object.values(b.inputs || {})) {
      const from = parseSource(src).block;
      if (g.hasNode(from) && from !== b.id) g.setEdge(from, b.id);
    }
  }
  dagre.layout(g);
  /* keep the tidied blocks where they were on the page: the top-left of their old box */
  const old = layout(page);
  let ox = Infinity, oy = Infinity;
  for (const b of blocks) {
    const p = old.get(b.id);
    ox = Math.min(ox, p.x);
    oy = Math.min(oy, p.y);
  }
  let nx = Infinity, ny = Infinity;
  for (const b of blocks) {
    const n = g.node(b.id);
    nx = Math.min(nx, n.x - n.width / 2);
    ny = Math.min(ny, n.y - n.height / 2);
  }
  const moves = {};
  for (const b of blocks) {
    const n = g.node(b.id);
    moves[b.id] = {x: Math.round(n.x - n.width / 2 - nx + ox), y: Math.round(n.y - n.height / 2 - ny + oy)};
  }
  return moves;
}
