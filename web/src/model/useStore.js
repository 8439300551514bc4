/* useStore.js - a component's view of a store (store.js): re-rendered when the selected part
 * changes. `select` must return a part of the state (or a primitive), not a new object. */
import {useSyncExternalStore} from 'react';

export function useStore(store, select = (s) => s) {
  return useSyncExternalStore(store.subscribe, () => select(store.get()));
}
