/*
 * viewport.js - keeping the selected block in view when the canvas changes size (the panel
 * under it opens a taller tab, the splitter is dragged, the window is resized): the smallest
 * pan, at the same zoom, that brings the block's box inside the canvas. The person's zoom
 * and framing otherwise stay as they were.
 */

/**
 * The React Flow viewport {x, y, zoom} that shows `box` ({x, y, width, height} in flow
 * coordinates) inside a `w` x `h` pixel pane with `margin` pixels to spare, moved as little as
 * possible from `view` at the same zoom; a box larger than the pane is centred on that axis.
 * null when the box is already in view (nothing to do).
 */
export function panToShow(box, view, w, h, margin = 16) {
  const z = view.zoom;
  const shift = (lo, size, pane) => {
    const hi = lo + size;
    if (size + 2 * margin > pane) return (pane - size) / 2 - lo;
    if (lo < margin) return margin - lo;
    if (hi > pane - margin) return pane - margin - hi;
    return 0;
  };
  const dx = shift(box.x * z + view.x, box.width * z, w);
  const dy = shift(box.y * z + view.y, box.height * z, h);
  if (dx === 0 && dy === 0) return null;
  return {x: view.x + dx, y: view.y + dy, zoom: z};
}

/**
 * React Flow fitView's padding: `pad` (a fraction of the pane, as fitView takes it) on every
 * side, but on the right at least the strip the minimap takes (`minimap` px wide with its
 * margins; 0 without a minimap), so that no block of the framed page lies under it.
 */
export function fitPadding(pad, minimap = 0) {
  if (!minimap) return pad;
  return {top: pad, bottom: pad, left: pad, right: `${minimap}px`};
}

/**
 * The viewport framing `positions` (the page's blocks, Map id -> {x, y}) in a `w` x `h` pane,
 * each block taken as `size` (an estimate: they are not measured yet), with `padding` (a
 * fraction of the pane) around, zoomed between minZoom and maxZoom. The canvas starts there,
 * so a big page is drawn at its final zoom from the first frame.
 */
export function frameAll(positions, w, h, {size = {width: 240, height: 90}, padding = 0.1,
                                          minZoom = 0.02, maxZoom = 1.1} = {}) {
  const ps = [...positions.values()];
  if (!ps.length || !(w > 0) || !(h > 0)) return {x: 0, y: 0, zoom: 1};
  const x0 = Math.min(...ps.map((p) => p.x)), y0 = Math.min(...ps.map((p) => p.y));
  const x1 = Math.max(...ps.map((p) => p.x + size.width));
  const y1 = Math.max(...ps.map((p) => p.y + size.height));
  const zoom = Math.max(minZoom, Math.min(maxZoom, Math.min(w / (x1 - x0), h / (y1 - y0)) / (1 + 2 * padding)));
  return {x: w / 2 - ((x0 + x1) / 2) * zoom, y: h / 2 - ((y0 + y1) / 2) * zoom, zoom};
}
