// classroom.browser.mjs - `blockflow serve --classroom` in three browser contexts: a teacher and
// two students (ana, bob), in Debian's Chromium driven by playwright-core. The students join
// with the class URL and a name typed on the keyboard; the teacher's roster shows them
// connected; ana deletes a block with the Delete key and saves with Ctrl+S, which writes her
// own copy (.students/ana/teach.json) and leaves the teacher's page as it was; the teacher
// deletes a block and bob, who reads the teacher's page, sees it go without reloading; the
// teacher saves, ana is told and clicks "Update my copy", and her copy on disk is the teacher's
// page; the teacher looks at ana's copy from the roster. Screenshots at 1280x720 (and the
// teacher at 1920x1080) go to BF_SCREENSHOTS (default build/classroom-screenshots). Exit 77
// (ctest: skipped) without Chromium.
import {spawn} from 'node:child_process';
import {readFileSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {BINARY, CHROMIUM, WEB, launchChromium, makeShot, requireBrowser, screenshotDir,
        tempPages} from './harness.mjs';

const SHOTS = screenshotDir('classroom-screenshots');
requireBrowser(CHROMIUM, 'chromium');

const {tmp, pages} = tempPages('bf-class-');
const teachPage = {
  format: 'blockflow.page', version: 1, name: 'teach',
  description: 'a 3x3 convolution of an 8x8 image',
  blocks: [
    {id: 'x', type: 'RandomUniform', attrs: {shape: [1, 8, 8, 1], seed: 1}},
    {id: 'w', type: 'RandomNormal', attrs: {shape: [3, 3, 1, 2], seed: 2}},
    {id: 'y', type: 'Conv2D', inputs: {input: 'x', filter: 'w'},
     attrs: {strides: [1, 1, 1, 1], padding: 'SAME'}},
    {id: 'z', type: 'Relu', inputs: {features: 'y'}},
  ],
  outputs: ['z'],
};
writeFileSync(join(pages, 'teach.json'), JSON.stringify(teachPage));
const teacherFile = () => JSON.parse(readFileSync(join(pages, 'teach.json'), 'utf8'));
const copyFile = (who) => JSON.parse(readFileSync(join(pages, '.students', who, 'teach.json'),
                                                  'utf8'));
const ids = (p) => p.blocks.map((b) => b.id).sort().join(',');

/* the server, and its two URLs (the teacher's, the class's) from what it prints */
const server = spawn(BINARY, ['serve', '--listen', '127.0.0.1:0', '--pages', pages, '--web', WEB,
                              '--classroom', '--threads', '2'], {stdio: ['ignore', 'pipe', 'pipe']});
let serverErr = '';
server.stderr.on('data', (d) => { serverErr += d; });
const [teacherUrl, classUrl] = await new Promise((ok, fail) => {
  let out = '';
  const t = setTimeout(() => fail(new Error('server did not start: ' + serverErr)), 30000);
  server.stdout.on('data', (d) => {
    out += d;
    const urls = out.match(/http:\/\/\S+\?token=[0-9a-f]+/g);
    if (urls && urls.length >= 2) { clearTimeout(t); ok(urls); }
  });
});

const until = async (what, f, ms = 20000) => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

const browser = await launchChromium();
const errors = [];
async function person(name) {
  const ctx = await browser.newContext({viewport: {width: 1280, height: 720}});
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(`${name}: ${e}`));
  return {page, shot: makeShot(page, SHOTS)};
}

let failed = false;
try {
  const teacher = await person('teacher');
  const ana = await person('ana');
  const bob = await person('bob');

  /* the teacher opens the page */
  await teacher.page.goto(teacherUrl);
  await teacher.page.getByTestId('role').filter({hasText: 'Teacher'}).waitFor();
  await teacher.page.getByRole('button', {name: 'teach'}).click();
  await teacher.page.getByTestId('block-w').waitFor();

  /* two students join with the class URL, typing their names */
  for (const [s, name] of [[ana, 'ana'], [bob, 'bob']]) {
    await s.page.goto(classUrl);
    await s.page.getByTestId('join-name').click();
    await s.page.keyboard.type(name);
    await s.shot(`${name}-joins`);
    await s.page.getByTestId('join').click();
    await s.page.getByTestId('role').filter({hasText: `Student: ${name}`}).waitFor();
    assert.ok(!s.page.url().includes(classUrl.split('token=')[1]), 'a personal URL, not the class one');
    await s.page.getByRole('button', {name: 'teach'}).click();
    await s.page.getByTestId('block-w').waitFor();
    assert.match(await s.page.getByTestId('space').innerText(), /The teacher's teach/);
  }

  /* the roster shows both, connected, on the page */
  await until('roster', async () =>
    (await teacher.page.locator('[data-testid="student-ana"] .dot.on').count()) === 1 &&
    (await teacher.page.locator('[data-testid="student-bob"] .dot.on').count()) === 1);
  await teacher.shot('teacher-roster');

  /* ana deletes z with the Delete key and saves: her own copy, the teacher's page unchanged */
  await ana.page.getByTestId('block-z').click();
  await ana.page.keyboard.press('Delete');
  await until('z gone for ana', async () => (await ana.page.getByTestId('block-z').count()) === 0);
  await until('ana has a copy', async () =>
    /Your copy of teach/.test(await ana.page.getByTestId('space').innerText()));
  await ana.page.keyboard.press('Control+s');
  await until('ana saved', async () => {
    try { return ids(copyFile('ana')) === 'w,x,y'; } catch { return false; }
  });
  assert.equal(ids(teacherFile()), 'w,x,y,z', "the teacher's page is unchanged");
  await ana.shot('ana-own-copy');

  /* the teacher deletes z: bob, who reads the teacher's page, sees it go at once */
  await teacher.page.getByTestId('block-z').click();
  await teacher.page.keyboard.press('Delete');
  await until('z gone for bob (live)', async () =>
    (await bob.page.getByTestId('block-z').count()) === 0);
  await bob.shot('bob-sees-teacher-edit');

  /* the teacher also removes the output and saves; ana is told and updates her copy */
  await teacher.page.getByTestId('block-y').click();
  await teacher.page.keyboard.press('Delete');
  await until('y gone for bob', async () => (await bob.page.getByTestId('block-y').count()) === 0);
  await teacher.page.keyboard.press('Control+s');
  await until('teacher saved', async () => ids(teacherFile()) === 'w,x');
  await ana.page.getByTestId('update-copy').waitFor();
  await ana.shot('ana-told-teacher-changed');
  await ana.page.getByTestId('update-copy').click();
  await until('ana updated', async () => ids(copyFile('ana')) === 'w,x');
  await until('ana sees it', async () => (await ana.page.getByTestId('block-y').count()) === 0);
  assert.equal(await ana.page.getByTestId('update-copy').count(), 0);

  /* the teacher looks over ana's shoulder */
  await teacher.page.getByTestId('look-ana-teach').click();
  await until('looking', async () =>
    /ana's teach/.test(await teacher.page.getByTestId('looking').innerText()));
  await teacher.shot('teacher-looks-at-ana');
  await teacher.page.setViewportSize({width: 1920, height: 1080});
  await teacher.shot('teacher-1920');
  assert.deepEqual(errors, [], 'no page errors');
  console.log('classroom browser test: ok');
} catch (e) {
  failed = true;
  console.error(e);
  console.error('server stderr:', serverErr);
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
