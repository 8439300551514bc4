/* ImportDialog.jsx - "Import enuSpace page": choose an enuSpace-Tensorflow page (an .svg
 * picture page with its .dat, or a Task .json export), name it, import it into the pages
 * folder (POST /api/import) and read the report: what each block became, the values read from
 * the .dat, the outputs, and the blocks that cannot be mapped with what they feed. "Write
 * Placeholders" imports such a page anyway, with a Placeholder for each. Escape or Cancel
 * closes; after an import, "Open" opens the new page. */
import React, {useEffect, useRef, useState} from 'react';
import {importBody, pageNameFrom, pickFiles, summarizeReport, validImportName}
  from '../model/enuspaceImport.js';
import {importEnuspace} from '../api/enuspace.js';

const readBytes = (f) => f.arrayBuffer().then((b) => new Uint8Array(b));

export default function ImportDialog({api, onClose, onImported, onOpen}) {
  const [picked, setPicked] = useState({});
  const [name, setName] = useState('');
  const [partial, setPartial] = useState(false);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState(null);
  const [error, setError] = useState('');
  const fileRef = useRef(null);
  useEffect(() => {
    if (fileRef.current) fileRef.current.focus();
    const k = (e) => { if (e.key === 'Escape') onClose(); };
    window.addEventListener('keydown', k);
    return () => window.removeEventListener('keydown', k);
  }, [onClose]);

  const choose = (files) => {
    const p = pickFiles(files);
    setPicked(p);
    setResult(null);
    setError(p.error || '');
    if (p.page) setName(pageNameFrom(p.page.name));
  };
  const valid = !!picked.page && validImportName(name);
  const go = async () => {
    if (!valid || busy) return;
    setBusy(true);
    setError('');
    try {
      const body = importBody({name, partial, pageBytes: await readBytes(picked.page),
                               datBytes: picked.dat ? await readBytes(picked.dat) : null});
      const r = await importEnuspace(api, body);
      setResult(r);
      if (r.ok) onImported(r.name);
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  const sum = result ? summarizeReport(result.report) : null;
  return (
    <div className="modal-back" onMouseDown={(e) => { if (e.target === e.currentTarget) onClose(); }}>
      <div className="modal modal-wide" role="dialog" aria-modal="true" aria-labelledby="import-title">
        <form onSubmit={(e) => { e.preventDefault(); go(); }}>
          <h2 id="import-title">Import enuSpace page</h2>
          <p className="hint">An enuSpace-Tensorflow page: the <b>.svg</b> picture page with
            its <b>.dat</b> file, or a Task <b>.json</b> export.</p>
          <label className="field">Files
            <input ref={fileRef} type="file" multiple accept=".svg,.json,.dat"
                   aria-label="enuSpace files" data-testid="import-files"
                   onChange={(e) => choose(e.target.files)} />
          </label>
          {picked.page && (
            <p className="hint" data-testid="import-picked">
              Page: {picked.page.name}{picked.dat ? `, values: ${picked.dat.name}` : ', no .dat'}
            </p>
          )}
          {picked.warning && <p className="warn">{picked.warning}</p>}
          <label className="field">Page name (saved as NAME.json in the pages folder)
            <input value={name} onChange={(e) => setName(e.target.value)} aria-label="Imported page name"
                   aria-invalid={!!name && !validImportName(name)} />
          </label>
          <label className="check">
            <input type="checkbox" checked={partial} onChange={(e) => setPartial(e.target.checked)} />
            Write a Placeholder for each block that cannot be mapped
          </label>
          {error && <p className="err" role="alert">{error}</p>}
          {sum && (
            <div className={`import-report ${sum.ok ? 'ok' : 'failed'}`} data-testid="import-report">
              <p className="headline"><b>{sum.headline}</b></p>
              {!result.ok && result.message && <p className="err">{result.message}</p>}
              <ul>{sum.lines.map((l, i) => <li key={i}>{l}</li>)}</ul>
              {sum.unsupported.length > 0 && (
                <table className="import-unsupported">
                  <thead><tr><th>block</th><th>type</th><th>why</th><th>feeds</th></tr></thead>
                  <tbody>
                    {sum.unsupported.map((u) => (
                      <tr key={u.id}><td>{u.id}</td><td>{u.type}</td><td>{u.why}</td>
                        <td>{u.feeds.join(', ')}</td></tr>
                    ))}
                  </tbody>
                </table>
              )}
            </div>
          )}
          <div className="actions">
            {result && result.ok ? (
              <button type="button" className="primary"
                      onClick={() => { onClose(); onOpen(result.name); }}>Open {result.name}</button>
            ) : (
              <button type="submit" className="primary" disabled={!valid || busy}>
                {busy ? 'Importing…' : 'Import'}
              </button>
            )}
            <button type="button" onClick={onClose}>{result && result.ok ? 'Close' : 'Cancel'}</button>
          </div>
        </form>
      </div>
    </div>
  );
}
