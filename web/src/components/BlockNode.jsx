/* BlockNode.jsx - one block on the canvas: its id and type, input ports on the left and
 * output ports on the right with their names and inferred dtype/shape, what the last run
 * did (cached, running, finished with device, kernel and milliseconds, failed), and every
 * problem the check or the run found, on the port it concerns. */
import React, {memo, useContext} from 'react';
import {Handle, Position} from '@xyflow/react';
import {blockPorts, dotTop, farGeometry} from '../model/farBlock.js';
import {FarView, RunStatus} from './farView.js';

const STATE_TEXT = {cached: 'reused', running: 'running…', finished: 'done', failed: 'failed',
                    cancelled: 'cancelled'};

const problemText = (p) => `${p.port ? `${p.port}: ` : p.attr ? `${p.attr}: ` : ''}${p.message}`;

/* A far block's port dot: what React Flow would measure to attach wires (the classes and
 * data-attributes of its Handle), without a Handle component. It is not measured: the canvas
 * gives React Flow the same geometry (model/farBlock.js). No wire is dragged from a dot of a
 * block too small to read, and 1500 Handles, each watching React Flow's store, made every
 * frame of a zoom or a pan over a 500-block page slow. */
function Dot({type, id, nodeId, top}) {
  const side = type === 'target' ? 'left' : 'right';
  return <div className={`react-flow__handle react-flow__handle-${side} nodrag nopan ${type}`}
              data-handleid={id} data-nodeid={nodeId} data-handlepos={side} style={{top}} />;
}

/* zoomed far out on a big page: a plain box of farGeometry's size with its ports' dots */
function FarBlock({block, inputs, outputs, cls, status}) {
  const {width, height} = farGeometry(block.id, inputs, outputs);
  return (
    <div className={`${cls} block-far`} data-testid={`block-${block.id}`}
         data-state={status ? status.state : ''} style={{width, height}}>
      <div className="block-head"><span className="block-id">{block.id}</span></div>
      {inputs.map((p, i) => (
        <Dot key={p.name} type="target" id={`in:${p.name}`} nodeId={block.id} top={dotTop(i)} />
      ))}
      {outputs.map((p, i) => (
        <Dot key={p.name} type="source" id={`out:${p.name}`} nodeId={block.id} top={dotTop(i)} />
      ))}
    </div>
  );
}

function BlockNode({data, selected}) {
  const {block, entry, problems, ports, isOutput, mark} = data;
  const far = useContext(FarView);
  const statuses = useContext(RunStatus);
  const status = statuses ? statuses[block.id] : data.status;
  const {inputs, outputs} = blockPorts(entry);
  const portProblem = (port) => problems.find((p) => p.port === port);
  const cls = ['block', selected ? 'selected' : '', problems.length ? 'has-problem' : '',
               status ? `st-${status.state}` : '',
               mark ? (mark.ok ? 'mark-ok' : 'mark-bad') : ''].join(' ');
  if (far) return <FarBlock block={block} inputs={inputs} outputs={outputs} cls={cls} status={status} />;
  return (
    <div className={cls} data-testid={`block-${block.id}`} data-state={status ? status.state : ''}>
      <div className="block-head">
        <span className="block-id" title={block.id}>{block.id}</span>
        <span className="block-type">{block.type}</span>
        {isOutput && <span className="badge" title="an output of the page (saved by blockflow run)">output</span>}
        {/* problems: a mark in the title row (the block never grows and covers the one below);
          * the messages on pointing, in the Problems list and, for a port, on the port */}
        {problems.length > 0 && (
          <span className="block-warn" data-testid={`problems-${block.id}`} role="img"
                aria-label={`${problems.length} problem${problems.length > 1 ? 's' : ''}`}
                title={problems.map(problemText).join('\n')}>
            ⚠{problems.length > 1 ? ` ${problems.length}` : ''}
            <span className="sr-only">{problems.map(problemText).join('; ')}</span>
          </span>
        )}
      </div>
      <div className="ports">
        <div className="ins">
          {inputs.map((p) => {
            const pi = ports && ports.inputs && ports.inputs[p.name];
            const bad = portProblem(p.name);
            return (
              <div key={p.name} className={`port in ${bad ? 'bad' : ''}`}
                   title={bad ? bad.message : `${p.name}: ${p.dtypes.join(', ')}`}>
                <Handle type="target" position={Position.Left} id={`in:${p.name}`} />
                <span className="port-name">{p.name}</span>
                {pi && pi.dtype ? <span className="port-type">{pi.dtype}</span>
                  : <span className="port-type muted">
                      {bad ? '⚠' : block.inputs && block.inputs[p.name] ? '?' : 'unwired'}
                    </span>}
              </div>
            );
          })}
        </div>
        <div className="outs">
          {outputs.map((p) => {
            const po = ports && ports.outputs && ports.outputs[p.name];
            return (
              <div key={p.name} className="port out" title={p.doc || p.name}>
                <span className="port-type">{po ? po.label : ''}</span>
                <span className="port-name">{p.name}</span>
                <Handle type="source" position={Position.Right} id={`out:${p.name}`} />
              </div>
            );
          })}
        </div>
      </div>
      {mark && (
        <div className={`block-mark ${mark.ok ? 'ok' : 'bad'}`} data-testid={`mark-${block.id}`}>
          {mark.ok ? '✓' : '✗'} gradient check · {mark.text}
        </div>
      )}
      {status && (
        <div className="block-run" data-testid={`run-${block.id}`}
             title={status.message || STATE_TEXT[status.state] || status.state}>
          <span className={`dot dot-${status.state}`} />
          {STATE_TEXT[status.state] || status.state}
          {status.state === 'finished' && (
            <span className="muted"> · {status.device}{status.kernel ? ` · ${status.kernel}` : ''} · {Number(status.ms).toFixed(3)} ms</span>
          )}
          {status.state === 'failed' && <span className="err"> · {status.message}</span>}
        </div>
      )}
    </div>
  );
}

export default memo(BlockNode);
