/* Welcome.jsx - the first screen before a page is open: what this is, and the pages to open. */
import React from 'react';
import {groupPages, pageLeaf} from '../model/pageNames.js';

export default function Welcome({pages, onOpen, onNew, ready}) {
  return (
    <div className="welcome">
      <h1>blockflow editor</h1>
      <p>A page is a graph of blocks: tensors flow along the wires, and each block computes
        one of TensorFlow's operations on them (a convolution, its gradients, a loss...). Open
        a page to see it, change an
        attribute and watch the shapes update, then <b>Run</b> it and inspect any block's output.</p>
      {!ready && <p className="err">Connecting to the server…</p>}
      <h2>Open a page</h2>
      <ul className="page-list">
        {groupPages(pages).map(({folder, pages: ps}) => (folder ? (
          <li key={folder} className="page-folder"><span className="folder-name">{folder}/</span>
            <ul>{ps.map((p) => (
              <li key={p}><button onClick={() => onOpen(p)} data-page={p} title={p}>{pageLeaf(p)}</button></li>
            ))}</ul>
          </li>
        ) : ps.map((p) => (
          <li key={p}><button onClick={() => onOpen(p)} data-page={p}>{p}</button></li>
        ))))}
        {!pages.length && <li className="muted">The pages folder is empty.</li>}
      </ul>
      <button className="primary" onClick={onNew}>+ New page</button>
    </div>
  );
}
