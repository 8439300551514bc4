/*
 * history.js - undo and redo over page snapshots. Each step stores the page before and after
 * a change; undoing sends diffPages(after, before) to the server, so the server's session and
 * the editor never disagree about what an undo did. Steps with the same `key` arriving within
 * `mergeMs` of each other merge (typing digits into one attribute, dragging one block), so
 * one Ctrl+Z undoes one gesture.
 */

export class History {
  constructor({limit = 200, mergeMs = 800} = {}) {
    this.limit = limit;
    this.mergeMs = mergeMs;
    this.done = [];
    this.undone = [];
  }

  /** Record that the page went from `before` to `after`; `key` merges repeated gestures.
   * `selection`: the selected block ids before the change (an undo selects them again). */
  push(before, after, key = null, now = Date.now(), selection = null) {
    const last = this.done[this.done.length - 1];
    if (key && last && last.key === key && now - last.at <= this.mergeMs) {
      last.after = after;
      last.at = now;
    } else {
      const step = {before, after, key, at: now};
      if (selection) step.selection = selection;
      this.done.push(step);
      if (this.done.length > this.limit) this.done.shift();
    }
    this.undone = [];
  }

  canUndo() { return this.done.length > 0; }
  canRedo() { return this.undone.length > 0; }

  /** The step to undo ({before, after}), moved to the redo list; null when none. */
  undo() {
    const s = this.done.pop();
    if (!s) return null;
    this.undone.push(s);
    return s;
  }

  /** The step to redo, moved back to the undo list; null when none. */
  redo() {
    const s = this.undone.pop();
    if (!s) return null;
    s.at = 0; /* never merge into a redone step */
    this.done.push(s);
    return s;
  }

  clear() {
    this.done = [];
    this.undone = [];
  }
}
