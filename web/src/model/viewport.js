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
