/*
 * api.js - the HTTP API of `blockflow serve` (README "Serve"), as the editor calls it. The
 * token travels in the HttpOnly cookie that opening /?token=... set, so no script ever holds
 * it; X-Blockflow-Client names this tab's WebSocket so run events come here only.
 */

/**
 * The folder the editor was served from: the server serves it under a random path of its
 * start (/s/RANDOM/) and scopes its login cookie to that path, so every call goes there too.
 * '/api/x' -> '/s/RANDOM/api/x' (or '/api/x' when served from '/').
 */
export function served(path, pathname = (typeof location === 'undefined' ? '/' : location.pathname)) {
  const base = pathname.replace(/[^/]*$/, '');
  if (base !== '/' && path.startsWith(base)) return path; /* already there */
  return base + path.replace(/^\//, '');
}

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || '';
    this.body = body || {};
  }
}

export class Api {
  constructor() {
    this.client = '';
  }

  async req(method, path, body) {
    return (await this.reqFull(method, path, body)).data;
  }

  /** The answer as {status, data}: for calls whose 200 and 202 mean different things. */
  async reqFull(method, path, body) {
    const headers = {};
    if (this.client) headers['X-Blockflow-Client'] = this.client;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(served(path), {
      method, headers, credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const type = r.headers.get('content-type') || '';
    const data = type.startsWith('application/json') ? await r.json() : await r.text();
    if (!r.ok) throw new ApiError(r.status, typeof data === 'object' ? data : {});
    return {status: r.status, data};
  }

  page(name) { return `/api/pages/${encodeURIComponent(name)}`; }

  blocks() { return this.req('GET', '/api/blocks'); }
  health() { return this.req('GET', '/api/health'); }
  pages() { return this.req('GET', '/api/pages'); }
  files() { return this.req('GET', '/api/files'); }
  /** What .npy file `path` of the pages folder holds: {file, dtype, shape, bytes}. */
  fileInfo(path) { return this.req('GET', `/api/files/${path.split('/').map(encodeURIComponent).join('/')}`); }
  getPage(name, session = false) {
    return this.req('GET', this.page(name) + (session ? '?view=session' : ''));
  }
  putPage(name, page, revision) { return this.req('PUT', this.page(name), {page, revision}); }
  deletePage(name, revision) {
    return this.req('DELETE', this.page(name) + (revision ? `?revision=${revision}` : ''));
  }
  rename(name, to) { return this.req('POST', this.page(name) + '/rename', {to}); }
  duplicate(name, to) { return this.req('POST', this.page(name) + '/duplicate', {to}); }
  open(name) { return this.req('POST', this.page(name) + '/open'); }
  close(name) { return this.req('POST', this.page(name) + '/close'); }
  edits(name, edits) { return this.req('POST', this.page(name) + '/edits', edits); }
  check(name, page) { return this.req('POST', this.page(name) + '/check', page); }
  /** Run the page: `fetchIds` (null: its outputs), `feeds` {placeholder id: base64 .npy, or
   * {file: "data/x.npy"}, a .npy of the pages folder}. */
  run(name, fetchIds, feeds) {
    const body = {};
    if (fetchIds) body.fetch = fetchIds;
    if (feeds && Object.keys(feeds).length) body.feeds = feeds;
    return this.req('POST', this.page(name) + '/run', body);
  }
  cancel(runId) { return this.req('POST', `/api/runs/${runId}/cancel`); }
  /* the classroom (blockflow serve --classroom) */
  me() { return this.req('GET', '/api/class/me'); }
  join(name) { return this.req('POST', '/api/class/join', {name}); }
  roster() { return this.req('GET', '/api/class/roster'); }
  studentPage(student, name) {
    return this.req('GET', `/api/class/students/${encodeURIComponent(student)}/pages/${encodeURIComponent(name)}`);
  }
  updateCopy(name) { return this.req('POST', this.page(name) + '/update-copy'); }
  tensorUrl(runId, spec, view, slice) {
    let u = `/api/runs/${runId}/tensors/${encodeURIComponent(spec)}?view=${view}`;
    if (slice !== undefined) u += `&slice=${encodeURIComponent(slice)}`;
    return served(u); /* also a link's href (the .npy download): under the served folder */
  }
  tensor(runId, spec, view = 'summary', slice) {
    return this.req('GET', this.tensorUrl(runId, spec, view, slice));
  }
}

/**
 * The run events WebSocket (GET /ws?batch=1): calls onEvent(json) for each event and onHello(client)
 * when the server names this tab; reconnects after a second when the socket drops.
 */
export function connectEvents({onHello, onEvent, onState}) {
  let ws = null;
  let stopped = false;
  const open = () => {
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    /* ?batch=1: each frame holds an array of events (a run's thousand events come in a few
     * frames, not a thousand: each frame costs the browser a task) */
    ws = new WebSocket(`${proto}://${location.host}${served('/ws')}?batch=1`);
    ws.onopen = () => onState && onState('open');
    ws.onmessage = (m) => {
      let evs;
      try { evs = JSON.parse(m.data); } catch (e) { return; }
      for (const ev of Array.isArray(evs) ? evs : [evs]) {
        if (ev.type === 'hello') onHello(ev.client);
        else onEvent(ev);
      }
    };
    ws.onclose = () => {
      onState && onState('closed');
      if (!stopped) setTimeout(open, 1000);
    };
  };
  open();
  const stop = () => { stopped = true; if (ws) ws.close(); };
  /* send a message on the socket when it is open ({"type": "view", ...}); false otherwise */
  stop.send = (msg) => {
    if (!ws || ws.readyState !== 1) return false;
    ws.send(JSON.stringify(msg));
    return true;
  };
  return stop;
}
