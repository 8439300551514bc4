/* BottomPanel.jsx - the two tabs under the canvas: Problems (every problem of the check and
 * of the last run) and Output (the selected block's tensor after a run). */
import React, {useEffect, useState} from 'react';
import ProblemsPanel from './ProblemsPanel.jsx';
import TensorView from './TensorView.jsx';

export default function BottomPanel({api, page, problems, run, selectedBlock, index, onSelect,
                                     onRunTo}) {
  const [tab, setTab] = useState('problems');
  const errors = problems.filter((p) => p.severity !== 'warning').length;
  useEffect(() => {
    if (run && run.state === 'finished' && selectedBlock) setTab('output');
  }, [run && run.state, selectedBlock && selectedBlock.id]);
  if (!page) return null;
  return (
    <section className="bottom" aria-label="Problems and output">
      <div className="tabs" role="tablist">
        <button role="tab" aria-selected={tab === 'problems'} onClick={() => setTab('problems')}>
          Problems {errors ? <span className="count bad">{errors}</span> : <span className="count ok">0</span>}
        </button>
        <button role="tab" aria-selected={tab === 'output'} onClick={() => setTab('output')}>
          Output {selectedBlock ? `of “${selectedBlock.id}”` : ''}
        </button>
      </div>
      <div className="tab-body">
        {tab === 'problems'
          ? <ProblemsPanel problems={problems} onSelect={onSelect} />
          : <TensorView api={api} run={run} block={selectedBlock} index={index}
                        onRunTo={onRunTo} />}
      </div>
    </section>
  );
}
