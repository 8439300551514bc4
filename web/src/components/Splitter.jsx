/* Splitter.jsx - the bar between the canvas and the panel under it: drag it, or focus it and
 * press the arrow keys (Page Up / Page Down for larger steps, Home / End for the limits), to
 * give the panel more or less height. A window splitter in the ARIA sense: role "separator"
 * with its value, so a screen reader says how tall the panel is. */
import React, {useRef} from 'react';
import {clampHeight} from '../model/panel.js';

export default function Splitter({height, limits, onChange, label}) {
  const drag = useRef(null);
  const set = (h) => onChange(clampHeight(h, limits));
  const onPointerDown = (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    e.currentTarget.setPointerCapture(e.pointerId);
    drag.current = {y: e.clientY, h: height};
  };
  const onPointerMove = (e) => {
    if (drag.current) set(drag.current.h - (e.clientY - drag.current.y));
  };
  const onPointerUp = (e) => {
    drag.current = null;
    if (e.currentTarget.hasPointerCapture(e.pointerId))
      e.currentTarget.releasePointerCapture(e.pointerId);
  };
  const onKeyDown = (e) => {
    const step = {ArrowUp: 24, ArrowDown: -24, PageUp: 120, PageDown: -120}[e.key];
    if (step) set(height + step);
    else if (e.key === 'Home') set(limits.max);
    else if (e.key === 'End') set(limits.min);
    else return;
    e.preventDefault();
  };
  return (
    <div className="splitter" role="separator" aria-orientation="horizontal" tabIndex={0}
         aria-label={label} aria-valuenow={Math.round(height)} aria-valuemin={limits.min}
         aria-valuemax={limits.max} title="Drag, or use the arrow keys, to resize"
         onPointerDown={onPointerDown} onPointerMove={onPointerMove} onPointerUp={onPointerUp}
         onPointerCancel={onPointerUp} onKeyDown={onKeyDown} data-testid="splitter" />
  );
}
