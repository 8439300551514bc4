/*
 * page.js - the page JSON (the CLI's format, graph_schemas/page.schema.json) and the editor's
 * graph model, both ways, plus the live-page edits of the server (README "A live page") as
 * pure functions:
 *
 *   pageToGraph(page, index, check)  page -> React Flow nodes and edges, with the check's
 *                                    dtype/shape labels and problems attached
 *   applyEdits(page, edits)          what the server's edit batch does, on a copy
 *   diffPages(a, b)                  the edit batch that turns page a into page b (undo, redo,
 *                                    paste, anything expressed as "the page should become b")
 *
 * Pages are never mutated; every function returns new objects. `ui` holds positions, so the
 * file written is exactly what `blockflow run` reads.
 */

/** "block" -> {block, port: null}; "block:port" -> {block, port}. */
export function parseSource(src) {
  const s = String(src);
  const i = s.indexOf(':');
  return i < 0 ? {block: s, port: null} : {block: s.slice(0, i), port: s.slice(i + 1)};
}

/** The output port a source names: its explicit port, else the type's first output
 * (`byId`: the page's blocks by id, when the caller has them: a page's every wire). */
export function sourcePort(src, page, index, byId = null) {
  const {block, port} = parseSource(src);
  if (port) return {block, port};
  const b = byId ? byId.get(block) : (page.blocks || []).find((x) => x.id === block);
  const entry = b && index && index.byType.get(b.type);
  const first = entry && entry.outputs && entry.outputs[0];
  return {block, port: first ? first.name : 'output'};
}

/** A new empty page named `name`. */
export function emptyPage(name) {
  return {format: 'blockflow.page', version: 1, name, blocks: [], outputs: []};
}

const COL = 340;
const ROW = 150;

/**
 * Positions for blocks without `ui`: columns by depth (longest path from a source), rows in
 * page order. Blocks that have ui keep it. Returns Map(id -> {x, y}).
 */
export function layout(page) {
  const blocks = page.blocks || [];
  const placed = (b) => b.ui && Number.isFinite(b.ui.x) && Number.isFinite(b.ui.y);
  /* a saved page has every position: no columns to find (500 blocks on every edit) */
  if (blocks.every(placed)) return new Map(blocks.map((b) => [b.id, {x: b.ui.x, y: b.ui.y}]));
  const byId = new Map(blocks.map((b) => [b.id, b]));
  const depth = new Map();
  const visiting = new Set();
  const d = (id) => {
    if (depth.has(id)) return depth.get(id);
    if (visiting.has(id)) return 0; /* a cycle: the check reports it */
    visiting.add(id);
    const b = byId.get(id);
    let best = 0;
    for (const src of Object.values((b && b.inputs) || {})) {
      const s = parseSource(src).block;
      if (byId.has(s)) best = Math.max(best, d(s) + 1);
    }
    visiting.delete(id);
    depth.set(id, best);
    return best;
  };
  const rows = new Map();
  const pos = new Map();
  for (const b of blocks) {
    const col = d(b.id);
    const row = rows.get(col) || 0;
    rows.set(col, row + 1);
    const ui = b.ui || {};
    pos.set(b.id, Number.isFinite(ui.x) && Number.isFinite(ui.y)
      ? {x: ui.x, y: ui.y}
      : {x: 40 + col * COL, y: 40 + row * ROW});
  }
  return pos;
}

/* The room a block takes on the canvas, generously (the widest blocks, a Conv2D gradient with
 * its shape labels, are about 330 x 130 px), for placing new blocks clear of the others. */
const BLOCK_W = 340;
const BLOCK_H = 140;

/**
 * Where a block added without a drop point goes: the first grid cell, row by row over the
 * first four columns, whose block-sized box meets no other block. New blocks thus land beside
 * the page, in view, instead of on top of one another.
 */
export function freeSpot(page) {
  const taken = [...layout(page).values()];
  const clear = (x, y) => taken.every((p) => x + BLOCK_W <= p.x || p.x + BLOCK_W <= x ||
                                             y + BLOCK_H <= p.y || p.y + BLOCK_H <= y);
  for (let row = 0; ; row++) {
    for (let col = 0; col < 4; col++) {
      const x = 40 + col * COL, y = 40 + row * ROW;
      if (clear(x, y)) return {x, y};
    }
  }
}

const clearOf = (taken, x, y, w = BLOCK_W, h = BLOCK_H) =>
  taken.every((p) => x + w <= p.x || p.x + BLOCK_W <= x || y + h <= p.y || p.y + BLOCK_H <= y);

/**
 * The free spot nearest `at` (a drop point) for a new block: `at` itself when no block is
 * there, else the closest position, on rings of 20 px steps around it, whose block-sized box
 * meets no other block.
 */
export function freeSpotNear(page, at) {
  const taken = [...layout(page).values()];
  const x0 = Math.round(at.x), y0 = Math.round(at.y);
  if (clearOf(taken, x0, y0)) return {x: x0, y: y0};
  for (let r = 1; r < 400; r++) {
    let best = null;
    for (let i = -r; i <= r; i++) {
      for (const [dx, dy] of [[i, -r], [i, r], [-r, i], [r, i]]) {
        const x = x0 + dx * 20, y = y0 + dy * 20;
        const d = dx * dx + dy * dy;
        if ((!best || d < best.d) && clearOf(taken, x, y)) best = {x, y, d};
      }
    }
    if (best) return {x: best.x, y: best.y};
  }
  return {x: x0, y: y0};
}

/**
 * How far to move a clipboard fragment for a paste: at least 40 px right and down of the
 * originals, then further down in 40 px steps until none of its blocks meets a block of the
 * page (pasting twice does not stack the copies).
 */
export function pasteOffset(page, fragment, at = null) {
  const taken = [...layout(page).values()];
  const pos = [...layout({blocks: fragment.blocks}).values()];
  /* `at`: the fragment's top-left goes there (a paste where the menu was opened) */
  const x0 = at ? Math.round(at.x - Math.min(...pos.map((p) => p.x))) : 40;
  const y0 = at ? Math.round(at.y - Math.min(...pos.map((p) => p.y))) : 0;
  for (let k = at ? 0 : 1; k < 500; k++) {
    const off = {x: x0, y: y0 + 40 * k};
    if (pos.every((p) => clearOf(taken, p.x + off.x, p.y + off.y))) return off;
  }
  return {x: x0, y: y0 + 40};
}

/** Problems of a check answer indexed by block: Map(id -> [problem]); page-wide under "". */
export function problemsByBlock(check) {
  const m = new Map();
  for (const p of (check && check.problems) || []) {
    const k = p.block || '';
    if (!m.has(k)) m.set(k, []);
    m.get(k).push(p);
  }
  return m;
}

/** The edge id of the wire into block `target` port `port`. */
export function edgeId(target, port) {
  return `${target}.${port}`;
}

const NO_PROBLEMS = Object.freeze([]);
const sameProblems = (a, b) => a === b || (a.length === b.length &&
                                           JSON.stringify(a) === JSON.stringify(b));

/**
 * React Flow nodes and edges for `page`. Each node's data has the block, its catalogue
 * entry, its problems and the check's port info; each edge's data has the label of the
 * value it carries ("float32[1,5,5,1]") and whether a problem concerns its input port.
 * `extra.cache` (an object the caller keeps, {} at first): the node of a block whose block
 * object (edits share the blocks they do not touch), port info, problems, status, mark and
 * position are those of the last call is that call's node, the same object.
 */
export function pageToGraph(page, index, check, extra = {}) {
  const pos = layout(page);
  /* the check's problems, or (extra.problems) those with the last run's added */
  const probs = problemsByBlock(extra.problems ? {problems: extra.problems} : check);
  const info = (check && check.blocks) || {};
  const outs = new Set((page.outputs || []).map((o) => parseSource(o).block));
  const before = (extra.cache && extra.cache.nodes) || null;
  const nodes = (page.blocks || []).map((b) => {
    const entry = index ? index.byType.get(b.type) : undefined;
    const problems = probs.get(b.id) || NO_PROBLEMS;
    const ports = info[b.id] || null;
    const status = extra.status ? extra.status[b.id] : undefined;
    const mark = extra.marks ? extra.marks[b.id] : undefined; /* a checked gradient: {ok, text} */
    const isOutput = outs.has(b.id);
    const position = pos.get(b.id);
    const prev = before && before.get(b.id);
    if (prev) {
      const d = prev.data;
      if (d.block === b && d.entry === entry && d.ports === ports && d.status === status &&
          d.mark === mark && d.isOutput === isOutput && sameProblems(d.problems, problems) &&
          prev.position.x === position.x && prev.position.y === position.y) return prev;
    }
    return {id: b.id, type: 'block', position,
            data: {block: b, entry, problems, ports, status, mark, isOutput}};
  });
  if (extra.cache) extra.cache.nodes = new Map(nodes.map((n) => [n.id, n]));
  const edges = [];
  const byId = new Map((page.blocks || []).map((b) => [b.id, b]));
  for (const b of page.blocks || []) {
    for (const [port, src] of Object.entries(b.inputs || {})) {
      const s = sourcePort(src, page, index, byId);
      const pi = info[b.id] && info[b.id].inputs && info[b.id].inputs[port];
      const portProblems = (probs.get(b.id) || []).filter((p) => p.port === port);
      edges.push({
        id: edgeId(b.id, port),
        source: s.block,
        sourceHandle: `out:${s.port}`,
        target: b.id,
        targetHandle: `in:${port}`,
        type: 'wire',
        data: {
          label: pi ? pi.label : '',
          dtype: pi ? pi.dtype : null,
          shape: pi ? pi.shape : null,
          problem: portProblems.length ? portProblems[0].message : null,
        },
      });
    }
  }
  return {nodes, edges};
}

/* ---- edits ----------------------------------------------------------------------------- */

function clone(x) {
  return x === undefined ? undefined : JSON.parse(JSON.stringify(x));
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** JSON text with the keys of every object sorted: equal for equal values, whatever order. */
export function canonicalJson(x) {
  return JSON.stringify(x, (k, v) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((key) => [key, v[key]])) : v));
}

/* a page as the server's session writes it: no empty outputs list, inputs or attrs */
function normalPage(p) {
  const q = {...p};
  if (Array.isArray(q.outputs) && !q.outputs.length) delete q.outputs;
  q.blocks = (q.blocks || []).map((b) => {
    const c = {...b};
    for (const k of ['inputs', 'attrs']) {
      if (c[k] && typeof c[k] === 'object' && !Object.keys(c[k]).length) delete c[k];
    }
    return c;
  });
  return q;
}

/** Whether two pages say the same (key order, empty lists and objects aside). */
export function samePage(a, b) {
  return canonicalJson(normalPage(a)) === canonicalJson(normalPage(b));
}

/**
 * Apply one batch of server edits to a copy of `page`, as the server does (remove_block
 * also drops the wires from the removed block; rename_block makes wires and outputs
 * follow). Throws an Error naming the edit when one cannot apply, like the server's 422.
 * Blocks the edits do not touch are shared with `page` (copy on write): a view that
 * compares blocks by identity redraws only the edited ones.
 */
export function applyEdits(page, edits) {
  const p = {...page, blocks: (page.blocks || []).slice()};
  const owned = new Set();
  /* block i, copied (once) before it is changed */
  const own = (i) => {
    if (!owned.has(i)) {
      const b = p.blocks[i];
      p.blocks[i] = {...b};
      if (b.inputs) p.blocks[i].inputs = {...b.inputs};
      if (b.attrs) p.blocks[i].attrs = {...b.attrs};
      owned.add(i);
    }
    return p.blocks[i];
  };
  const at = (id, i) => {
    const k = p.blocks.findIndex((x) => x.id === id);
    if (k < 0) throw new Error(`edit ${i}: no block "${id}" on this page`);
    return k;
  };
  const find = (id, i) => own(at(id, i));
  edits.forEach((e, i) => {
    switch (e.op) {
      case 'add_block': {
        if (p.blocks.some((x) => x.id === e.id)) {
          throw new Error(`edit ${i}: the id "${e.id}" is used by another block`);
        }
        const b = {id: e.id, type: e.type};
        if (e.attrs && Object.keys(e.attrs).length) b.attrs = clone(e.attrs);
        if (e.device && e.device !== 'auto') b.device = e.device;
        if (e.ui) b.ui = clone(e.ui);
        p.blocks.push(b);
        owned.add(p.blocks.length - 1);
        break;
      }
      case 'remove_block': {
        const k = at(e.id, i);
        p.blocks.splice(k, 1);
        /* the owned indices after k moved down by one */
        const moved = [...owned].filter((j) => j !== k).map((j) => (j > k ? j - 1 : j));
        owned.clear();
        for (const j of moved) owned.add(j);
        p.blocks.forEach((b, j) => {
          if (!b.inputs || !Object.values(b.inputs).some((src) => parseSource(src).block === e.id)) return;
          const c = own(j);
          for (const [port, src] of Object.entries(c.inputs)) {
            if (parseSource(src).block === e.id) delete c.inputs[port];
          }
          if (!Object.keys(c.inputs).length) delete c.inputs;
        });
        break;
      }
      case 'rename_block': {
        const b = find(e.id, i);
        if (p.blocks.some((x) => x.id === e.new_id)) {
          throw new Error(`edit ${i}: the id "${e.new_id}" is used by another block`);
        }
        b.id = e.new_id;
        const follow = (src) => {
          const s = parseSource(src);
          return s.block === e.id ? (s.port ? `${e.new_id}:${s.port}` : e.new_id) : src;
        };
        p.blocks.forEach((x, j) => {
          if (!x.inputs || !Object.values(x.inputs).some((src) => parseSource(src).block === e.id)) return;
          const c = own(j);
          for (const port of Object.keys(c.inputs)) c.inputs[port] = follow(c.inputs[port]);
        });
        if (p.outputs) p.outputs = p.outputs.map(follow);
        break;
      }
      case 'connect': {
        const b = find(e.block, i);
        at(parseSource(e.source).block, i);
        b.inputs = {...(b.inputs || {}), [e.port]: e.source};
        break;
      }
      case 'disconnect': {
        const b = find(e.block, i);
        if (b.inputs) {
          delete b.inputs[e.port];
          if (!Object.keys(b.inputs).length) delete b.inputs;
        }
        break;
      }
      case 'set_attr': {
        const b = find(e.block, i);
        const attrs = {...(b.attrs || {})};
        if (e.value === null || e.value === undefined) delete attrs[e.attr];
        else attrs[e.attr] = clone(e.value);
        if (Object.keys(attrs).length) b.attrs = attrs;
        else delete b.attrs;
        break;
      }
      case 'set_device': {
        const b = find(e.block, i);
        if (!e.device || e.device === 'auto') delete b.device;
        else b.device = e.device;
        break;
      }
      case 'set_ui': {
        if (e.block) find(e.block, i).ui = clone(e.ui);
        else p.ui = clone(e.ui);
        break;
      }
      case 'set_outputs': p.outputs = e.outputs.slice(); break;
      case 'set_name': p.name = e.name; break;
      case 'set_description': p.description = e.description; break;
      default: throw new Error(`edit ${i}: unknown op "${e.op}"`);
    }
  });
  return p;
}

/**
 * The edits that turn page `a` into page `b`, in an order the server accepts: wires that
 * change are cut first, then blocks removed, added (with attrs, device, ui), attributes,
 * devices and positions set, wires connected, and the page's outputs, name and description.
 * Blocks are matched by id; a changed type is a remove plus an add.
 */
export function diffPages(a, b) {
  const A = new Map((a.blocks || []).map((x) => [x.id, x]));
  const B = new Map((b.blocks || []).map((x) => [x.id, x]));
  const kept = (id) => A.has(id) && B.has(id) && A.get(id).type === B.get(id).type;
  const edits = [];
  for (const [id, x] of A) {
    if (!kept(id)) continue;
    const ins = B.get(id).inputs || {};
    for (const port of Object.keys(x.inputs || {})) {
      if (!(port in ins)) edits.push({op: 'disconnect', block: id, port});
    }
  }
  for (const id of A.keys()) if (!kept(id)) edits.push({op: 'remove_block', id});
  for (const [id, x] of B) {
    if (kept(id)) continue;
    const e = {op: 'add_block', id, type: x.type};
    if (x.attrs && Object.keys(x.attrs).length) e.attrs = clone(x.attrs);
    if (x.device) e.device = x.device;
    if (x.ui) e.ui = clone(x.ui);
    edits.push(e);
  }
  for (const [id, y] of B) {
    if (!kept(id)) continue;
    const x = A.get(id);
    const xa = x.attrs || {};
    const ya = y.attrs || {};
    for (const k of new Set([...Object.keys(xa), ...Object.keys(ya)])) {
      if (!sameJson(xa[k], ya[k])) {
        edits.push({op: 'set_attr', block: id, attr: k, value: k in ya ? clone(ya[k]) : null});
      }
    }
    if ((x.device || 'auto') !== (y.device || 'auto')) {
      edits.push({op: 'set_device', block: id, device: y.device || 'auto'});
    }
    if (!sameJson(x.ui, y.ui) && y.ui) edits.push({op: 'set_ui', block: id, ui: clone(y.ui)});
  }
  for (const [id, y] of B) {
    const xin = kept(id) ? A.get(id).inputs || {} : {};
    for (const [port, src] of Object.entries(y.inputs || {})) {
      if (xin[port] !== src || !kept(parseSource(src).block)) {
        edits.push({op: 'connect', block: id, port, source: src});
      }
    }
  }
  if (!sameJson(a.outputs || [], b.outputs || [])) {
    edits.push({op: 'set_outputs', outputs: (b.outputs || []).slice()});
  }
  if ((a.name || '') !== (b.name || '')) edits.push({op: 'set_name', name: b.name || ''});
  if ((a.description || '') !== (b.description || '')) {
    edits.push({op: 'set_description', description: b.description || ''});
  }
  return edits;
}

/**
 * The blocks `ids` of `page` as a clipboard fragment: the blocks with their wires among
 * themselves (wires from outside are left out, since a paste elsewhere cannot keep them;
 * `keepInputs` keeps them, for a duplicate on the same page).
 */
export function copyBlocks(page, ids, {keepInputs = false} = {}) {
  const set = new Set(ids);
  const blocks = (page.blocks || []).filter((b) => set.has(b.id)).map((b) => {
    const c = clone(b);
    if (c.inputs && !keepInputs) {
      for (const [port, src] of Object.entries(c.inputs)) {
        if (!set.has(parseSource(src).block)) delete c.inputs[port];
      }
      if (!Object.keys(c.inputs).length) delete c.inputs;
    }
    return c;
  });
  return {format: 'blockflow.fragment', blocks};
}

/**
 * `page` with the fragment's blocks added under fresh ids (wires among them renamed to
 * match) and moved by `offset`. Returns {page, ids} (the new ids, for selection).
 */
export function pasteBlocks(page, fragment, offset = {x: 40, y: 40}) {
  const taken = new Set((page.blocks || []).map((b) => b.id));
  const rename = new Map();
  for (const b of fragment.blocks || []) {
    let id = b.id;
    for (let i = 2; taken.has(id); i++) id = `${b.id.replace(/_copy\d*$/, '')}_copy${i === 2 ? '' : i}`;
    taken.add(id);
    rename.set(b.id, id);
  }
  const pos = layout({blocks: fragment.blocks});
  const added = (fragment.blocks || []).map((b) => {
    const c = clone(b);
    c.id = rename.get(b.id);
    const at = pos.get(b.id);
    c.ui = {...(c.ui || {}), x: Math.round(at.x + offset.x), y: Math.round(at.y + offset.y)};
    for (const [port, src] of Object.entries(c.inputs || {})) {
      const s = parseSource(src);
      const to = rename.get(s.block) || s.block;
      c.inputs[port] = s.port ? `${to}:${s.port}` : to;
    }
    return c;
  });
  return {page: {...page, blocks: [...(page.blocks || []), ...added]},
          ids: added.map((b) => b.id)};
}
