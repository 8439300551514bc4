/* farView.js - what the canvas tells every block and wire at once: whether it draws them far
 * (model/farBlock.js), decided once so that the boxes drawn and the sizes React Flow is given
 * never disagree, and, on a big page, the run's statuses. */
import {createContext, useMemo} from 'react';
import {useStore} from '@xyflow/react';

export const FarView = createContext(false);

/* On a big page, the run's statuses ({block id: status}) reach the blocks here rather than
 * on React Flow's nodes: a batch of run events then changes no node (React Flow adopting 500
 * changed nodes and finding those in view again was most of a batch's time), and only the
 * blocks drawn take the new statuses. null: the statuses are on the nodes (a small page,
 * whose minimap colours them). */
export const RunStatus = createContext(null);

/* React Flow's view as [tx, ty, zoom, width, height], the same array until one of them changes
 * (compared as text: a new array at every store change would redraw the canvases for nothing) */
const viewText = (s) => `${s.transform[0]},${s.transform[1]},${s.transform[2]},${s.width},${s.height}`;
export function useView() {
  const text = useStore(viewText);
  return useMemo(() => text.split(',').map(Number), [text]);
}
