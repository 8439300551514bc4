/* WireEdge.jsx - a wire, labelled with the dtype and shape of the value it carries (the
 * server's check: no run needed), red with the message when its input port has a problem. */
import React from 'react';
import {BaseEdge, EdgeLabelRenderer, getBezierPath} from '@xyflow/react';

export default function WireEdge({id, sourceX, sourceY, targetX, targetY, sourcePosition,
                                  targetPosition, data, selected}) {
  const [path, lx, ly] = getBezierPath({sourceX, sourceY, targetX, targetY, sourcePosition,
                                        targetPosition});
  const bad = data && data.problem;
  return (
    <>
      <BaseEdge id={id} path={path}
                style={{stroke: bad ? '#c62828' : selected ? '#1565c0' : '#7a8794',
                        strokeWidth: selected ? 3 : 2}} />
      <EdgeLabelRenderer>
        <div className={`wire-label ${bad ? 'bad' : ''} ${selected ? 'selected' : ''}`}
             style={{transform: `translate(-50%, -50%) translate(${lx}px, ${ly}px)`}}
             data-testid={`wire-${id}`} title={bad || (data && data.label) || ''}>
          {(data && data.label) || '?'}
        </div>
      </EdgeLabelRenderer>
    </>
  );
}
