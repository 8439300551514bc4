/* Palette.jsx - every block type of the catalogue, grouped and searchable. Drag one onto the
 * canvas, or focus it and press Enter to add it. The ⓘ button shows the block's formula and
 * documentation. */
import React, {memo, useState} from 'react';
import {searchBlocks} from '../model/catalog.js';

/* a long type name wraps at its words (Depthwise|Conv2d|Native|Backprop|Filter), whole:
 * two names that share their first 20 letters must read differently */
function breakable(type) {
  const parts = type.split(/(?<=[a-z0-9])(?=[A-Z])/);
  return parts.map((p, i) => <React.Fragment key={i}>{i > 0 && <wbr />}{p}</React.Fragment>);
}

/* memo: drawn again only when the catalogue or its state changes, not at every edit or run
 * event of the page (the palette holds a hundred buttons) */
function Palette({index, disabled, onAdd}) {
  const [q, setQ] = useState('');
  const [info, setInfo] = useState(null);
  const groups = index ? searchBlocks(index, q) : [];
  return (
    <aside className="palette" aria-label="Blocks">
      <h2>Blocks</h2>
      <input type="search" placeholder="Search blocks…" value={q} aria-label="Search blocks"
             onChange={(e) => setQ(e.target.value)} />
      <p className="hint">{disabled ? 'Open or create a page first.' : 'Drag a block onto the page, or press Enter on it.'}</p>
      <div className="palette-list">
        {groups.map((g) => (
          <section key={g.category}>
            <h3>{g.title}</h3>
            {g.blocks.map((b) => (
              <div key={b.type} className="palette-item-row">
                <button
                  className="palette-item" draggable={!disabled} disabled={disabled}
                  data-type={b.type} title={`${b.type}: ${b.synopsis}`}
                  onDragStart={(e) => {
                    e.dataTransfer.setData('application/blockflow-type', b.type);
                    e.dataTransfer.effectAllowed = 'move';
                  }}
                  onClick={() => onAdd(b.type)}
                >
                  {breakable(b.type)}
                </button>
                <button className="info" aria-label={`About ${b.type}`}
                        aria-expanded={info === b.type}
                        onClick={() => setInfo(info === b.type ? null : b.type)}>?</button>
                {info === b.type && (
                  <div className="doc">
                    <code>{b.synopsis}</code>
                    <p>{b.doc}</p>
                    <p className="muted">inputs: {b.inputs.map((p) => p.name).join(', ') || 'none'};
                      outputs: {b.outputs.map((p) => p.name).join(', ')}</p>
                  </div>
                )}
              </div>
            ))}
          </section>
        ))}
      </div>
    </aside>
  );
}

export default memo(Palette);
