/* Toast.jsx - the last message, at the top of the canvas (inside the canvas's column: clear
 * of the header, the training bar and its metrics, the panel under it and its colour scale). It goes away by itself: after 4 s (an error after 10 s), later while the
 * pointer rests on it, at once with its ×. */
import React, {useEffect, useState} from 'react';

export const TOAST_MS = {info: 4000, ok: 4000, error: 10000};

export default function Toast({message, onDismiss}) {
  const [hover, setHover] = useState(false);
  useEffect(() => {
    if (!message || hover) return undefined;
    const t = setTimeout(onDismiss, TOAST_MS[message.kind] || 4000);
    return () => clearTimeout(t);
  }, [message, hover, onDismiss]);
  if (!message) return null;
  return (
    <div className={`toast toast-${message.kind}`} role="status" aria-live="polite"
         data-testid="message" onMouseEnter={() => setHover(true)}
         onMouseLeave={() => setHover(false)}>
      {message.text}
      <button className="link" onClick={onDismiss} aria-label="Dismiss">×</button>
    </div>
  );
}
