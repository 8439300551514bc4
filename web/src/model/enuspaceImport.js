/*
 * enuspaceImport.js - the pure part of "Import enuSpace page": which of the chosen files is
 * the page (.svg or .json) and which its .dat, the page name to offer, the request body of
 * POST /api/import (base64 files), and the import report as the lines the dialog shows.
 */

const PAGE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,59}$/;

/** Whether `name` is a page name the server takes for an import. */
export function validImportName(name) { return PAGE_NAME.test(name || ''); }

/** The page name offered for file `fileName`: its base name made safe ("Xor 2.svg" -> "Xor_2"). */
export function pageNameFrom(fileName) {
  const base = String(fileName || '').replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
  let n = base.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '').slice(0, 60);
  if (!n) n = 'imported';
  return n;
}

const ext = (f) => (/\.([^.]*)$/.exec(f.name || '') || [, ''])[1].toLowerCase();
const stem = (f) => (f.name || '').replace(/\.[^.]*$/, '');

/**
 * The page and its .dat among `files` (an array or FileList of {name}): {page, dat, error,
 * warning}. One .svg or .json is the page; a .dat is its side file (a warning when its name
 * is not the page's).
 */
export function pickFiles(files) {
  const list = Array.from(files || []);
  const pages = list.filter((f) => ext(f) === 'svg' || ext(f) === 'json');
  const dats = list.filter((f) => ext(f) === 'dat');
  const other = list.filter((f) => !['svg', 'json', 'dat'].includes(ext(f)));
  if (other.length) return {error: `${other[0].name} is not an enuSpace file (.svg, .json or .dat)`};
  if (pages.length !== 1) {
    return {error: pages.length ? 'Choose one page (.svg or .json) at a time.'
      : 'Choose the page: an .svg picture page or a Task .json export (and its .dat).'};
  }
  if (dats.length > 1) return {error: 'Choose at most one .dat file.'};
  const page = pages[0], dat = dats[0] || null;
  const warning = dat && stem(dat) !== stem(page)
    ? `${dat.name} is not named after ${page.name}: is it its .dat?` : '';
  return {page, dat, warning};
}

/** Bytes (Uint8Array or ArrayBuffer) as base64, in chunks (a spread of a large array throws). */
export function toBase64(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let s = '';
  for (let i = 0; i < u8.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000));
  }
  return typeof btoa === 'function' ? btoa(s) : Buffer.from(s, 'binary').toString('base64');
}

/** The body of POST /api/import. */
export function importBody({name, pageBytes, datBytes, partial}) {
  const body = {name, page: toBase64(pageBytes), partial: !!partial};
  if (datBytes) body.dat = toBase64(datBytes);
  return body;
}

/**
 * The report (the server's "report") as what the dialog shows: a headline, the lines of
 * detail, and the blocks that could not be mapped with what they feed.
 */
export function summarizeReport(report) {
  if (!report) return {headline: '', lines: [], unsupported: []};
  const mapped = report.mapped || [];
  const renamed = mapped.filter((m) => m.type !== m.op);
  const lines = [];
  lines.push(`${report.blocks_read} blocks and ${report.wires_read} wires read `
    + `(${report.source === 'task-json' ? 'Task JSON export' : 'SVG page'}`
    + `${report.enuspace_version ? `, enuSpace ${report.enuspace_version}` : ''}).`);
  if (mapped.length) {
    lines.push(`${mapped.length} blocks mapped${renamed.length ? ': ' + [...new Set(
      renamed.map((m) => `${m.type} → ${m.op}`))].join(', ') : ''}.`);
  }
  if ((report.literals || []).length) lines.push(`${report.literals.length} literal values became Consts.`);
  if ((report.dat_values || []).length) {
    lines.push(`${report.dat_values.length} arrays read from the .dat file.`);
  }
  const dropped = report.dropped || [];
  if (dropped.length) lines.push(`Dropped: ${dropped.map((d) => `${d.id} (${d.type})`).join(', ')}.`);
  if (report.result_caches_dropped) {
    lines.push(`${report.result_caches_dropped} saved results (result_* pins, display only) dropped.`);
  }
  if ((report.outputs || []).length) lines.push(`Outputs: ${report.outputs.join(', ')}.`);
  for (const s of report.sessions || []) {
    if (s.infinite_loop) lines.push(`The ClientSession ran steps back to back (INFINITE_LOOP): train it.`);
  }
  for (const p of report.placeholders || []) {
    lines.push(`Placeholder ${p.placeholder} stands for ${p.for}:${p.port}.`);
  }
  for (const n of report.notes || []) lines.push(n);
  const unsupported = (report.unsupported || []).map((u) => ({
    id: u.id, type: u.type, why: u.why, feeds: u.feeds || [],
  }));
  const ok = report.ok !== false;
  const headline = ok
    ? `Imported ${report.page}: ${mapped.length} blocks.`
    : `${report.page} cannot be imported: ${unsupported.length} block${
      unsupported.length === 1 ? '' : 's'} cannot be mapped.`;
  return {headline, lines, unsupported, ok};
}
