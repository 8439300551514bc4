/* main.jsx - mounts the editor. The token in the address bar (?token=...) has already set
 * the cookie when the server answered this page, so it is removed from the address bar. */
import React from 'react';
import {createRoot} from 'react-dom/client';
import App from './components/App.jsx';
import '@xyflow/react/dist/style.css';
import './styles.css';

if (new URLSearchParams(location.search).has('token')) {
  const u = new URL(location.href);
  u.searchParams.delete('token');
  history.replaceState(null, '', u.pathname + u.search + u.hash);
}
createRoot(document.getElementById('root')).render(<App />);
