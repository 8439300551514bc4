/* BlockNode.jsx - one block on the canvas: its id and type, input ports on the left and
 * output ports on the right with their names and inferred dtype/shape, what the last run
 * did (cached, running, finished with device, kernel and milliseconds, failed), and every
 * problem the check or the run found, on the port it concerns. */
import React, {memo} from 'react';
import {Handle, Position} from '@xyflow/react';

const STATE_TEXT = {cached: 'reused', running: 'running…', finished: 'done', failed: 'failed',
                    cancelled: 'cancelled'};

function BlockNode({data, selected}) {
  const {block, entry, problems, ports, status, isOutput, mark} = data;
  const inputs = entry ? entry.inputs : [];
  const outputs = entry ? entry.outputs : [{name: 'output'}];
  const portProblem = (port) => problems.find((p) => p.port === port);
  const blockProblems = problems.filter((p) => !p.port || !inputs.some((i) => i.name === p.port));
  const cls = ['block', selected ? 'selected' : '', problems.length ? 'has-problem' : '',
               status ? `st-${status.state}` : '',
               mark ? (mark.ok ? 'mark-ok' : 'mark-bad') : ''].join(' ');
  return (
    <div className={cls} data-testid={`block-${block.id}`} data-state={status ? status.state : ''}>
      <div className="block-head">
        <span className="block-id">{block.id}</span>
        <span className="block-type">{block.type}</span>
        {isOutput && <span className="badge" title="an output of the page (saved by blockflow run)">output</span>}
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
        <div className="block-run" data-testid={`run-${block.id}`}>
          <span className={`dot dot-${status.state}`} />
          {STATE_TEXT[status.state] || status.state}
          {status.state === 'finished' && (
            <span className="muted"> · {status.device}{status.kernel ? ` · ${status.kernel}` : ''} · {Number(status.ms).toFixed(3)} ms</span>
          )}
          {status.state === 'failed' && <span className="err"> · {status.message}</span>}
        </div>
      )}
      {problems.length > 0 && (
        <div className="block-problems" data-testid={`problems-${block.id}`}>
          {problems.slice(0, 2).map((p, i) => (
            <div key={i}>⚠ {p.port ? <b>{p.port}: </b> : p.attr ? <b>{p.attr}: </b> : null}{p.message}</div>
          ))}
          {problems.length > 2 && <div>… {problems.length - 2} more</div>}
        </div>
      )}
      {blockProblems.length === 0 && null}
    </div>
  );
}

export default memo(BlockNode);
