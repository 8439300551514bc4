/*
 * store.js - a small external store: one immutable state object, replaced (never mutated) by
 * set(), and listeners told after each change. React reads it through useSyncExternalStore
 * (useStore.js); everything else (the editor's operations, tests) calls get() and set().
 */

export function createStore(initial) {
  let state = initial;
  const listeners = new Set();
  return {
    get: () => state,
    /** Merge `patch` (an object, or a function of the state returning one) into the state. */
    set(patch) {
      const p = typeof patch === 'function' ? patch(state) : patch;
      if (!p) return;
      let changed = false;
      for (const k of Object.keys(p)) if (state[k] !== p[k]) { changed = true; break; }
      if (!changed) return;
      state = {...state, ...p};
      for (const f of [...listeners]) f();
    },
    subscribe(f) {
      listeners.add(f);
      return () => listeners.delete(f);
    },
  };
}
