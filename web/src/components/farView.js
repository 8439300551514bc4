/* farView.js - whether the canvas draws its blocks far (model/farBlock.js): decided once by
 * the canvas, read by every block and wire, so the boxes drawn and the sizes React Flow is
 * given never disagree. */
import {createContext} from 'react';

export const FarView = createContext(false);
