// import.browser.mjs - "Import enuSpace page" as a person uses it, in Debian's Chromium
// (playwright-core) against a real `blockflow serve` on a temporary pages folder:
//   - the top bar's "Import enuSpace…" opens the dialog (a click; Escape closes it);
//   - choosing the XOR sample's .svg and its .dat in the file chooser offers the name "Xor";
//     Import shows the report (46 blocks read, Subtract → Sub, the outputs) and writes
//     Xor.json into the pages folder (checked on disk);
//   - "Open Xor" opens it: its blocks are on the canvas; after a reload it is in the page list;
//   - a page with an unsupported block (Unstack, read at output[3]) shows the block, what it
//     feeds and why, and writes
//     nothing; with "Write a Placeholder" checked it imports.
// Screenshots at 1280x720 and 1920x1080 go to BF_SCREENSHOTS (default
// build/import-screenshots). Waits are for conditions. Exit 77 (skipped) without Chromium.
import {existsSync, readFileSync, readdirSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import assert from 'node:assert/strict';
import {CHROMIUM, launchChromium, makeShot, repo, requireBrowser, screenshotDir, startServer,
        tempPages} from './harness.mjs';

const SHOTS = screenshotDir('import-screenshots');
requireBrowser(CHROMIUM, 'chromium');

const {tmp, pages} = tempPages('bf-import-');
const xorSvg = join(repo, 'tests/data/enuspace/1.5/Xor.svg');
const xorDat = join(repo, 'tests/data/enuspace/1.5/Xor.dat');
/* a page whose Unstack has no blockflow block, wired on from its output[3] */
const grads = join(tmp, 'grads.svg');
writeFileSync(grads, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(
  '<?xml version="1.0" encoding="UTF-16"?>\n<svg id="r" enuspace-version="3.0.3.0">\n'
  + '<use id="g" type="tensorflow" xlink:href="#Unstack"></use>\n'
  + '<use id="n" type="tensorflow" transform="translate(300,100)" xlink:href="#Negate"></use>\n'
  + '<polyline><pg-link from-id="g" param-from="output[3]" to-id="n" param-to="x">'
  + '</pg-link></polyline>\n</svg>\n', 'utf16le')]));

const token = 'import-browser-token-0123';
const {server, port, stderr: serverErr} = await startServer(pages, token);
const browser = await launchChromium();
let failed = false;
try {
  for (const [w, h] of [[1280, 720], [1920, 1080]]) {
    const page = await browser.newPage({viewport: {width: w, height: h}});
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      /* the 422 of the unsupported page is expected; the browser logs it */
      if (m.type() === 'error' && !/status of 422/.test(m.text())) errors.push(m.text());
    });
    const shot = makeShot(page, SHOTS);
    const tag = `${w}x${h}`;
    const name = w === 1280 ? 'Xor' : 'Xor_big';
    await page.goto(`http://127.0.0.1:${port}/?token=${token}`);
    const importButton = page.locator('header.topbar').getByRole('button', {name: 'Import enuSpace…'});
    await importButton.click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('heading', {name: 'Import enuSpace page'}).waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({state: 'detached'});
    await importButton.click();
    /* the file chooser, as a person picks the two files */
    const chooser = page.waitForEvent('filechooser');
    await dialog.getByTestId('import-files').click();
    await (await chooser).setFiles([xorSvg, xorDat]);
    await dialog.getByTestId('import-picked').filter({hasText: 'Page: Xor.svg, values: Xor.dat'}).waitFor();
    const nameField = dialog.getByLabel('Imported page name');
    assert.equal(await nameField.inputValue(), 'Xor');
    await nameField.fill(name);
    await shot(`${tag}-chosen`);
    await dialog.getByRole('button', {name: 'Import'}).click();
    const report = dialog.getByTestId('import-report');
    await report.filter({hasText: `Imported ${name}`}).waitFor();
    const text = await report.innerText();
    assert.match(text, /46 blocks and 68 wires read \(SVG page, enuSpace 3\.0\.2\.0\)/);
    assert.match(text, /Subtract → Sub/);
    assert.match(text, /Outputs: /);
    await shot(`${tag}-report`);
    assert.ok(existsSync(join(pages, `${name}.json`)), 'the page is in the pages folder');
    const onDisk = JSON.parse(readFileSync(join(pages, `${name}.json`), 'utf8'));
    assert.equal(onDisk.blocks.find((b) => b.id === 'ID_XOR_MEAN').type, 'Mean');
    await dialog.getByRole('button', {name: `Open ${name}`}).click();
    await page.getByTestId('docname').filter({hasText: `${name}.json`}).waitFor();
    await page.getByTestId('block-ID_XOR_MEAN').waitFor();
    await shot(`${tag}-opened`);
    await page.reload();
    /* the list comes from the server after the reload: wait for it, then check */
    await page.getByLabel('Open a page').locator(`option[value="${name}"]`)
      .waitFor({state: 'attached'});
    const options = await page.getByLabel('Open a page').locator('option')
      .evaluateAll((os) => os.map((o) => o.value));
    assert.ok(options.includes(name), 'after a reload the imported page is in the list');

    /* an unsupported block: listed with what it feeds; nothing written; then Placeholders */
    if (w === 1280) {
      const before = readdirSync(pages).sort();
      await importButton.click();
      const ch2 = page.waitForEvent('filechooser');
      await dialog.getByTestId('import-files').click();
      await (await ch2).setFiles([grads]);
      await dialog.getByRole('button', {name: 'Import'}).click();
      await report.filter({hasText: 'grads cannot be imported: 1 block cannot be mapped'}).waitFor();
      const row = dialog.locator('.import-unsupported tbody tr');
      assert.match(await row.innerText(), /g\s+Unstack[\s\S]*n:x <- output\[3\]/);
      await shot(`${tag}-unsupported`);
      assert.deepEqual(readdirSync(pages).sort(), before, 'a failed import writes nothing');
      await dialog.getByLabel('Write a Placeholder for each block that cannot be mapped').check();
      await dialog.getByRole('button', {name: 'Import'}).click();
      await report.filter({hasText: 'Imported grads'}).waitFor();
      assert.match(await report.innerText(), /Placeholder g stands for g:output\[3\]/);
      await shot(`${tag}-placeholder`);
      await dialog.getByRole('button', {name: 'Close'}).click();
      await dialog.waitFor({state: 'detached'});
      assert.ok(existsSync(join(pages, 'grads.json')));
    }
    assert.deepEqual(errors, [], 'no errors in the browser console');
    await page.close();
  }
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  if (serverErr()) console.error('server stderr:', serverErr().slice(-5000));
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(tmp, {recursive: true, force: true});
}
process.exit(failed ? 1 : 0);
