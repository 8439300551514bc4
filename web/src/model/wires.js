/*
 * wires.js - whether a wire can be made, before it is sent: the source's inferred dtype (from
 * the server's last check) must be one the target port accepts (from the catalogue), the
 * target must not be the source itself, and the wire must not close a cycle. The server checks
 * again after the edit; this only lets the editor refuse at once, with the reason. Also: the
 * outputs that may feed an input (the Inspector's wiring lists), and whether a wire's label
 * would lie on a block (WireEdge).
 */
import {parseSource} from './page.js';

function reaches(page, from, to) {
  /* is `to` upstream of `from`? (walk inputs from `from`) */
  const byId = new Map((page.blocks || []).map((b) => [b.id, b]));
  const stack = [from];
  const seen = new Set();
  while (stack.length) {
    const id = stack.pop();
    if (id === to) return true;
    if (seen.has(id)) continue;
    seen.add(id);
    for (const src of Object.values((byId.get(id) || {}).inputs || {})) {
      stack.push(parseSource(src).block);
    }
  }
  return false;
}

/**
 * {ok: true} or {ok: false, reason} for a wire from `source` block's output `sourcePort`
 * into `target` block's input `targetPort`.
 */
export function checkWire(page, index, check, source, sourcePort, target, targetPort) {
  if (source === target) return {ok: false, reason: 'a block cannot feed itself'};
  const tb = (page.blocks || []).find((b) => b.id === target);
  const entry = tb && index.byType.get(tb.type);
  const port = entry && entry.inputs.find((p) => p.name === targetPort);
  if (!port) return {ok: false, reason: `${tb ? tb.type : target} has no input "${targetPort}"`};
  if (reaches(page, source, target)) {
    return {ok: false, reason: `the wire would make a cycle: ${target} already feeds ${source}`};
  }
  const out = check && check.blocks && check.blocks[source] &&
              check.blocks[source].outputs && check.blocks[source].outputs[sourcePort];
  if (out && out.dtype && !port.dtypes.includes(out.dtype)) {
    return {
      ok: false,
      reason: `${tb.type} takes ${port.dtypes.join(', ')} for "${targetPort}", but ` +
              `${source}:${sourcePort} is ${out.dtype}`,
    };
  }
  return {ok: true};
}

/**
 * The outputs that may feed `target`'s input `targetPort`: every other block's outputs that
 * checkWire accepts, in page order, as {source, label} where `source` is what the page stores
 * (the block id alone for a type's first output, else "block:port") and `label` adds the
 * inferred dtype[shape] when the last check knows it. This is what the Inspector offers for
 * wiring without a mouse.
 */
export function wireCandidates(page, index, check, target, targetPort) {
  const out = [];
  for (const b of page.blocks || []) {
    const entry = index.byType.get(b.type);
    if (b.id === target || !entry) continue;
    entry.outputs.forEach((o, i) => {
      if (!checkWire(page, index, check, b.id, o.name, target, targetPort).ok) return;
      const source = i === 0 ? b.id : `${b.id}:${o.name}`;
      const info = check && check.blocks && check.blocks[b.id] &&
                   check.blocks[b.id].outputs && check.blocks[b.id].outputs[o.name];
      const shown = i === 0 && entry.outputs.length === 1 ? b.id : `${b.id}:${o.name}`;
      out.push({source, label: info && info.label ? `${shown}  ${info.label}` : shown});
    });
  }
  return out;
}

/** A wire label's box in flow pixels: 10.5 px monospace (0.6 em a character), padding, border. */
export const labelWidth = (text) => Math.ceil(String(text).length * 6.3) + 10;
export const LABEL_H = 16;

/** Whether a w x h box centred at (x, y) meets a React Flow node's measured box (a node not
 * measured yet: no). */
export function overlapsNode(node, x, y, w, h) {
  const m = node && node.measured;
  const p = node && node.internals && node.internals.positionAbsolute;
  if (!m || !p || !m.width || !m.height) return false;
  return x + w / 2 > p.x && x - w / 2 < p.x + m.width &&
         y + h / 2 > p.y && y - h / 2 < p.y + m.height;
}
