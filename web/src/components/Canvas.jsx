/* Canvas.jsx - the page as a React Flow graph: blocks (BlockNode), wires labelled with the
 * dtype and shape they carry (WireEdge), drop target of the palette. Selection, moves,
 * deletions and new wires are turned into edits by App. */
import React, {useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState} from 'react';
import {Background, Controls, MiniMap, ReactFlow, useReactFlow, useStore} from '@xyflow/react';
import {layout, pageToGraph} from '../model/page.js';
import {createGraphCache, noteMeasured, stableEdges, stableNodes} from '../model/stableGraph.js';
import {isFar} from '../model/farBlock.js';
import {farBoxes, wireCurves} from '../model/farDraw.js';
import {listProblems} from '../model/runState.js';
import {fitPadding, frameAll, panToShow} from '../model/viewport.js';
import BlockNode from './BlockNode.jsx';
import WireEdge from './WireEdge.jsx';
import {FarView, RunStatus} from './farView.js';
import FarLayer from './FarLayer.jsx';
import PageMinimap from './PageMinimap.jsx';
import {useFarPointer} from './useFarPointer.js';

const nodeTypes = {block: BlockNode};
/* the minimap's blocks: red with a problem, green done, grey otherwise */
const minimapColor = (n) => (n.data.problems.length ? '#e57373'
  : n.data.status && n.data.status.state === 'finished' ? '#81c784' : '#b0bec5');
const edgeTypes = {wire: WireEdge};
/* from this many blocks on, only what is in view is drawn */
const BIG = 150;
const MINIMAP_BLOCKS = 20;
const NO_STATUS = {};
const MINIMAP = {width: 160, height: 110};
/* the strip a fit leaves free on the right for the minimap: its width and margins */
const minimapStrip = (n) => (n > MINIMAP_BLOCKS ? MINIMAP.width + 2 * 15 : 0);

export default function Canvas({page, index, check, run, marks, selected, onSelect, onConnect,
                                onRemoveBlocks, onDisconnect, onMove, onDropBlock, reveal,
                                onMenu, onRename, onView}) {
  const flow = useReactFlow();
  /* {id: {x, y}} of the blocks being dragged (all the selected ones move together), shown
   * over the page's positions until the drop turns them into one set_ui edit batch */
  const [drag, setDrag] = useState(null);
  const dragRef = useRef(null);
  const [selEdges, setSelEdges] = useState([]);
  /* the page's graph without the run's statuses (those are an overlay: stableNodes), built
   * again when the page, the check, the marks or the problems (compared as text: a batch of
   * run events makes a new list of the same problems) change */
  const problems = useMemo(() => listProblems(check, run), [check, run]);
  const problemsText = JSON.stringify(problems);
  const graphCache = useRef({});
  const graph = useMemo(() => pageToGraph(page, index, check, {problems, marks,
                                                                cache: graphCache.current}),
  // eslint-disable-next-line react-hooks/exhaustive-deps -- problems compared by their text
                        [page, index, check, marks, problemsText]);
  const status = run ? run.status : null;
  /* React Flow's measured size of each block, carried on the nodes we pass: a node object
   * without `measured` is taken for a new node, unmeasured until the next frame, and a fit
   * (the controls' button) in that window after a re-check or a run framed nothing. A
   * measurement itself draws nothing again (noteMeasured: 500 blocks measured at the first
   * render once drew the whole page a second time). */
  const sizes = useRef(new Map());
  /* the same objects for the blocks and wires that did not change (stableGraph.js) */
  const cache = useRef(null);
  if (!cache.current) cache.current = createGraphCache();
  /* far (farBlock.js): from the view React Flow shows, or before it has one, the view it
   * starts with. Back from far, the sizes are forgotten: a size kept from before would
   * stop React Flow measuring the full block again, and its wires would meet the far dots. */
  const zoomNow = useStore((s) => (s.panZoom ? s.transform[2] : null));
  const [startView, setStartView] = useState(null);
  const far = isFar(zoomNow ?? (startView ? startView.zoom : 1), page.blocks.length);
  const wasFar = useRef(far);
  if (wasFar.current !== far) {
    if (!far) sizes.current = new Map();
    wasFar.current = far;
  }
  const big = page.blocks.length > BIG;
  /* a big page's statuses go to the blocks through RunStatus, not on the nodes */
  const nodeStatus = big ? null : status;
  const nodes = useMemo(() => stableNodes(cache.current, graph.nodes, {
    override: drag, selected, sizes: sizes.current, initial: {width: 240, height: 70},
    status: nodeStatus, far,
  }), [graph, drag, selected, nodeStatus, far]);
  const edges = useMemo(() => stableEdges(cache.current, graph.edges, selEdges),
                        [graph, selEdges]);
  /* far, React Flow draws the wires between the blocks it draws (selected), FarLayer all */
  const flowEdges = useMemo(() => (far ? edges.filter((e) => selected.includes(e.source) &&
                                                        selected.includes(e.target)) : edges),
                            [far, edges, selected]);
  /* far: what FarLayer draws, and what the pointer finds on it */
  const boxCache = useRef(new WeakMap());
  const boxes = useMemo(() => (far || big
    ? farBoxes(nodes, big ? status || {} : null, boxCache.current) : null),
  [far, big, nodes, status]);
  const wires = useMemo(() => (far ? wireCurves(edges, boxes) : null), [far, edges, boxes]);
  const drawnByFlow = useMemo(() => new Set(selected), [selected]);

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
      /* a big page draws only the blocks in view: those outside are never measured, and
       * their estimated size (initialWidth/Height) frames them well enough */
      const ready = held.length === want.size &&
                    held.every((n) => want.has(n.id) && (big || (n.measured && n.measured.width > 0)));
      if (ready || ++tries > 300) { /* about 5 s of frames: fit what there is */
        fitted.current = page.name;
        flow.fitView({padding: fitPadding(0.2, minimapStrip(want.size)), maxZoom: 1.1,
                      minZoom: 0.02, includeHiddenNodes: true});
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

  /* Blocks the editor asks to show (gradient blocks added beside the page): framed once
   * React Flow has measured them, never zooming in further than the person had. */
  useEffect(() => {
    if (!reveal || !reveal.ids.length) return undefined;
    let frame = 0, tries = 0;
    const attempt = () => {
      const ready = reveal.ids.every((id) => {
        const n = flow.getInternalNode(id);
        return n && n.measured && n.measured.width > 0;
      });
      if (ready || ++tries > 120) {
        /* the minimap's strip kept free, as when the page was opened */
        flow.fitView({nodes: reveal.ids.map((id) => ({id})),
                      padding: fitPadding(0.15, minimapStrip(flow.getNodes().length)),
                      maxZoom: flow.getViewport().zoom, includeHiddenNodes: true});
        return;
      }
      frame = requestAnimationFrame(attempt);
    };
    frame = requestAnimationFrame(attempt);
    return () => cancelAnimationFrame(frame);
  }, [reveal, flow]);

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
        noteMeasured(cache.current, c.id, c.dimensions);
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

  /* the editor's view of the canvas: measured sizes (tidy up) and fitting the whole page */
  useEffect(() => {
    if (!onView) return undefined;
    onView({
      sizes: () => new Map(flow.getNodes().filter((n) => n.measured && n.measured.width)
        .map((n) => [n.id, {width: n.measured.width, height: n.measured.height}])),
      fit: () => requestAnimationFrame(() => flow.fitView({
        padding: fitPadding(0.1, minimapStrip(flow.getNodes().length)), maxZoom: 1.1,
        minZoom: 0.02, includeHiddenNodes: true})),
    });
    return () => onView(null);
  }, [flow, onView]);

  /* far, the pointer finds the blocks on FarLayer's canvas (useFarPointer.js) */
  const {farHit, farHandlers} = useFarPointer({far, boxes, page, nodes, selected, onSelect, onMove,
                                               onRename, setDrag, dragRef});

  /* right-click menus: a block (selected first; one of several selected: the selection's
   * menu), a wire, the empty canvas (with the flow position, to paste there) */
  const onNodeContextMenu = useCallback((e, node) => {
    e.preventDefault();
    const many = selected.length > 1 && selected.includes(node.id);
    if (!many) onSelect([node.id]);
    onMenu({kind: many ? 'blocks' : 'block', id: node.id, x: e.clientX, y: e.clientY});
  }, [selected, onSelect, onMenu]);
  const onEdgeContextMenu = useCallback((e, edge) => {
    e.preventDefault();
    const i = edge.id.lastIndexOf('.');
    onMenu({kind: 'wire', wire: {block: edge.id.slice(0, i), port: edge.id.slice(i + 1)},
            x: e.clientX, y: e.clientY});
  }, [onMenu]);
  const onPaneContextMenu = useCallback((e) => {
    e.preventDefault();
    const farId = farHit(e);
    if (farId) {
      const many = selected.length > 1 && selected.includes(farId);
      if (!many) onSelect([farId]);
      onMenu({kind: many ? 'blocks' : 'block', id: farId, x: e.clientX, y: e.clientY});
      return;
    }
    /* a wire's label (drawn over the canvas, not in the wire's element) is the wire's too */
    const label = e.target && e.target.closest && e.target.closest('.wire-label');
    if (label) {
      const id = label.getAttribute('data-testid').replace(/^wire-/, '');
      const i = id.lastIndexOf('.');
      onMenu({kind: 'wire', wire: {block: id.slice(0, i), port: id.slice(i + 1)},
              x: e.clientX, y: e.clientY});
      return;
    }
    onMenu({kind: 'pane', x: e.clientX, y: e.clientY,
            at: flow.screenToFlowPosition({x: e.clientX, y: e.clientY})});
  }, [flow, onMenu, farHit, selected, onSelect]);
  const onNodeDoubleClick = useCallback((e, node) => onRename(node.id), [onRename]);

  const onDrop = useCallback((e) => {
    e.preventDefault();
    const type = e.dataTransfer.getData('application/blockflow-type');
    if (!type) return;
    const pos = flow.screenToFlowPosition({x: e.clientX, y: e.clientY});
    onDropBlock(type, {x: pos.x - 90, y: pos.y - 30});
  }, [flow, onDropBlock]);

  /* the first view frames the whole page from its saved positions, before any block is
   * measured (the fit above then corrects it): a big page is never drawn at full size */
  useLayoutEffect(() => {
    const el = pane.current;
    if (el && !startView) setStartView(frameAll(layout(page), el.clientWidth, el.clientHeight));
  }, [page, startView]);

  return (
    <div className={page.blocks.length > BIG ? 'canvas canvas-big' : 'canvas'} ref={pane}
         onContextMenu={(e) => { if (e.target.closest && e.target.closest('.wire-label')) onPaneContextMenu(e); }}
         onDragOver={(e) => { e.preventDefault(); e.dataTransfer.dropEffect = 'move'; }}
         onDrop={onDrop} data-testid="canvas" {...farHandlers}>
      <FarView.Provider value={far}>
      <RunStatus.Provider value={big ? status || NO_STATUS : null}>
      {startView && <ReactFlow
        nodes={nodes} edges={flowEdges} nodeTypes={nodeTypes} edgeTypes={edgeTypes}
        onNodesChange={onNodesChange} onEdgesChange={onEdgesChange} onConnect={onConnect}
        onDelete={onDelete} nodeDragThreshold={0}
        deleteKeyCode={['Delete', 'Backspace']} multiSelectionKeyCode={['Shift', 'Meta', 'Control']}
        minZoom={0.02} maxZoom={2.5} proOptions={{hideAttribution: true}}
        onPaneClick={() => { onSelect([]); setSelEdges([]); }}
        onNodeContextMenu={onNodeContextMenu} onEdgeContextMenu={onEdgeContextMenu}
        onPaneContextMenu={onPaneContextMenu} onSelectionContextMenu={onPaneContextMenu}
        onNodeDoubleClick={onNodeDoubleClick} zoomOnDoubleClick={false}
        onlyRenderVisibleElements={page.blocks.length > BIG}
        defaultViewport={startView}
      >
        {/* the dotted background, redrawn at every frame of a pan or a zoom: not on a big
          * page, where it cost a third of each frame's painting */}
        {page.blocks.length <= BIG && <Background gap={20} size={1} />}
        <Controls fitViewOptions={{padding: fitPadding(0.1, minimapStrip(page.blocks.length)),
                                   maxZoom: 1.1, minZoom: 0.02, includeHiddenNodes: true}} />
        {far && <FarLayer boxes={boxes} wires={wires} skip={drawnByFlow} />}
        {/* the minimap, for pages too big to read at once (on a small page it would only
          * cover blocks) */}
        {big && <PageMinimap boxes={boxes} width={MINIMAP.width} height={MINIMAP.height} />}
        {!big && page.blocks.length > MINIMAP_BLOCKS && <MiniMap pannable zoomable ariaLabel="Minimap of the page" nodeStrokeWidth={2}
                 nodeColor={minimapColor} style={MINIMAP} />}
      </ReactFlow>}
      </RunStatus.Provider>
      </FarView.Provider>
      {page.blocks.length === 0 && (
        <div className="empty-hint">This page is empty. Drag a block from the left, e.g.
          <b> Const</b> or <b>RandomNormal</b>, then a <b>Conv2DBackpropFilter</b>, and wire them.</div>
      )}
    </div>
  );
}
