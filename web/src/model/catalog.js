/*
 * catalog.js - the block catalogue (GET /api/blocks, printed by `blockflow blocks --json` from
 * the C descriptors) as the editor uses it: a palette grouped by category and searchable, the
 * widget each attribute gets, parsing what a person types into that widget, and the attributes
 * a block starts with when dragged in. Nothing here copies the catalogue: every rule is read
 * from the entries the server sends.
 */

export const DTYPES = ['float16', 'bfloat16', 'float32', 'float64', 'int32', 'int64'];

/* Palette order of the categories the runtime uses; unknown ones follow, sorted. */
const CATEGORY_ORDER = ['nn', 'math', 'array', 'state', 'data', 'distributed', 'generic',
  'check'];
const CATEGORY_TITLES = {
  nn: 'Convolutions, pooling and losses', math: 'Elementwise math',
  array: 'Arrays, MatMul and reductions', state: 'Variables and updates', data: 'Data',
  distributed: 'Across machines (MPI)', generic: 'Constants and inputs', check: 'Checks',
};

export function categoryTitle(c) {
  return CATEGORY_TITLES[c] || (c ? c[0].toUpperCase() + c.slice(1) : 'Other');
}

/** Index a catalogue: {byType: Map(type -> entry), groups: [{category, title, blocks}]}. */
export function indexCatalog(catalog) {
  const byType = new Map();
  const groups = new Map();
  for (const b of (catalog && catalog.blocks) || []) {
    byType.set(b.type, b);
    const c = b.category || 'other';
    if (!groups.has(c)) groups.set(c, []);
    groups.get(c).push(b);
  }
  const rank = (c) => {
    const i = CATEGORY_ORDER.indexOf(c);
    return i < 0 ? CATEGORY_ORDER.length : i;
  };
  const cats = [...groups.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return {
    byType,
    groups: cats.map((c) => ({
      category: c,
      title: categoryTitle(c),
      blocks: groups.get(c).slice().sort((a, b) => a.type.localeCompare(b.type)),
    })),
  };
}

/**
 * The palette groups whose blocks match `query` (case-insensitive words, all of which must
 * appear in the type, category, synopsis or doc). Empty groups are dropped.
 */
export function searchBlocks(index, query) {
  const words = String(query || '').toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return index.groups;
  const hit = (b) => {
    const text = [b.type, b.category, b.synopsis, b.doc].join(' ').toLowerCase();
    return words.every((w) => text.includes(w));
  };
  return index.groups
    .map((g) => ({...g, blocks: g.blocks.filter(hit)}))
    .filter((g) => g.blocks.length);
}

/**
 * The widget of one catalogue attribute: {name, widget, kind, options?, length?, default,
 * hasDefault, required, doc}. widget is one of enum, bool, dtype, int_list, shape, int,
 * float, string, tensor, file (a `path` attribute, a data file of any format, gets string).
 */
export function attrWidget(attr) {
  const w = {
    name: attr.name,
    kind: attr.kind,
    widget: attr.kind,
    required: !!attr.required,
    hasDefault: Object.prototype.hasOwnProperty.call(attr, 'default'),
    default: attr.default,
    doc: attr.doc || '',
  };
  if (attr.kind === 'enum') w.options = (attr.values || []).slice();
  if (attr.kind === 'dtype') w.options = DTYPES.slice();
  if (attr.kind === 'bool') w.options = [true, false];
  if (attr.kind === 'int_list') w.length = attr.length || 0;
  if (attr.kind === 'path') w.widget = 'string'; /* any data file: typed, not picked from .npy */
  return w;
}

/** One widget per attribute of a catalogue entry, in catalogue order. */
export function attrWidgets(entry) {
  return ((entry && entry.attrs) || []).map(attrWidget);
}

function intOf(s) {
  const t = String(s).trim();
  return /^[-+]?\d+$/.test(t) ? Number(t) : null;
}

/** "1, 2,2 1" or "[1,2,2,1]" -> [1,2,2,1]; null when a part is not an integer. */
export function parseIntList(text) {
  const t = String(text).trim().replace(/^[[{(]|[\]})]$/g, '').trim();
  if (!t) return [];
  const parts = t.split(/[\s,]+/).filter(Boolean).map(intOf);
  return parts.some((p) => p === null) ? null : parts;
}

/**
 * Parse what a person typed into widget `w`: {ok: true, value} or {ok: false, error}. An
 * empty field means "back to the default" ({ok: true, value: null}) when there is one.
 * Lists may be given as separate fields (an array of strings) or one text.
 */
export function parseAttrInput(w, input) {
  const blank = input === '' || input === null || input === undefined ||
                (Array.isArray(input) && input.every((s) => String(s).trim() === ''));
  if (blank) {
    if (w.required) return {ok: false, error: `${w.name} is required`};
    return {ok: true, value: null};
  }
  switch (w.widget) {
    case 'enum':
    case 'dtype':
      if (!w.options.includes(input)) {
        return {ok: false, error: `${w.name} is one of ${w.options.join(', ')}`};
      }
      return {ok: true, value: input};
    case 'bool':
      if (input === true || input === 'true') return {ok: true, value: true};
      if (input === false || input === 'false') return {ok: true, value: false};
      return {ok: false, error: `${w.name} is true or false`};
    case 'int': {
      const v = intOf(input);
      return v === null ? {ok: false, error: `${w.name} is a whole number`} : {ok: true, value: v};
    }
    case 'float': {
      const v = Number(String(input).trim());
      return String(input).trim() === '' || !Number.isFinite(v)
        ? {ok: false, error: `${w.name} is a number`}
        : {ok: true, value: v};
    }
    case 'int_list':
    case 'shape': {
      const list = Array.isArray(input) ? input.map(intOf) : parseIntList(input);
      if (!list || list.some((v) => v === null)) {
        return {ok: false, error: `${w.name} is a list of whole numbers`};
      }
      if (w.widget === 'int_list' && w.length && list.length && list.length !== w.length) {
        return {ok: false, error: `${w.name} needs ${w.length} numbers, got ${list.length}`};
      }
      if (w.widget === 'shape' && list.some((v) => v < -1)) {
        return {ok: false, error: `${w.name}: each dimension is >= 0 (or -1: unknown)`};
      }
      return {ok: true, value: list};
    }
    case 'tensor': {
      if (typeof input !== 'string') return {ok: true, value: input};
      const ok = (v) => typeof v === 'number' ||
                        (Array.isArray(v) && v.every(ok));
      for (const text of [input.trim(), `[${input.trim()}]`]) {
        try {
          const v = JSON.parse(text);
          if (ok(v)) return {ok: true, value: v};
        } catch (e) { /* try the next reading */ }
      }
      return {ok: false, error: `${w.name} is a number or a (nested) list of numbers`};
    }
    default:
      return {ok: true, value: String(input)};
  }
}

/** The text a widget shows for a value (lists as "1, 2, 2, 1"). */
export function formatAttrValue(w, value) {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) {
    return w.widget === 'tensor' ? JSON.stringify(value) : value.join(', ');
  }
  return String(value);
}

/**
 * The attributes a block starts with when dragged from the palette: every required
 * attribute gets a value the block accepts (lists of ones of the right length, the first
 * enum value, a small shape), so the add_block edit is never refused; the rest stay at
 * their defaults (absent from the page).
 */
export function initialAttrs(entry) {
  const attrs = {};
  for (const a of (entry && entry.attrs) || []) {
    if (!a.required) continue;
    switch (a.kind) {
      case 'int_list': attrs[a.name] = new Array(a.length || 4).fill(1); break;
      case 'enum': attrs[a.name] = (a.values || [])[0]; break;
      case 'shape': attrs[a.name] = [1, 5, 5, 1]; break;
      case 'dtype': attrs[a.name] = 'float32'; break;
      case 'bool': attrs[a.name] = false; break;
      case 'int': attrs[a.name] = 0; break;
      case 'float': attrs[a.name] = 0; break;
      case 'tensor': attrs[a.name] = 0; break;
      default: attrs[a.name] = '';
    }
  }
  if (entry && entry.type === 'Const' && !Object.keys(attrs).length) {
    attrs.dtype = 'float32';
    attrs.shape = [1, 5, 5, 1];
    attrs.value = 1;
  }
  if (entry && entry.type === 'Variable') { /* a 3x3 filter, drawn as Keras would */
    attrs.shape = [3, 3, 1, 1];
    attrs.initializer = 'glorot_uniform';
  }
  return attrs;
}

/** A fresh block id for `type` not used by `taken` (a Set): "conv2d", "conv2d_2", ... */
export function freshId(type, taken) {
  const base = String(type).replace(/([a-z])([A-Z])/g, '$1_$2')
    .replace(/([A-Z0-9])([A-Z][a-z])/g, '$1_$2').toLowerCase()
    .replace(/[^a-z0-9_]/g, '').replace(/^_+/, '') || 'block';
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}
