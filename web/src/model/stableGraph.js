/*
 * stableGraph.js - React Flow redraws a block or a wire when its object changes, so the
 * canvas hands it the SAME objects for what did not change: on a 500-block page an edit, a
 * check answer or a batch of run events then redraws the few blocks they concern, not all.
 * A cache (one per canvas) maps ids to the last objects given out; a new object is made only
 * when something shown differs, and the very same array when nothing does (React Flow
 * rebuilds its lookups of every block and wire for a new array). A run's statuses come as an
 * overlay (`status`), so a batch of run events does not rebuild the graph of the page.
 */
import {blockPorts, farGeometry} from './farBlock.js';

const same = (a, b) => a === b || JSON.stringify(a) === JSON.stringify(b);

function sameNodeData(a, b) {
  return a.block === b.block && a.entry === b.entry && a.status === b.status &&
         a.isOutput === b.isOutput && same(a.ports, b.ports) && same(a.problems, b.problems) &&
         same(a.mark, b.mark);
}

/* whether cached wire `a` shows graph wire `b` selected as `sel` */
function sameEdge(a, b, sel) {
  return a.source === b.source && a.target === b.target && a.sourceHandle === b.sourceHandle &&
         a.targetHandle === b.targetHandle && a.selected === sel &&
         a.data.label === b.data.label && a.data.problem === b.data.problem;
}

export function createGraphCache() {
  return {data: new Map(), nodes: new Map(), edges: new Map(), nodeList: null, edgeList: null};
}

/* `list` when it holds exactly the objects of `prev` (then `prev`, the same array) */
function sameList(prev, list) {
  if (!prev || prev.length !== list.length) return list;
  for (let i = 0; i < list.length; i++) if (prev[i] !== list[i]) return list;
  return prev;
}

/**
 * The nodes for React Flow: the graph's nodes with their shown position (`override`: the
 * positions of a drag in progress), selection and measured size, reusing the cached objects
 * of nodes that did not change. `far`: the blocks are drawn far (farBlock.js), and each node
 * carries its far box's size and dots, which React Flow then does not measure.
 */
export function stableNodes(cache, graphNodes, {override = null, selected = [], sizes, initial,
                                                status = null, far = false}) {
  const sel = new Set(selected);
  const seen = new Set();
  const out = graphNodes.map((n) => {
    seen.add(n.id);
    let data = cache.data.get(n.id);
    const st = status ? status[n.id] : n.data.status;
    const want = st === n.data.status ? n.data : {...n.data, status: st};
    if (!data || !sameNodeData(data, want)) {
      data = want;
      cache.data.set(n.id, data);
    }
    const position = override && override[n.id] ? override[n.id] : n.position;
    const prev = cache.nodes.get(n.id);
    const measured = far ? null : sizes.get(n.id);
    if (prev && prev.data === data && prev.position.x === position.x &&
        prev.position.y === position.y && prev.selected === sel.has(n.id) &&
        (far ? !!prev.handles : !prev.handles && prev.measured === measured)) {
      return prev;
    }
    let node;
    if (far) {
      const {inputs, outputs} = blockPorts(data.entry);
      const {width, height, handles} = farGeometry(n.id, inputs, outputs);
      /* drawn by FarLayer, not by React Flow, unless selected (then React Flow draws it over
       * the canvas, to be dragged with the others selected) */
      node = {...n, data, position, selected: sel.has(n.id), measured: {width, height}, handles,
              hidden: !sel.has(n.id)};
    } else {
      node = {...n, data, position, selected: sel.has(n.id), measured,
              initialWidth: initial.width, initialHeight: initial.height};
    }
    cache.nodes.set(n.id, node);
    return node;
  });
  for (const id of cache.nodes.keys()) if (!seen.has(id)) { cache.nodes.delete(id); cache.data.delete(id); }
  cache.nodeList = sameList(cache.nodeList, out);
  return cache.nodeList;
}

/**
 * React Flow measured block `id` as `size`: the cached node object carries it from now on
 * (written in place: React Flow already holds the size, and the object it was given stays
 * the same, so nothing is drawn again for a measurement).
 */
export function noteMeasured(cache, id, size) {
  const n = cache.nodes.get(id);
  if (n) n.measured = size;
}

/** The edges for React Flow, reusing the cached objects of wires that did not change. */
export function stableEdges(cache, graphEdges, selectedEdges = []) {
  const sel = new Set(selectedEdges);
  const seen = new Set();
  const out = graphEdges.map((e) => {
    seen.add(e.id);
    const prev = cache.edges.get(e.id);
    const s = sel.has(e.id);
    if (prev && sameEdge(prev, e, s)) return prev;
    const next = {...e, selected: s};
    cache.edges.set(e.id, next);
    return next;
  });
  for (const id of cache.edges.keys()) if (!seen.has(id)) cache.edges.delete(id);
  cache.edgeList = sameList(cache.edgeList, out);
  return cache.edgeList;
}
