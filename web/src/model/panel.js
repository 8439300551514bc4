/*
 * panel.js - the height of the panel under the canvas, per tab: a default that shows its
 * content without taking the canvas (the Output tab's heatmap shrinks its cells to fit; the
 * teaching view wants most of the window), what the person last chose (kept in localStorage,
 * per tab), and the limits that leave the canvas usable whatever the window's height.
 */

const KEY = 'blockflow.panelHeights';
const TOP_BAR = 37;
const MIN_CANVAS = 160;
const MIN_PANEL = 90;

/** The default height of the panel showing `tab` in a window `windowH` pixels tall. */
export function defaultHeight(tab, windowH) {
  if (tab === 'teach') return Math.round(windowH * 0.62);
  if (tab === 'training') return Math.max(330, Math.round(windowH * 0.5));
  if (tab === 'output') return 300;
  return 260;
}

/** The panel's limits in a window `windowH` tall: {min, max}. */
export function heightLimits(windowH) {
  return {min: MIN_PANEL, max: Math.max(MIN_PANEL, Math.round(windowH - TOP_BAR - MIN_CANVAS))};
}

/** `h` rounded and kept within `limits`. */
export function clampHeight(h, limits) {
  return Math.round(Math.min(limits.max, Math.max(limits.min, h)));
}

/** The chosen heights by tab, as stored; {} when absent or unreadable. */
export function loadHeights(storage) {
  try {
    const v = JSON.parse((storage && storage.getItem(KEY)) || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** Remember `heights` (by tab); a storage that refuses (private mode, full) is ignored. */
export function saveHeights(storage, heights) {
  try {
    if (storage) storage.setItem(KEY, JSON.stringify(heights));
  } catch { /* the choice lasts this session only */ }
}

/** The height to use for `tab`: the stored choice if it is a number, else the default;
 * clamped to the window. */
export function panelHeight(tab, heights, windowH) {
  const h = Number.isFinite(heights[tab]) ? heights[tab] : defaultHeight(tab, windowH);
  return clampHeight(h, heightLimits(windowH));
}
