/* AttrField.jsx - the widget of one attribute, chosen from its catalogue entry: a dropdown
 * for enums, dtypes and booleans, one box per element for fixed-length int lists (strides,
 * dilations, explicit_paddings), a text box for shapes, numbers and tensors, a picker of the
 * .npy files in the pages folder for files. The default is shown; an empty value means "the
 * default". Text is committed on Enter or when the field loses focus. */
import React, {useEffect, useState} from 'react';
import {formatAttrValue, parseAttrInput} from '../model/catalog.js';
import DocToggle from './DocToggle.jsx';

function defaultText(w) {
  if (!w.hasDefault) return w.required ? 'required' : 'optional';
  const d = Array.isArray(w.default) ? `[${w.default.join(', ')}]` : String(w.default);
  return `default ${d}`;
}

export default function AttrField({w, block, value, files, problem, onCommit, onRefreshFiles}) {
  const [text, setText] = useState(formatAttrValue(w, value));
  const [cells, setCells] = useState([]);
  const [err, setErr] = useState(null);
  const fixed = w.widget === 'int_list' && w.length > 0;
  useEffect(() => {
    setText(formatAttrValue(w, value));
    setCells(fixed ? Array.from({length: w.length}, (_, i) =>
      (Array.isArray(value) && value.length ? String(value[i] ?? '') : '')) : []);
    setErr(null);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [JSON.stringify(value), w.name, block.id]);

  const commit = (input) => {
    const r = parseAttrInput(w, input);
    if (!r.ok) { setErr(r.error); return; }
    setErr(null);
    const same = JSON.stringify(r.value) === JSON.stringify(value ?? null);
    if (!same) onCommit(r.value);
  };
  const id = `attr-${block.id}-${w.name}`;
  let control;
  /* a value the page holds that is not one of the choices (a typo in the file): shown as
   * it is, marked invalid, until one of the choices replaces it */
  const invalid = w.options && value !== undefined && value !== null &&
                  !w.options.some((o) => String(o) === String(value));
  if (w.options) {
    control = (
      <select id={id} value={value === undefined || value === null ? '' : String(value)}
              aria-invalid={invalid || undefined}
              onChange={(e) => commit(e.target.value === '' ? null :
                w.widget === 'bool' ? e.target.value === 'true' : e.target.value)}>
        {invalid && <option value={String(value)} disabled>{String(value)} (invalid)</option>}
        {!w.required && <option value="">({defaultText(w)})</option>}
        {w.required && value === undefined && <option value="">choose…</option>}
        {w.options.map((o) => <option key={String(o)} value={String(o)}>{String(o)}</option>)}
      </select>
    );
  } else if (fixed) {
    const def = Array.isArray(w.default) && w.default.length ? w.default : null;
    control = (
      <span className="int-cells" id={id} role="group" aria-label={w.name}>
        {cells.map((c, i) => (
          <input key={i} type="text" inputMode="numeric" value={c} size={3}
                 aria-label={`${w.name} ${i + 1} of ${w.length}`}
                 placeholder={def ? String(def[i]) : ''}
                 onChange={(e) => { const n = cells.slice(); n[i] = e.target.value; setCells(n); }}
                 onBlur={(e) => {
                   if (!e.currentTarget.parentNode.contains(e.relatedTarget)) commit(cells);
                 }}
                 onKeyDown={(e) => { if (e.key === 'Enter') commit(cells); }} />
        ))}
      </span>
    );
  } else if (w.widget === 'file') {
    control = (
      <span className="file-pick">
        <select id={id} value={value || ''} onFocus={onRefreshFiles}
                onChange={(e) => commit(e.target.value)}>
          <option value="">{files.length ? 'choose a .npy file…' : 'no .npy file in the pages folder'}</option>
          {value && !files.includes(value) && <option value={value}>{value}</option>}
          {files.map((f) => <option key={f} value={f}>{f}</option>)}
        </select>
      </span>
    );
  } else {
    control = (
      <input id={id} type="text" value={text} placeholder={defaultText(w)}
             onChange={(e) => setText(e.target.value)} onBlur={() => commit(text)}
             onKeyDown={(e) => { if (e.key === 'Enter') commit(text); }} />
    );
  }
  return (
    <div className={`field attr ${err || problem || invalid ? 'bad' : ''}`} data-testid={id}>
      <div className="attr-head">
        <label htmlFor={id}>{w.name}</label>
        <span className="muted kind">{w.kind}{fixed ? `×${w.length}` : ''} · {defaultText(w)}</span>
        <DocToggle label={`About ${w.name}`}><p>{w.doc}</p></DocToggle>
      </div>
      {control}
      {(err || problem || invalid) && <div className="err" role="alert">
        {err || (problem ? problem.message : `"${value}" is not one of ${w.options.join(', ')}`)}
      </div>}
    </div>
  );
}
