/* Canvas.jsx - the page as a React Flow graph: blocks (BlockNode), wires labelled with the
 * dtype and shape they carry (WireEdge), drop target of the palette. Selection, moves,
 * deletions and new wires are turned into edits by App. */
import React, {useCallback, useEffect, useMemo, useRef, useState} from 'react';
import {Background, Controls, ReactFlow, useReactFlow} from '@xyflow/react';
import {pageToGraph} from '../model/page.js';
import {listProblems} from '../model/runState.js';
import {panToShow} from '../model/viewport.js';
import BlockNode from './BlockNode.jsx';
import WireEdge from './WireEdge.jsx';

const nodeTypes = {block: BlockNode};
const edgeTypes = {wire: WireEdge};

export default function Canvas({page, index, check, run, selected, onSelect, onConnect,
                                onRemoveBlocks, onDisconnect, onMove, onDropBlock}) {
  const flow = useReactFlow();
  /* {id: {x, y}} of the blocks being dragged (all the selected ones move together), shown
   * over the page's positions until the drop turns them into one set_ui edit batch */
  const [drag, setDrag] = useState(null);
  const dragRef = useRef(null);
  const [selEdges, setSelEdges] = useState([]);
  const graph = useMemo(() => pageToGraph(page, index, check,
                                          {status: run ? run.status : null,
                                           problems: listProblems(check, run)}),
                        [page, index, check, run]);
  /* React Flow's measured size of each block, carried on the nodes we pass: a node object
   * without `measured` is taken for a new node, unmeasured until the next frame, and a fit
   * (the controls' button) in that window after a re-check or a run framed nothing. */
  const sizes = useRef(new Map());
  const nodes = graph.nodes.map((n) => ({
    ...n,
    position: drag && drag[n.id] ? drag[n.id] : n.position,
    selected: selected.includes(n.id),
    measured: sizes.current.get(n.id),
  }));
  const edges = graph.edges.map((e) => ({...e, selected: selEdges.includes(e.id)}));

  /* Fit the view once per opened page, once React Flow holds exactly this page's blocks and
   * has measured them all. Fitting earlier (on a timer, or on "nodes initialized" right after
   * a switch, when the store still holds the previous page's measured nodes, some with the
   * same ids) frames only part of a large page. Blocks added later do not move the view. */
  const fitted = useRef(null);
  useEffect(() => {
    if (fitted.current === page.name || page.blocks.length === 0) return undefined;
    const want = new Set(page.blocks.map((b) => b.id));
    let frame = 0, tries = 0;
    const attempt = () => {
      const held = flow.getNodes();
      const ready = held.length === want.size &&
                    held.every((n) => want.has(n.id) && n.measured && n.measured.width > 0);
      if (ready || ++tries > 300) { /* about 5 s of frames: fit what there is */
        fitted.current = page.name;
        flow.fitView({padding: 0.2, maxZoom: 1.1});
        /* for the browser tests: the view is framed */
        if (pane.current) pane.current.dataset.fitted = 'yes';
        return;
      }
      frame = requestAnimationFrame(attempt);
    };
    frame = requestAnimationFrame(attempt);
    return () => cancelAnimationFrame(frame);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [page.name, page.blocks.length === 0]);

  /* The one selected block is panned back into view, zoom and framing kept, when it leaves
   * the canvas because the canvas shrank (a taller tab in the panel under it, the splitter,
   * the window) or the block grew (a run adds its status row): opening the Teach tab
   * otherwise hid the very block it explains under the panel. */
  const pane = useRef(null);
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  const keepSelectedInView = useCallback(() => {
    const el = pane.current, sel = selectedRef.current;
    const node = el && sel.length === 1 ? flow.getInternalNode(sel[0]) : null;
    const m = node && node.measured, p = node && node.internals.positionAbsolute;
    if (!m || !m.width || !p) return;
    const view = panToShow({x: p.x, y: p.y, width: m.width, height: m.height},
                           flow.getViewport(), el.clientWidth, el.clientHeight);
    if (view) flow.setViewport(view);
  }, [flow]);
  useEffect(() => {
    if (!pane.current || typeof ResizeObserver === 'undefined') return undefined;
    const ro = new ResizeObserver(keepSelectedInView);
    ro.observe(pane.current);
    return () => ro.disconnect();
  }, [keepSelectedInView]);

  const onNodesChange = useCallback((changes) => {
    let sel = null, moving = null, dropped = null;
    for (const c of changes) {
      if (c.type === 'position') {
        /* while dragging: positions to show; at the drop (dragging false, with the final
         * position; the arrow keys' moves come the same way): the edit */
        if (c.dragging) {
          moving = moving || {...(dragRef.current || {})};
          if (c.position) moving[c.id] = c.position;
        } else {
          dropped = dropped || {};
          const at = c.position || (dragRef.current || {})[c.id];
          if (at) dropped[c.id] = at;
        }
      } else if (c.type === 'dimensions' && c.dimensions) {
        const before = sizes.current.get(c.id);
        sizes.current.set(c.id, c.dimensions);
        /* after React Flow has stored the new size */
        if (before && selected.length === 1 && c.id === selected[0])
          requestAnimationFrame(keepSelectedInView);
      } else if (c.type === 'select') {
        sel = sel || new Set(selected);
        if (c.selected) sel.add(c.id);
        else sel.delete(c.id);
      }
      /* removals come once, blocks and wires together, through onDelete below */
    }
    if (moving) {
      dragRef.current = moving;
      setDrag(moving);
    }
    if (dropped) {
      dragRef.current = null;
      setDrag(null);
      if (Object.keys(dropped).length) onMove(dropped);
    }
    if (sel) onSelect([...sel].filter((id) => page.blocks.some((b) => b.id === id)));
  }, [page, selected, onSelect, onMove, keepSelectedInView]);

  const onEdgesChange = useCallback((changes) => {
    let sel = null;
    for (const c of changes) {
      if (c.type === 'select') {
        sel = sel || new Set(selEdges);
        if (c.selected) sel.add(c.id);
        else sel.delete(c.id);
      }
    }
    if (sel) setSelEdges([...sel]);
  }, [selEdges]);

  /* Delete / Backspace: the selected blocks, the wires in and out of them and the selected
   * wires go as ONE edit (React Flow reports the wires and the blocks as two changes; two
   * edits would take two Ctrl+Z, the first bringing a block back without its wires). */
  const onDelete = useCallback(({nodes: gone, edges: cutEdges}) => {
    const ids = gone.map((n) => n.id);
    const wires = cutEdges.map((e) => {
      const i = e.id.lastIndexOf('.');
      return {block: e.id.slice(0, i), port: e.id.slice(i + 1)};
    }).filter((w) => !ids.includes(w.block) && page.blocks.some((b) => b.id === w.block));
    if (ids.length) onRemoveBlocks(ids, wires);
    else if (wires.length) onDisconnect(wires);
    setSelEdges([]);
  }, [page, onRemoveBlocks, onDisconnect]);

  const onDrop = useCallback((e) => {
    e.preventDefault();
    const type = e.dataTransfer.getData('application/blockflow-type');
    if (!type) return;
    const pos = flow.screenToFlowPosition({x: e.clientX, y: e.clientY});
    onDropBlock(type, {x: pos.x - 90, y: pos.y - 30});
  }, [flow, onDropBlock]);

  return (
    <div className="canvas" ref={pane} onDragOver={(e) => { e.preventDefault(); e.dataTransfer.dropEffect = 'move'; }}
         onDrop={onDrop} data-testid="canvas">
      <ReactFlow
        nodes={nodes} edges={edges} nodeTypes={nodeTypes} edgeTypes={edgeTypes}
        onNodesChange={onNodesChange} onEdgesChange={onEdgesChange} onConnect={onConnect}
        onDelete={onDelete} nodeDragThreshold={0}
        deleteKeyCode={['Delete', 'Backspace']} multiSelectionKeyCode={['Shift', 'Meta', 'Control']}
        minZoom={0.2} maxZoom={2.5} proOptions={{hideAttribution: true}}
        onPaneClick={() => { onSelect([]); setSelEdges([]); }}
        fitView
      >
        <Background gap={20} size={1} />
        <Controls />
      </ReactFlow>
      {page.blocks.length === 0 && (
        <div className="empty-hint">This page is empty. Drag a block from the left, e.g.
          <b> Const</b> or <b>RandomNormal</b>, then a <b>Conv2DBackpropFilter</b>, and wire them.</div>
      )}
    </div>
  );
}
