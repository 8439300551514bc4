/*
 * classroom.js - the editor's side of `blockflow serve --classroom` (README "Classroom").
 *
 * Who this tab is (GET /api/class/me): the teacher, a student (by name), or someone holding
 * the class URL who must first join with a name. The state lives in the editor's store under
 * `classroom`: {classroom, role, name, copies, roster, teacherSaved, looking}.
 *
 * Live pages: the tab tells the server which page it shows ({"type": "view", page, space}, the
 * space being the student's name once they have a copy of it), and the server sends every edit
 * of that page ("page_edited", from another tab or the teacher) and every save of the
 * teacher's page ("teacher_page_saved"). An edit from elsewhere reloads the session's page, so
 * two tabs on one page stay in step; a teacher's save offers a student "update my copy".
 */

export const CLASS_INITIAL = {
  classroom: false, role: 'teacher', name: '', copies: [], roster: null,
  teacherSaved: null, looking: null,
};

export class Classroom {
  constructor(editor, {setInterval: every = globalThis.setInterval,
                       clearInterval: stop = globalThis.clearInterval,
                       navigate = (url) => globalThis.location.assign(url)} = {}) {
    this.ed = editor;
    /* called as plain functions: a browser's setInterval refuses another `this` */
    this.every = (f, ms) => every.call(globalThis, f, ms);
    this.stop = (t) => stop.call(globalThis, t);
    this.navigate = navigate;
    this.timer = null;
    this.lastView = null;
    this.fetchingCopies = false;
    editor.set({classroom: {...CLASS_INITIAL}});
    editor.onOtherEvent = (ev) => this.onEvent(ev);
    editor.onConnected = () => { this.lastView = null; this.sendView(); };
    this.unsubscribe = editor.store.subscribe(() => this.onState());
  }

  get state() { return this.ed.state.classroom; }
  patch(p) { this.ed.set((s) => ({classroom: {...s.classroom, ...p}})); }

  async start() {
    try {
      const me = await this.ed.api.me();
      this.patch({classroom: !!me.classroom, role: me.role, name: me.name || ''});
      if (me.role === 'student') await this.refreshCopies();
      if (me.classroom && me.role === 'teacher') {
        await this.refreshRoster();
        this.timer = this.every(() => this.refreshRoster(), 3000);
      }
    } catch (e) {
      /* an older server or no token: no classroom */
    }
  }

  close() {
    if (this.timer) this.stop(this.timer);
    this.unsubscribe();
  }

  async refreshRoster() {
    try {
      this.patch({roster: (await this.ed.api.roster()).students});
    } catch (e) { /* shown again at the next poll */ }
  }

  async refreshCopies() {
    const got = await this.ed.api.pages();
    this.patch({copies: got.copies || []});
    this.sendView();
  }

  /** The space of the open page for this tab: the student's own copy, else the teacher's. */
  space(doc = this.ed.state.doc) {
    const c = this.state;
    return c.role === 'student' && doc && c.copies.includes(doc.name) ? c.name : '';
  }

  sendView() {
    const doc = this.ed.state.doc;
    const view = {type: 'view', page: doc ? doc.name : '', space: this.space(doc)};
    const key = JSON.stringify(view);
    if (key === this.lastView || !this.ed.events || !this.ed.events.send) return;
    if (this.ed.events.send(view)) this.lastView = key;
  }

  /** After every state change: the page shown, and a student's first edit (a new copy). */
  onState() {
    const st = this.ed.state;
    const c = st.classroom;
    if (!c) return;
    /* the class URL may only join: the pages list's 403 is not news, the join form says it */
    if (c.role === 'joining' && st.message && /^join the class first/.test(st.message.text)) {
      this.ed.dismissMessage();
      return;
    }
    this.sendView();
    if (c.role === 'student' && st.doc && st.dirty && !c.copies.includes(st.doc.name) &&
        !this.fetchingCopies) {
      this.fetchingCopies = true;
      this.refreshCopies().finally(() => { this.fetchingCopies = false; });
    }
  }

  /** The classroom's events; true when handled (not a run event). */
  onEvent(ev) {
    const doc = this.ed.state.doc;
    switch (ev.type) {
      case 'viewing': case 'page_saved':
        return true;
      case 'page_edited':
        if (doc && ev.page === doc.name && ev.by !== this.ed.api.client) this.ed.resync();
        return true;
      case 'teacher_page_saved':
        if (this.state.role === 'student' && doc && ev.page === doc.name) {
          this.patch({teacherSaved: ev.page});
        } else if (doc && ev.page === doc.name && ev.by !== this.ed.api.client &&
                   this.space(doc) === '') {
          this.ed.resync();
        }
        return true;
      default:
        return false;
    }
  }

  /** "Update my copy": the student's copy becomes the teacher's page as saved now. */
  async updateCopy() {
    const doc = this.ed.state.doc;
    if (!doc) return;
    try {
      await this.ed.api.updateCopy(doc.name);
      this.patch({teacherSaved: null});
      await this.ed.openPage(doc.name);
      this.ed.say('info', `Your copy of ${doc.name} is now the teacher's page.`);
    } catch (e) {
      this.ed.say('error', e.message);
    }
  }

  /** Join the class with a name; the tab moves to the personal URL the server gives. */
  async join(name) {
    try {
      const got = await this.ed.api.join(name.trim());
      this.navigate(got.url);
    } catch (e) {
      this.ed.say('error', e.message);
    }
  }

  /** The teacher looks over a student's shoulder: their copy of `page`, read-only. */
  async look(student, page) {
    try {
      const got = await this.ed.api.studentPage(student, page);
      this.patch({looking: {student, page, blocks: (got.page && got.page.blocks) || []}});
    } catch (e) {
      this.ed.say('error', e.message);
    }
  }

  stopLooking() { this.patch({looking: null}); }
}
