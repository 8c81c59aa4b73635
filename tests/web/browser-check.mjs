// Browser checks of the page in headless Debian Chromium driven by playwright-core.
//   node tests/web/browser-check.mjs
// Serves web/ on a free port, runs each check in a fresh page, saves screenshots under
// build-wasm/screenshots/, prints "N passed, N failed" and exits non-zero on any failure.
// Needs: web/wasm/trainmem.{mjs,wasm} (the wasm build) and web/vendor/chart.umd.js (vendor script).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../../web/scripts/serve.mjs';

const SHOTS = fileURLToPath(new URL('../../build-wasm/screenshots/', import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

await mkdir(SHOTS, { recursive: true });
const { server, url } = await serve({ port: 0 });
const profile = await mkdtemp(join(tmpdir(), 'trainmem-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM, headless: true, viewport: DESKTOP,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});

let passed = 0;
let failed = 0;

/** Opens the page; collects console errors/warnings, page errors and CSP violations. */
async function open(hash = '', { viewport = DESKTOP, colorScheme = 'light' } = {}) {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  await page.emulateMedia({ colorScheme });
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(`${url}index.html${hash}`);
  await page.waitForSelector('body[data-ready]', { timeout: 20000 });
  const state = await page.getAttribute('body', 'data-ready');
  if (state !== '1') throw new Error(`page did not start: ${await page.textContent('#general-issues')}`);
  return { page, problems };
}

async function check(name, fn) {
  let page;
  try {
    page = await fn((p) => { page = p; return p; });
    console.log(`ok   ${name}`);
    passed += 1;
  } catch (error) {
    console.log(`FAIL ${name}\n     ${String(error.stack ?? error).split('\n').slice(0, 3).join('\n     ')}`);
    failed += 1;
  } finally {
    await page?.close().catch(() => {});
  }
}

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

const total = (page) => page.textContent('#total');
const hashNow = (page) => page.evaluate(() => location.hash);
/** Non-transparent pixels of a canvas: a drawn chart has thousands. */
const paintedPixels = (page, selector) => page.$eval(selector, (canvas) => {
  const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  let n = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n += 1;
  return n;
});
const canvasDigest = (page, selector) => page.$eval(selector, (c) => c.toDataURL().length + c.toDataURL().slice(-64));
/** Waits for the debounced URL write. */
const settleUrl = (page) => page.waitForTimeout(400);
async function typeInto(page, selector, text) {
  await page.fill(selector, text);
}

await check('loads with a result, a drawn chart and no console errors', async (keep) => {
  const { page, problems } = await open();
  keep(page);
  const text = await total(page);
  expect(/^\d+\.\d\d GiB$/.test(text), `total is "${text}"`);
  expect(await paintedPixels(page, '#gpu-chart') > 2000, 'GPU chart is blank');
  expect((await page.textContent('#verdict')).length > 0, 'no verdict');
  expect((await page.title()).includes('Llama'), `title "${await page.title()}" names no model`);
  expect((await page.textContent('#report')).startsWith('Theoretical memory footprints:'), 'no report line');
  expect(await page.$$eval('#assumptions li', (l) => l.length) > 0, 'no assumptions');
  expect(!/NaN|undefined/.test(await page.textContent('body')), 'NaN or undefined on the page');
  await page.screenshot({ path: join(SHOTS, 'desktop-1280x900.png') });
  expect(problems.length === 0, problems.join('\n'));
  return page;
});

await check('changing an input updates the total, the chart and the link at once', async (keep) => {
  const { page, problems } = await open();
  keep(page);
  const before = await total(page);
  const chartBefore = await canvasDigest(page, '#gpu-chart');
  await typeInto(page, '#f-num_layers', '48');
  const after = await total(page);
  expect(after !== before, `total stayed ${before}`);
  expect(await canvasDigest(page, '#gpu-chart') !== chartBefore, 'chart did not change');
  await settleUrl(page);
  expect((await hashNow(page)).includes('&L=48&'), `hash is ${await hashNow(page)}`);
  expect((await page.title()).includes('(modified)'), 'title does not say the preset was modified');
  expect(problems.length === 0, problems.join('\n'));
  return page;
});

await check('an invalid value is marked at its field with the core message; the last result stays', async (keep) => {
  const { page } = await open();
  keep(page);
  const before = await total(page);
  await typeInto(page, '#f-num_attention_heads', '33');
  const error = await page.textContent('#e-num_attention_heads');
  expect(error.startsWith('num_attention_heads:') || (await page.textContent('#e-num_query_groups')).length > 0,
    `no message next to the field: "${error}"`);
  expect(await page.getAttribute('#f-num_attention_heads', 'aria-invalid') === 'true' || error === '', 'aria-invalid not set');
  expect(await total(page) === before, 'the last valid total was replaced');
  expect(await page.isVisible('#stale'), 'no note that the result is stale');
  await typeInto(page, '#f-num_layers', 'abc');
  expect((await page.textContent('#e-num_layers')).includes('integer'), 'no integer message for "abc"');
  await page.screenshot({ path: join(SHOTS, 'invalid-input.png') });
  await typeInto(page, '#f-num_layers', '32');
  await typeInto(page, '#f-num_attention_heads', '32');
  expect(!(await page.isVisible('#stale')), 'stale note stays after fixing');
  return page;
});

await check('a share link restores the same inputs and result', async (keep) => {
  const { page } = await open();
  keep(page);
  await page.selectOption('#preset', 'mixtral-8x7b');
  await typeInto(page, '#f-pipeline_model_parallel_size', '4');
  await typeInto(page, '#f-expert_model_parallel_size', '2');
  await page.selectOption('#gpu', 'h200-141gb');
  await page.check('#unit-gb');
  await settleUrl(page);
  const link = await hashNow(page);
  const values = await page.$$eval('#fields input, #fields select', (els) => els.map((e) => (e.type === 'checkbox' ? e.checked : e.value)));
  const shown = await total(page);
  const { page: copy, problems } = await open(link);
  const valuesCopy = await copy.$$eval('#fields input, #fields select', (els) => els.map((e) => (e.type === 'checkbox' ? e.checked : e.value)));
  const shownCopy = await total(copy);
  await settleUrl(copy);
  const linkCopy = await hashNow(copy);
  const noticeShown = await copy.isVisible('#link-notice');
  await copy.close();
  expect(JSON.stringify(values) === JSON.stringify(valuesCopy), 'inputs differ after the round trip');
  expect(shown === shownCopy && shown.endsWith('GB'), `total ${shown} vs ${shownCopy}`);
  expect(link === linkCopy, `link changed: ${link} vs ${linkCopy}`);
  expect(!noticeShown, 'a notice is shown for a clean link');
  expect(problems.length === 0, problems.join('\n'));
  return page;
});

await check('a tampered link keeps the valid fields and names the rejected ones', async (keep) => {
  const { page, problems } = await open('#v=1&m=llama-3.1-8b&L=abc&h=4096&zzz=1&tp=3&s=4096&gpu=nope&u=GiB&ck=bad');
  keep(page);
  const notice = await page.textContent('#link-notice');
  expect(await page.isVisible('#link-notice'), 'no notice');
  for (const name of ['num_layers', 'zzz', 'gpu']) expect(notice.includes(name), `notice does not name ${name}: ${notice}`);
  expect(/checksum/.test(notice), 'notice does not mention the checksum');
  expect(await page.inputValue('#f-seq_length') === '4096', 'valid field seq_length was not kept');
  expect(/^\d+\.\d\d GiB$/.test(await total(page)), `total is "${await total(page)}"`);
  expect(!/NaN/.test(await page.textContent('body')), 'NaN on the page');
  await page.screenshot({ path: join(SHOTS, 'tampered-link.png') });
  expect(problems.length === 0, problems.join('\n'));
  return page;
});

await check('truncated and future-version links still show a result', async (keep) => {
  const { page } = await open('#v=9&m=llama-3.1-70b&L=80&h=81');
  keep(page);
  expect((await page.textContent('#link-notice')).includes('newer trainmem'), 'no future-version note');
  expect(/^\d+\.\d\d GiB$/.test(await total(page)), `total is "${await total(page)}"`);
  expect(!/NaN/.test(await page.textContent('body')), 'NaN on the page');
  return page;
});

await check('pipeline stages get their own chart; MoE and MLA fields appear when they apply', async (keep) => {
  const { page, problems } = await open();
  keep(page);
  expect(!(await page.isVisible('#stages-card')), 'stage chart shown at PP = 1');
  expect(!(await page.isVisible('#f-expert_model_parallel_size')), 'EP shown for a dense model');
  await page.selectOption('#preset', 'deepseek-v3');
  expect(await page.isVisible('#f-moe_router_topk'), 'MoE fields hidden for DeepSeek-V3');
  expect(await page.isVisible('#f-kv_lora_rank'), 'MLA fields hidden for DeepSeek-V3');
  await typeInto(page, '#f-tensor_model_parallel_size', '2');
  await typeInto(page, '#f-data_parallel_size', '64');
  await typeInto(page, '#f-expert_model_parallel_size', '64');
  await typeInto(page, '#f-expert_tensor_parallel_size', '1');
  await typeInto(page, '#f-pipeline_model_parallel_size', '16');
  await typeInto(page, '#f-num_layers_in_first_pipeline_stage', '3');
  await typeInto(page, '#f-num_layers_in_last_pipeline_stage', '2');
  await page.selectOption('#gpu', 'h200-141gb');
  const issues = await page.$$eval('.field.invalid', (els) => els.map((e) => e.dataset.field));
  expect(issues.length === 0, `invalid fields: ${issues}`);
  expect(await page.isVisible('#stages-card'), 'no stage chart at PP = 16');
  expect(await paintedPixels(page, '#stage-chart') > 2000, 'stage chart is blank');
  const expertCol = await page.textContent('#breakdown-head');
  expect(expertCol.includes('Experts'), 'no expert column for an MoE model');
  await page.hover('#gpu-chart', { position: { x: 60, y: 55 } });
  await page.waitForTimeout(100);
  const tip = await page.textContent('.chart-tip').catch(() => '');
  expect(/ B/.test(tip) && /=/.test(tip), `tooltip lacks exact bytes or formula: "${tip}"`);
  await page.screenshot({ path: join(SHOTS, 'moe-pipeline-1280x900.png') });
  expect(problems.length === 0, problems.join('\n'));
  return page;
});

await check('units, GPUs and a custom capacity switch the headline', async (keep) => {
  const { page } = await open();
  keep(page);
  await page.check('#unit-gb');
  expect((await total(page)).endsWith(' GB'), 'unit did not switch to GB');
  await page.selectOption('#gpu', 'a100-40gb');
  expect((await page.textContent('#gpu-name')).includes('A100'), 'GPU name not shown');
  await page.selectOption('#gpu', 'custom');
  await typeInto(page, '#capacity-input', '500 GB');
  expect((await page.textContent('#capacity')).startsWith('500'), `capacity ${await page.textContent('#capacity')}`);
  expect((await page.textContent('#verdict')).startsWith('Fits'), 'verdict does not say it fits in 500 GB');
  await typeInto(page, '#capacity-input', '1 GB');
  expect((await page.textContent('#verdict')).startsWith('Does not fit'), 'verdict does not say it overflows 1 GB');
  await typeInto(page, '#capacity-input', 'lots');
  expect(await page.isVisible('#capacity-error'), 'no message for a bad capacity');
  return page;
});

await check('a 390-px phone: no sideways scroll, the headline stays in view while editing', async (keep) => {
  const { page, problems } = await open('', { viewport: PHONE });
  keep(page);
  await page.screenshot({ path: join(SHOTS, 'phone-390x844.png') });
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(width <= PHONE.width, `page is ${width}px wide`);
  await page.focus('#f-data_parallel_size');
  await typeInto(page, '#f-data_parallel_size', '16');
  const box = await page.$eval('#total', (e) => e.getBoundingClientRect().toJSON());
  expect(box.top >= 0 && box.bottom <= PHONE.height, `total is off screen (${box.top})`);
  const field = await page.$eval('#f-data_parallel_size', (e) => e.getBoundingClientRect().toJSON());
  expect(field.top >= box.bottom, 'the sticky headline covers the field being edited');
  await page.screenshot({ path: join(SHOTS, 'phone-390x844-editing.png') });
  expect(problems.length === 0, problems.join('\n'));
  return page;
});

await check('keyboard only: every control is reachable with Tab, focus is visible, keys edit', async (keep) => {
  const { page } = await open();
  keep(page);
  const reached = new Set();
  let outline = '';
  for (let i = 0; i < 80; i += 1) {
    await page.keyboard.press('Tab');
    const info = await page.evaluate(() => {
      const e = document.activeElement;
      const style = getComputedStyle(e);
      return { id: e.id, outline: `${style.outlineStyle} ${style.outlineWidth}` };
    });
    if (info.id) reached.add(info.id);
    if (info.id === 'f-num_layers') outline = info.outline;
  }
  for (const id of ['preset', 'f-num_layers', 'f-tensor_model_parallel_size', 'f-seq_length', 'gpu', 'unit-gib', 'copy-link']) {
    expect(reached.has(id), `Tab never reached #${id}`);
  }
  expect(!outline.startsWith('none'), `no visible focus ring on inputs (${outline})`);
  const before = await total(page);
  await page.focus('#f-num_layers');
  await page.keyboard.press('End');
  await page.keyboard.press('Backspace');
  await page.keyboard.press('Backspace');
  await page.keyboard.type('64');
  expect(await total(page) !== before, 'typing did not recompute');
  await page.focus('#preset');
  await page.keyboard.press('ArrowDown');
  expect(await page.inputValue('#preset') !== 'llama-3.1-8b', 'arrow key did not change the preset');
  await page.focus('#copy-link');
  await page.keyboard.press('Enter');
  await page.waitForTimeout(100);
  expect((await page.textContent('#copy-status')).length > 0, 'Copy link gave no feedback');
  return page;
});

await check('dark mode renders without errors', async (keep) => {
  const { page, problems } = await open('', { colorScheme: 'dark' });
  keep(page);
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  expect(bg !== 'rgb(246, 247, 249)', `background stays light: ${bg}`);
  await page.screenshot({ path: join(SHOTS, 'dark-1280x900.png') });
  const { page: phone } = await open('', { colorScheme: 'dark', viewport: PHONE });
  await phone.screenshot({ path: join(SHOTS, 'dark-phone-390x844.png') });
  await phone.close();
  expect(problems.length === 0, problems.join('\n'));
  return page;
});

await context.close();
server.close();
await rm(profile, { recursive: true, force: true });
console.log(`screenshots: ${SHOTS}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
