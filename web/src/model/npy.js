/*
 * npy.js - NumPy .npy files in the browser, for feeding Placeholders from the editor: write
 * one from a grid of numbers, read the header of an uploaded one (its dtype and shape, to
 * check it against the Placeholder before it is sent), and base64 for the run request's
 * "feeds" (README "Serve": {"feeds": {id: base64 .npy}}). The server's own strict reader
 * parses the file; this only refuses what is plainly not a .npy.
 */

const DESCR = {float32: '<f4', float64: '<f8', int32: '<i4', int64: '<i8'};
const DTYPE = {'<f4': 'float32', '<f8': 'float64', '<i4': 'int32', '<i8': 'int64',
               '<f2': 'float16', '|u1': 'uint8', '<u2': 'bfloat16'};

/** The dtypes a grid can be written as. */
export const GRID_DTYPES = Object.keys(DESCR);

/** A version 1.0 .npy (C order, little-endian) of `shape` holding `values` (flat, row-major). */
export function encodeNpy(dtype, shape, values) {
  const descr = DESCR[dtype];
  if (!descr) throw new Error(`a grid cannot be written as ${dtype}`);
  const n = shape.reduce((a, d) => a * d, 1);
  if (values.length !== n) throw new Error(`${values.length} values for shape [${shape}]`);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (` +
               `${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const size = Number(descr.slice(2));
  const out = new Uint8Array(10 + header.length + n * size);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]); /* \x93NUMPY 1.0 */
  out[8] = header.length & 0xff;
  out[9] = header.length >> 8;
  for (let i = 0; i < header.length; i++) out[10 + i] = header.charCodeAt(i);
  const view = new DataView(out.buffer, 10 + header.length);
  values.forEach((v, i) => {
    if (dtype === 'float32') view.setFloat32(i * 4, v, true);
    else if (dtype === 'float64') view.setFloat64(i * 8, v, true);
    else if (dtype === 'int32') view.setInt32(i * 4, Math.trunc(v), true);
    else view.setBigInt64(i * 8, BigInt(Math.trunc(v)), true);
  });
  return out;
}

/** The header of .npy bytes: {dtype, shape}; throws an Error saying why it is not one. */
export function readNpyHeader(bytes) {
  const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (b.length < 12 || b[0] !== 0x93 || String.fromCharCode(...b.slice(1, 6)) !== 'NUMPY') {
    throw new Error('not a .npy file (it does not start with \\x93NUMPY)');
  }
  const major = b[6];
  const hl = major === 1 ? b[8] | (b[9] << 8) : b[8] | (b[9] << 8) | (b[10] << 16) | (b[11] << 24);
  const off = major === 1 ? 10 : 12;
  if (off + hl > b.length) throw new Error('the .npy header is cut short');
  const text = String.fromCharCode(...b.slice(off, off + hl));
  const descr = /'descr':\s*'([^']+)'/.exec(text);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(text);
  if (!descr || !shape) throw new Error('the .npy header has no descr or shape');
  if (/'fortran_order':\s*True/.test(text)) throw new Error('Fortran-order .npy files are not read');
  return {dtype: DTYPE[descr[1]] || descr[1],
          shape: shape[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number)};
}

/** Base64 of bytes, in a browser (btoa) or Node (Buffer). */
export function toBase64(bytes) {
  if (typeof Buffer !== 'undefined') return Buffer.from(bytes).toString('base64');
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/**
 * Why a .npy holding `dtype`[`shape`] (called `name`) cannot feed Placeholder `block`, or ''
 * when it can.
 */
export function feedProblem(block, {dtype, shape}, name) {
  const a = block.attrs || {};
  const want = a.dtype || 'float32';
  if (dtype !== want) return `${name} holds ${dtype}; ${block.id} takes ${want}`;
  if (!shapeFits(a.shape, shape)) return `${name} has shape [${shape}]; ${block.id} takes [${a.shape}]`;
  return '';
}

/** Whether a feed of `shape` fits a Placeholder declared with `want` (-1: any size). */
export function shapeFits(want, shape) {
  if (!Array.isArray(want)) return true;
  return want.length === shape.length && want.every((d, i) => d < 0 || d === shape[i]);
}
