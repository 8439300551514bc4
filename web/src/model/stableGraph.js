/*
 * stableGraph.js - React Flow redraws a block or a wire when its object changes, so the
 * canvas hands it the SAME objects for what did not change: on a 500-block page an edit, a
 * check answer or a batch of run events then redraws the few blocks they concern, not all.
 * A cache (one per canvas) maps ids to the last objects given out; a new object is made only
 * when something shown differs.
 */

const same = (a, b) => a === b || JSON.stringify(a) === JSON.stringify(b);

function sameNodeData(a, b) {
  return a.block === b.block && a.entry === b.entry && a.status === b.status &&
         a.isOutput === b.isOutput && same(a.ports, b.ports) && same(a.problems, b.problems) &&
         same(a.mark, b.mark);
}

function sameEdge(a, b) {
  return a.source === b.source && a.target === b.target && a.sourceHandle === b.sourceHandle &&
         a.targetHandle === b.targetHandle && a.selected === b.selected &&
         a.data.label === b.data.label && a.data.problem === b.data.problem;
}

export function createGraphCache() {
  return {data: new Map(), nodes: new Map(), edges: new Map()};
}

/**
 * The nodes for React Flow: the graph's nodes with their shown position (`override`: the
 * positions of a drag in progress), selection and measured size, reusing the cached objects
 * of nodes that did not change.
 */
export function stableNodes(cache, graphNodes, {override = null, selected = [], sizes, initial}) {
  const sel = new Set(selected);
  const seen = new Set();
  const out = graphNodes.map((n) => {
    seen.add(n.id);
    let data = cache.data.get(n.id);
    if (!data || !sameNodeData(data, n.data)) {
      data = n.data;
      cache.data.set(n.id, data);
    }
    const position = override && override[n.id] ? override[n.id] : n.position;
    const measured = sizes.get(n.id);
    const prev = cache.nodes.get(n.id);
    if (prev && prev.data === data && prev.position.x === position.x &&
        prev.position.y === position.y && prev.selected === sel.has(n.id) &&
        prev.measured === measured) {
      return prev;
    }
    const node = {...n, data, position, selected: sel.has(n.id), measured,
                  initialWidth: initial.width, initialHeight: initial.height};
    cache.nodes.set(n.id, node);
    return node;
  });
  for (const id of cache.nodes.keys()) if (!seen.has(id)) { cache.nodes.delete(id); cache.data.delete(id); }
  return out;
}

/** The edges for React Flow, reusing the cached objects of wires that did not change. */
export function stableEdges(cache, graphEdges, selectedEdges = []) {
  const sel = new Set(selectedEdges);
  const seen = new Set();
  const out = graphEdges.map((e) => {
    seen.add(e.id);
    const next = {...e, selected: sel.has(e.id)};
    const prev = cache.edges.get(e.id);
    if (prev && sameEdge(prev, next)) return prev;
    cache.edges.set(e.id, next);
    return next;
  });
  for (const id of cache.edges.keys()) if (!seen.has(id)) cache.edges.delete(id);
  return out;
}
