/* WireEdge.jsx - a wire, labelled with the dtype and shape of the value it carries (the
 * server's check: no run needed), red with the message when its input port has a problem.
 *
 * A label sits halfway along the wire. Where that spot lies on one of the two blocks (close
 * blocks side by side: a wide Conv2D gradient block in the automatic layout leaves a few
 * pixels), the label would be cut by the block above it ("t32[1,5,"), which reads as a wrong
 * shape. There the wire shows a small "⋯" above the blocks instead; pointing at it (or
 * selecting the wire) shows the whole label, and the source block's output row carries the
 * same dtype[shape]. A wire with a problem always shows its label, above the blocks. */
import React, {useContext} from 'react';
import {BaseEdge, EdgeLabelRenderer, getBezierPath, useInternalNode} from '@xyflow/react';
import {FarView} from './farView.js';
import {LABEL_H, labelWidth, overlapsNode} from '../model/wires.js';

export default function WireEdge({id, source, target, sourceX, sourceY, targetX, targetY,
                                  sourcePosition, targetPosition, data, selected}) {
  const [path, lx, ly] = getBezierPath({sourceX, sourceY, targetX, targetY, sourcePosition,
                                        targetPosition});
  const from = useInternalNode(source);
  const to = useInternalNode(target);
  const far = useContext(FarView);
  const bad = data && data.problem;
  const text = (data && data.label) || '?';
  const w = labelWidth(text) + 4;
  const covered = overlapsNode(from, lx, ly, w, LABEL_H) || overlapsNode(to, lx, ly, w, LABEL_H);
  const kind = bad ? 'bad' : covered ? 'compact' : '';
  const stroke = {stroke: bad ? '#c62828' : selected ? '#1565c0' : '#7a8794',
                  strokeWidth: selected ? 3 : 2};
  /* zoomed far out: the wire without its label (too small to read) */
  if (far && !selected) return <BaseEdge id={id} path={path} style={stroke} />;
  return (
    <>
      <BaseEdge id={id} path={path}
                style={{stroke: bad ? '#c62828' : selected ? '#1565c0' : '#7a8794',
                        strokeWidth: selected ? 3 : 2}} />
      <EdgeLabelRenderer>
        <div className={`wire-label ${kind} ${selected ? 'selected' : ''}`}
             style={{transform: `translate(-50%, -50%) translate(${lx}px, ${ly}px)`}}
             data-testid={`wire-${id}`} title={bad || text}>
          <span className="full">{text}</span>
          {kind === 'compact' && <span className="more" aria-hidden="true">⋯</span>}
        </div>
      </EdgeLabelRenderer>
    </>
  );
}
