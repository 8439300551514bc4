/* useFarPointer.js - a big page zoomed far out is drawn on FarLayer's canvas, where the
 * blocks have no elements: the pointer finds them there (farDraw.js's blockAt). A press on a
 * block selects it, or drags it with the blocks selected with it (one move edit at the drop);
 * a double-click renames it; a Shift-drawn box selects the blocks inside it. Canvas puts
 * `farHandlers` on its element and asks `farHit` on a right-click. */
import {useCallback, useEffect, useRef} from 'react';
import {useReactFlow, useStore} from '@xyflow/react';
import {blockAt, blocksInside} from '../model/farDraw.js';

export function useFarPointer({far, boxes, page, nodes, selected, onSelect, onMove, onRename,
                               setDrag, dragRef}) {
  const flow = useReactFlow();
  /* A press on a block (not on an element React Flow draws, and without Shift, which draws
   * a selection box): React Flow never sees it, so it neither pans nor clears the selection */
  const farPress = useRef(null);
  const farHit = useCallback((e) => {
    if (!far || !boxes) return null;
    const t = e.target;
    if (!t.closest || !t.closest('.react-flow__pane') ||
        t.closest('.react-flow__node, .react-flow__edge, .react-flow__panel')) return null;
    const p = flow.screenToFlowPosition({x: e.clientX, y: e.clientY});
    return blockAt(boxes, p.x, p.y);
  }, [far, boxes, flow]);
  const onPointerDownCapture = useCallback((e) => {
    if (e.button !== 0 || e.shiftKey) return;
    const id = farHit(e);
    if (!id) return;
    e.stopPropagation();
    e.preventDefault();
    const many = selected.includes(id) ? selected : [id];
    const from = Object.fromEntries(many.map((k) => [k, page.blocks.find((b) => b.id === k)])
      .filter(([, b]) => b).map(([k]) => [k, nodes.find((n) => n.id === k).position]));
    const press = {id, x0: e.clientX, y0: e.clientY, from, at: null, multi: e.ctrlKey || e.metaKey};
    farPress.current = press;
    const zoom = () => flow.getViewport().zoom;
    const move = (ev) => {
      const dx = (ev.clientX - press.x0) / zoom(), dy = (ev.clientY - press.y0) / zoom();
      if (!press.at && Math.hypot(ev.clientX - press.x0, ev.clientY - press.y0) < 3) return;
      if (!press.at && !selected.includes(id)) onSelect([id]); /* a block dragged is selected */
      press.at = Object.fromEntries(Object.entries(press.from)
        .map(([k, p]) => [k, {x: p.x + dx, y: p.y + dy}]));
      dragRef.current = press.at;
      setDrag(press.at);
    };
    const up = () => {
      window.removeEventListener('pointermove', move);
      window.removeEventListener('pointerup', up);
      if (press.at) {
        dragRef.current = null;
        setDrag(null);
        onMove(press.at);
      } else if (press.multi) {
        onSelect(selected.includes(id) ? selected.filter((k) => k !== id) : [...selected, id]);
      } else {
        onSelect([id]);
      }
      /* after this press's click (same input event), a later press starts afresh */
      setTimeout(() => { if (farPress.current === press) farPress.current = null; }, 0);
    };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
  }, [farHit, selected, page, nodes, flow, onMove, onSelect, setDrag, dragRef]);
  /* the mouse events of that press (d3's pan listens to them) and its click (React Flow's
   * pane click clears the selection) go no further */
  const stopFarPress = useCallback((e) => {
    /* Shift+drag on the canvas draws a selection box: it selects no text of the page */
    if (e.type === 'mousedown' && e.shiftKey && e.target.closest &&
        e.target.closest('.react-flow__pane')) e.preventDefault();
    if (farPress.current) {
      e.stopPropagation();
      if (e.type === 'click') farPress.current = null;
    }
  }, []);
  const onDoubleClickCapture = useCallback((e) => {
    const id = farHit(e);
    if (id) {
      e.stopPropagation();
      onRename(id);
    }
  }, [farHit, onRename]);

  /* a Shift-drawn box: React Flow's own selection sees only the blocks it draws */
  const selRect = useStore((s) => (s.userSelectionActive ? s.userSelectionRect : null));
  const lastRect = useRef(null);
  useEffect(() => {
    if (selRect) { lastRect.current = selRect; return; }
    const r = lastRect.current;
    lastRect.current = null;
    if (!far || !boxes || !r || r.width < 2 || r.height < 2) return;
    const {x: tx, y: ty, zoom: k} = flow.getViewport();
    const ids = blocksInside(boxes, {x: (r.x - tx) / k, y: (r.y - ty) / k, width: r.width / k,
                                     height: r.height / k});
    if (ids.length) onSelect([...new Set([...selected, ...ids])]);
  // eslint-disable-next-line react-hooks/exhaustive-deps -- at the end of a box only
  }, [selRect]);

  return {
    farHit,
    farHandlers: {onPointerDownCapture, onMouseDownCapture: stopFarPress,
                  onMouseUpCapture: stopFarPress, onClickCapture: stopFarPress,
                  onDoubleClickCapture},
  };
}
