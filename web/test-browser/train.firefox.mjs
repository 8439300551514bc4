// train.firefox.mjs - live training in Debian's Firefox ESR (puppeteer-core over WebDriver
// BiDi), on a real `blockflow serve` with examples/train/learn_a_filter.json: open the page,
// ▶ Play, the step count grows and the plot gets points, ⏸ Pause, the count stays put, ⏭ adds
// one step. Screenshots to BF_SCREENSHOTS (default build/train-firefox-screenshots). Exit 77
// (ctest: skipped) without Firefox.
import {cpSync, mkdirSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {makeShot, repo, requireBrowser, screenshotDir, startServer, tempPages} from './harness.mjs';
import {FIREFOX, launchFirefox} from './firefox.mjs';

const SHOTS = screenshotDir('train-firefox-screenshots');
const WAIT = 30000;
requireBrowser(FIREFOX, 'firefox-esr');
const {tmp, pages} = tempPages('bf-train-ff-');
const profile = join(tmp, 'profile');
mkdirSync(profile);
cpSync(join(repo, 'examples/train/learn_a_filter.json'), join(pages, 'learn_a_filter.json'));
const token = 'train-firefox-token-0123';
const {server, port, stderr: serverErr} = await startServer(pages, token);

let browser;
let page;
const consoleErrors = [];
let failed = false;
try {
  browser = await launchFirefox(profile);
  page = (await browser.pages())[0] || await browser.newPage();
  await page.setViewport({width: 1280, height: 720});
  page.setDefaultTimeout(WAIT);
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const shot = makeShot(page, SHOTS);
  const tid = (id) => `[data-testid="${id}"]`;
  const steps = () => page.$eval(tid('train-step-count'), (e) => Number(e.textContent));
  const click = async (id) => (await page.waitForSelector(tid(id))).click();

  await page.goto(`http://127.0.0.1:${port}/?token=${token}`);
  await (await page.waitForSelector('.page-list button[data-page="learn_a_filter"]')).click();
  await page.waitForSelector(tid('block-w'));
  await click('training-tab');
  await page.waitForSelector(tid('tile-w-0-0'));
  await click('train-play');
  await page.waitForSelector(tid('train-pause'));
  await page.waitForFunction((s) => Number(document.querySelector(s).textContent) >= 20,
                             {polling: 50, timeout: WAIT}, tid('train-step-count'));
  await click('train-pause');
  await page.waitForSelector(tid('train-play'));
  const paused = await steps();
  const points = await page.$eval(tid('metrics'), (e) => Number(e.dataset.points));
  assert.ok(points > 3, `the plot has points (${points})`);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await steps(), paused, 'the step count stays put while paused');
  await shot('firefox-paused');
  await click('train-step');
  await page.waitForFunction((s, n) => Number(document.querySelector(s).textContent) === n,
                             {polling: 50, timeout: WAIT}, tid('train-step-count'), paused + 1);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await steps(), paused + 1, '⏭ adds exactly one step');
  await shot('firefox-one-more-step');
  assert.deepEqual(consoleErrors, [], 'no errors in the browser console');
  console.log('train.firefox: all checks passed');
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  if (page) await page.screenshot({path: join(SHOTS, 'failure.png')}).catch(() => {});
  if (consoleErrors.length) console.error('browser console:', consoleErrors.join('\n'));
  if (serverErr()) console.error('server stderr:', serverErr().slice(-5000));
} finally {
  if (browser) await browser.close().catch(() => {});
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
