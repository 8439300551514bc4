/*
 * pageNames.js - the names of pages and files in the pages folder, as `blockflow serve` names
 * them (apps/server/store.c): a page may lie in subfolders, "teach/conv_grad" (at most four
 * segments of letters, digits, '.', '_' and '-', none starting with '.', 100 characters in
 * all; in a subfolder the last segment is not one of the API's action words). The page list
 * groups pages by folder, and a `file` attribute names files relative to its page's folder.
 */

export const MAX_DEPTH = 4;
/* the words the server's API puts after a page name (store.c's api_actions) */
const ACTIONS = new Set(['rename', 'duplicate', 'check', 'edits', 'run', 'explain', 'gradcheck',
                         'grad', 'open', 'close', 'update-copy', 'train', 'backward',
                         'check_backward']);
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** Why `name` cannot name a page ('' when it can). */
export function pageNameProblem(name) {
  if (!name) return 'a page needs a name';
  if (name.length > 100) return 'at most 100 characters';
  const segs = name.split('/');
  if (segs.length > MAX_DEPTH) return `at most ${MAX_DEPTH - 1} folders deep`;
  if (segs.some((s) => !SEGMENT.test(s))) {
    return "letters, digits, '.', '_' and '-', not starting with '.'; '/' between folders";
  }
  if (segs.length > 1 && ACTIONS.has(segs[segs.length - 1])) {
    return `a page in a folder cannot be named "${segs[segs.length - 1]}"`;
  }
  return '';
}

/** The folder of page `name` ('' for the top of the pages folder). */
export function pageFolder(name) {
  const i = (name || '').lastIndexOf('/');
  return i < 0 ? '' : name.slice(0, i);
}

/** The pages grouped by folder: [{folder, pages}], the top folder first, then by name. */
export function groupPages(pages) {
  const by = new Map();
  for (const p of pages) {
    const f = pageFolder(p);
    if (!by.has(f)) by.set(f, []);
    by.get(f).push(p);
  }
  return [...by.keys()].sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0))
    .map((folder) => ({folder, pages: by.get(folder)}));
}

/** The name of page `name` without its folder. */
export function pageLeaf(name) {
  return (name || '').slice(pageFolder(name).length ? pageFolder(name).length + 1 : 0);
}

/**
 * The files of the pages folder (`files`, named from its top, "data/x.npy") that a `file`
 * attribute of page `pageName` can name, as it names them: relative to the page's folder.
 */
export function filesNear(pageName, files) {
  const f = pageFolder(pageName);
  if (!f) return files;
  const pre = f + '/';
  return files.filter((x) => x.startsWith(pre)).map((x) => x.slice(pre.length));
}
