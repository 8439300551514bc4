/* Inspector.jsx - the right-hand panel. With a block selected: its id (rename), type and
 * documentation, device, every attribute as a widget built from the catalogue, whether it is
 * an output of the page, and its ports' inferred dtypes and shapes. Without one: the page's
 * name and description, and how to get started. */
import React, {useEffect, useRef, useState} from 'react';
import {attrWidgets} from '../model/catalog.js';
import {parseSource} from '../model/page.js';
import {wireCandidates} from '../model/wires.js';
import AttrField from './AttrField.jsx';
import DocToggle from './DocToggle.jsx';
import ConstGrid from './ConstGrid.jsx';
import FeedPanel from './FeedPanel.jsx';
import SelectionSummary from './SelectionSummary.jsx';
import ScalarSlider from './ScalarSlider.jsx';

function TextCommit({label, value, onCommit, multiline, testid, focusKey}) {
  /* focusKey changes (a double-click on the block, the menu's Rename): focus, text selected */
  const ref = useRef(null);
  useEffect(() => {
    if (focusKey && ref.current) { ref.current.focus(); ref.current.select(); }
  }, [focusKey]);
  /* The draft belongs to one field and one value. React reuses this component when the panel
   * switches between the page's fields and a block's (the page's description box becomes the
   * block's id box), and when the value changes under it (undo, a rename): the draft then
   * starts over from the new value in the same render. Synchronising it in an effect instead
   * left one frame in which the block's id box showed, and on blur would have committed, the
   * page's description. */
  const field = `${label}\u0000${value || ''}`;
  const [draft, setDraft] = useState({field, text: value || ''});
  let v = draft.text;
  if (draft.field !== field) {
    v = value || '';
    setDraft({field, text: v});
  }
  /* a refused value (a taken block id) goes back to the value held; the message says why */
  const commit = () => {
    if (v !== (value || '') && onCommit(v) === false) setDraft({field, text: value || ''});
  };
  const props = {value: v, 'aria-label': label, 'data-testid': testid, ref,
                 onChange: (e) => setDraft({field, text: e.target.value}), onBlur: commit,
                 onKeyDown: (e) => {
                   if (e.key === 'Enter' && !multiline) commit();
                   if (e.key === 'Escape') { setDraft({field, text: value || ''}); e.currentTarget.blur(); }
                 }};
  return multiline ? <textarea rows={4} {...props} /> : <input type="text" {...props} />;
}

/* The input's wire as a list: its source, any other output that may feed it, or none. The
 * keyboard's (and the screen reader's) way to wire, beside dragging between dots. */
function WireSelect({page, index, check, block, port, source, onWire}) {
  const options = wireCandidates(page, index, check, block.id, port);
  const current = source || '';
  const known = !current || options.some((o) => o.source === current);
  return (
    <select className="wire-select" value={current} aria-label={`Wire ${port} from`}
            title={`Which output feeds "${port}"`}
            onChange={(e) => onWire(block.id, port, e.target.value)}>
      <option value="">— unwired —</option>
      {!known && <option value={current}>{current}</option>}
      {options.map((o) => <option key={o.source} value={o.source}>{o.label}</option>)}
    </select>
  );
}

export default function Inspector({page, index, check, block, files, onChange, onRename,
                                   onRefreshFiles, onEditValue, onWire, onPlot, feeds, onFeed,
                                   allFiles, onFeedFile,
                                   selection, editor, state, renaming}) {
  if (!page || !index) {
    return <aside className="inspector" aria-label="Inspector"><h2>Inspector</h2>
      <p className="muted">Open a page to see its blocks here.</p></aside>;
  }
  if (!block && selection && selection.length > 1) {
    return <SelectionSummary editor={editor} state={state} blocks={selection} />;
  }
  if (!block) {
    return (
      <aside className="inspector" aria-label="Inspector">
        <h2>Page</h2>
        <label className="field">Name
          <TextCommit label="Page name" value={page.name}
                      onCommit={(name) => onChange([{op: 'set_name', name}])} />
        </label>
        <label className="field">Description
          <TextCommit label="Page description" value={page.description} multiline
                      onCommit={(description) => onChange([{op: 'set_description', description}])} />
        </label>
        <div className="howto">
          <h3>How to</h3>
          <ul>
            <li><b>Select a block</b> to edit its attributes here.</li>
            <li><b>Wire</b>: drag from an output dot (right side of a block) to an input dot (left side), or pick the source of an input under <b>Ports</b> when the block is selected.</li>
            <li>Each wire shows the <b>dtype[shape]</b> it carries; problems show in red.</li>
            <li><b>Run</b> computes the page; select a block and open <b>Output</b> below to see its values.</li>
            <li>Ctrl+S saves, Ctrl+Z / Ctrl+Shift+Z undo and redo, Delete removes, Ctrl+C / Ctrl+V copy.</li>
          </ul>
        </div>
      </aside>
    );
  }
  const entry = index.byType.get(block.type);
  const widgets = attrWidgets(entry);
  const info = check && check.blocks && check.blocks[block.id];
  const problems = ((check && check.problems) || []).filter((p) => p.block === block.id);
  const isOutput = (page.outputs || []).some((o) => parseSource(o).block === block.id);
  return (
    <aside className="inspector" aria-label="Inspector">
      <h2>{block.type}</h2>
      {entry && <DocToggle label={`About ${block.type}`}>
        <code>{entry.synopsis}</code><p>{entry.doc}</p>
      </DocToggle>}
      <label className="field">Block id
        <TextCommit label="Block id" value={block.id} testid="block-id"
                    focusKey={renaming && renaming.id === block.id ? renaming.at : null}
                    onCommit={(id) => onRename(block.id, id)} />
      </label>
      <label className="field">Device
        <select value={block.device || 'auto'} aria-label="Device"
                onChange={(e) => onChange([{op: 'set_device', block: block.id, device: e.target.value}])}>
          <option value="auto">auto (GPU when present)</option>
          <option value="cpu">cpu</option>
          <option value="gpu">gpu</option>
        </select>
      </label>
      <label className="check">
        <input type="checkbox" checked={isOutput} onChange={(e) => {
          const outs = (page.outputs || []).filter((o) => parseSource(o).block !== block.id);
          onChange([{op: 'set_outputs', outputs: e.target.checked ? [...outs, block.id] : outs}]);
        }} /> an output of the page (<code>blockflow run</code> saves it)
      </label>
      {widgets.length > 0 && <h3>Attributes</h3>}
      {widgets.map((w) => (
        <AttrField key={`${block.id}.${w.name}`} w={w} block={block}
                   value={(block.attrs || {})[w.name]} files={files}
                   problem={problems.find((p) => p.attr === w.name)}
                   onRefreshFiles={onRefreshFiles}
                   onCommit={(value) => onChange(
                     [{op: 'set_attr', block: block.id, attr: w.name, value}],
                     {key: `attr:${block.id}:${w.name}`})} />
      ))}
      {block.type === 'Const' && <ScalarSlider block={block} onChange={onChange} />}
      {onPlot && info && Object.values(info.outputs || {}).some((o) => Array.isArray(o.shape) &&
                                                                     o.shape.length === 0) && (
        <button className="plot-it" data-testid="plot-block" onClick={() => onPlot(block.id)}
                title="Add this scalar to the Training tab's plot (its value after each step)">
          Plot while training
        </button>
      )}
      {block.type === 'Const' && <ConstGrid page={page} block={block}
                                            onEditValue={onEditValue || onChange} />}
      {entry && entry.feedable && onFeed && (
        <FeedPanel key={`${block.id}:${JSON.stringify(block.attrs || {})}`} block={block}
                   feed={feeds && feeds[block.id]} onFeed={(bytes, info) => onFeed(block.id, bytes, info)}
                   files={allFiles || []} onRefreshFiles={onRefreshFiles}
                   onFeedFile={onFeedFile && ((path) => onFeedFile(block.id, path))} />
      )}
      {info && (
        <>
          <h3>Ports</h3>
          <table className="ports-table">
            <tbody>
              {Object.entries(info.inputs || {}).map(([k, v]) => {
                const src = (block.inputs || {})[k];
                return (
                  <React.Fragment key={`i${k}`}>
                    <tr className="port-head"><td>in</td><td>{k}</td><td>{v.label}</td></tr>
                    <tr className="port-wire"><td /><td colSpan={2}>
                      <span className="muted">from </span>
                      <WireSelect page={page} index={index} check={check} block={block} port={k}
                                  source={src} onWire={onWire} />
                      {src && <button className="link" aria-label={`Disconnect ${k}`}
                                      title="Cut this wire"
                                      onClick={() => onWire(block.id, k, '')}>✂</button>}
                    </td></tr>
                  </React.Fragment>
                );
              })}
              {Object.entries(info.outputs || {}).map(([k, v]) => (
                <tr key={`o${k}`}><td>out</td><td>{k}</td><td>{v.label}</td></tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      {problems.length > 0 && (
        <div className="problems-inline">
          {problems.map((p, i) => <div key={i}>⚠ {p.message}</div>)}
        </div>
      )}
    </aside>
  );
}
