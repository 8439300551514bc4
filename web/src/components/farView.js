/* farView.js - what the canvas tells every block and wire at once: whether it draws them far
 * (model/farBlock.js), decided once so that the boxes drawn and the sizes React Flow is given
 * never disagree, and, on a big page, the run's statuses. */
import {createContext} from 'react';

export const FarView = createContext(false);

/* On a big page, the run's statuses ({block id: status}) reach the blocks here rather than
 * on React Flow's nodes: a batch of run events then changes no node (React Flow adopting 500
 * changed nodes and finding those in view again was most of a batch's time), and only the
 * blocks drawn take the new statuses. null: the statuses are on the nodes (a small page,
 * whose minimap colours them). */
export const RunStatus = createContext(null);
