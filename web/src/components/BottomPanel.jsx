/* BottomPanel.jsx - the tabs under the canvas: Problems (every problem of the check and of
 * the last run), Output (the selected block's tensor after a run) and, for a convolution
 * block, Teach. The splitter above it sets its height, remembered per tab. */
import React, {useEffect, useState} from 'react';
import {loadHeights, panelHeight, heightLimits, saveHeights} from '../model/panel.js';
import ProblemsPanel from './ProblemsPanel.jsx';
import Splitter from './Splitter.jsx';
import TensorView from './TensorView.jsx';
import TeachPanel from './TeachPanel.jsx';
import TrainPanel from './TrainPanel.jsx';
import {isTeachable} from '../model/teach.js';

const storage = () => { try { return window.localStorage; } catch { return null; } };

export default function BottomPanel({api, page, problems, run, selectedBlock, index, onSelect,
                                     onRunTo, events, gate, docName, check, onAddGradients,
                                     tab, setTab, training, onBackwardBuilt, onMarks}) {
  const teachable = selectedBlock && isTeachable(selectedBlock.type);
  const shown = tab === 'teach' && !teachable ? 'output' : tab;
  const errors = problems.filter((p) => p.severity !== 'warning').length;
  const [heights, setHeights] = useState(() => loadHeights(storage()));
  const [windowH, setWindowH] = useState(window.innerHeight);
  useEffect(() => {
    const onResize = () => setWindowH(window.innerHeight);
    window.addEventListener('resize', onResize);
    return () => window.removeEventListener('resize', onResize);
  }, []);
  const height = panelHeight(shown, heights, windowH);
  const resize = (h) => {
    const next = {...heights, [shown]: h};
    setHeights(next);
    saveHeights(storage(), next);
  };
  useEffect(() => {
    if (run && run.state === 'finished' && selectedBlock && tab !== 'teach' && tab !== 'training') setTab('output');
  // eslint-disable-next-line react-hooks/exhaustive-deps -- deps by value, on purpose
  }, [run && run.state, selectedBlock && selectedBlock.id]);
  if (!page) return null;
  return (
    <>
    <Splitter height={height} limits={heightLimits(windowH)} onChange={resize}
              label="Height of the panel under the canvas" />
    <section className={`bottom bottom-${shown}`} style={{height}}
             aria-label="Problems and output">
      <div className="tabs" role="tablist">
        <button role="tab" aria-selected={shown === 'problems'} onClick={() => setTab('problems')}>
          Problems {errors ? <span className="count bad">{errors}</span> : <span className="count ok">0</span>}
        </button>
        <button role="tab" aria-selected={shown === 'output'} onClick={() => setTab('output')}>
          Output {selectedBlock ? `of “${selectedBlock.id}”` : ''}
        </button>
        {training && (
          <button role="tab" aria-selected={shown === 'training'} onClick={() => setTab('training')}
                  data-testid="training-tab">
            Training
          </button>
        )}
        {teachable && (
          <button role="tab" aria-selected={shown === 'teach'} onClick={() => setTab('teach')}
                  data-testid="teach-tab">
            Teach: where “{selectedBlock.id}” comes from
          </button>
        )}
      </div>
      <div className="tab-body">
        {shown === 'problems'
          ? <ProblemsPanel problems={problems} onSelect={onSelect} />
          : shown === 'training'
          ? <TrainPanel training={training} api={api} events={events} page={page} check={check}
                        selectedBlock={selectedBlock} onBackwardBuilt={onBackwardBuilt} onMarks={onMarks} />
          : shown === 'teach'
          ? <TeachPanel key={`${docName}/${selectedBlock.id}`} api={api} events={events} gate={gate} docName={docName} block={selectedBlock}
                        check={check} run={run} onAddGradients={onAddGradients} />
          : <TensorView gate={gate} api={api} run={run} block={selectedBlock} index={index}
                        onRunTo={onRunTo} room={height} />}
      </div>
    </section>
    </>
  );
}
