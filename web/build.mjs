// build.mjs - bundles the editor into dist/ with esbuild: dist/index.html and
// dist/assets/main.{js,css}. `node build.mjs` (make editor runs it after npm ci).
import {build} from 'esbuild';
import {copyFileSync, mkdirSync, rmSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
rmSync(out, {recursive: true, force: true});
mkdirSync(join(out, 'assets'), {recursive: true});
await build({
  entryPoints: {main: join(here, 'src/main.jsx')},
  bundle: true,
  minify: !process.env.BF_NO_MINIFY, /* BF_NO_MINIFY=1: readable names for a profile */
  sourcemap: false,
  target: ['chrome100', 'firefox100'],
  format: 'iife',
  jsx: 'automatic',
  outdir: join(out, 'assets'),
  define: {'process.env.NODE_ENV': '"production"'},
  logLevel: 'warning',
});
copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
console.log('editor built into ' + out);
