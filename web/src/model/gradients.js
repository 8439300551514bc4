/*
 * gradients.js - after "Add gradient blocks": where the new blocks go and what becomes an
 * output. The server adds them next to the forward block at fixed offsets, which a wide block
 * (a Conv2D with its shape labels) covers; here they are laid out in two columns to the right
 * of the forward block (the incoming gradient and the sizes, then the gradients), moved down
 * until no box meets another block, and the gradients become outputs of the page, so the
 * next Run computes them.
 */
import {layout} from './page.js';

const W = 360;  /* a block's room, generously (the widest are about 330 px) */
const H = 140;
const ROW = 150;

/**
 * The edits that place `created` ({dy, gradients: {port: id}, blocks: [ids]}) of forward
 * block `forward` on `page` (the page holding them) and add the gradients to the outputs.
 */
export function placeGradients(page, forward, created) {
  const pos = layout(page);
  const made = new Set(created.blocks || []);
  const grads = Object.values(created.gradients || {});
  const first = (created.blocks || []).filter((id) => !grads.includes(id));
  const at = pos.get(forward) || {x: 0, y: 0};
  const others = [...pos.entries()].filter(([id]) => !made.has(id)).map(([, p]) => p);
  const place = (dy) => {
    const m = new Map();
    first.forEach((id, i) => m.set(id, {x: at.x + W + 20, y: at.y + dy + i * ROW}));
    grads.forEach((id, i) => m.set(id, {x: at.x + 2 * (W + 20), y: at.y + dy + i * ROW}));
    return m;
  };
  const clear = (m) => [...m.values()].every((p) => others.every((q) =>
    p.x + W <= q.x || q.x + W <= p.x || p.y + H <= q.y || q.y + H <= p.y));
  let m = place(0);
  for (let k = 1; k < 200 && !clear(m); k++) m = place(k * ROW);
  const edits = [];
  for (const b of page.blocks || []) {
    const p = m.get(b.id);
    if (p) edits.push({op: 'set_ui', block: b.id, ui: {...(b.ui || {}), x: Math.round(p.x), y: Math.round(p.y)}});
  }
  const outs = page.outputs || [];
  const add = grads.filter((g) => !outs.includes(g));
  if (add.length) edits.push({op: 'set_outputs', outputs: [...outs, ...add]});
  return edits;
}
