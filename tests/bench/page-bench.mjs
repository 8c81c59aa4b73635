// Page figures for issue 3 item 8, measured in headless Chromium on localhost. Prints, asserts nothing.
//   node tests/bench/page-bench.mjs [runs]
// - bytes of the page's own assets, gzip -9, with and without Chart.js
// - navigation start -> first chart rendered, and -> the frame that shows it (fresh browser context
//   each run, so nothing is cached)
// - input event -> chart updated (synchronous work), and -> the next frame
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../../web/scripts/serve.mjs';

const RUNS = Number(process.argv[2] ?? 7);
const WEB = new URL('../../web/', import.meta.url);
const OWN = ['index.html', 'css/app.css', 'js/main.js', 'js/engine.js', 'js/form.js', 'js/layout.js',
  'js/url-state.js', 'js/format.js', 'js/charts.js', 'js/results.js', 'js/formulas.js', 'js/theme.js',
  'js/preset-picker.js', 'js/import-panel.js', 'js/share.js', 'js/plan-panel.js',
  'wasm/trainmem.mjs', 'wasm/trainmem.wasm'];
const VENDOR = ['vendor/chart.umd.js'];
// Loaded on first use (imports, exports, the planner), not by the first result.
const LAZY = ['js/plan-worker.js', 'js/embed.js', 'js/trainmem-element.js', 'js/link-config.js', 'wasm/trainmem-tools.mjs', 'wasm/trainmem-tools.wasm'];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

async function sizes(files) {
  let raw = 0;
  let gz = 0;
  const rows = [];
  for (const f of files) {
    const body = await readFile(new URL(f, WEB));
    const z = gzipSync(body, { level: 9 }).length;
    raw += body.length;
    gz += z;
    rows.push(`  ${f.padEnd(22)} ${kb(body.length).padStart(9)} raw ${kb(z).padStart(9)} gzip`);
  }
  return { raw, gz, rows };
}

const own = await sizes(OWN);
const vendor = await sizes(VENDOR);
const lazy = await sizes(LAZY);
console.log('Asset sizes (gzip -9):');
console.log(own.rows.join('\n'));
console.log(vendor.rows.join('\n'));
console.log(`own assets:            ${kb(own.gz)} gzip (${kb(own.raw)} raw)`);
console.log(`own assets + Chart.js: ${kb(own.gz + vendor.gz)} gzip`);
console.log('Loaded on first use (tools module, planner worker, embed views):');
console.log(lazy.rows.join('\n'));
console.log(`on first use:          ${kb(lazy.gz)} gzip`);

const { server, url } = await serve({ port: 0 });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});

const firstResult = [];
const firstChart = [];
const firstFrame = [];
for (let i = 0; i < RUNS; i += 1) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${url}index.html`);
  await page.waitForSelector('body[data-ready="1"]');
  await page.waitForFunction(() => performance.getEntriesByName('trainmem:first-frame').length > 0);
  const t = await page.evaluate(() => ({
    result: performance.getEntriesByName('trainmem:first-result-frame')[0]?.startTime ?? NaN,
    chart: performance.getEntriesByName('trainmem:first-chart')[0].startTime,
    frame: performance.getEntriesByName('trainmem:first-frame')[0].startTime,
  }));
  firstResult.push(t.result);
  firstChart.push(t.chart);
  firstFrame.push(t.frame);
  await context.close();
}

const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
await page.goto(`${url}index.html`);
await page.waitForSelector('body[data-ready="1"]');
const input = await page.evaluate(async (n) => {
  const el = document.getElementById('f-num_layers');
  const sync = [];
  const frame = [];
  for (let i = 0; i < n; i += 1) {
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const t0 = performance.now();
    el.value = String(i % 2 ? 32 : 40);
    el.dispatchEvent(new Event('input', { bubbles: true }));
    sync.push(performance.now() - t0);
    const t1 = await new Promise((r) => requestAnimationFrame((ts) => r(performance.now())));
    frame.push(t1 - t0);
  }
  return { sync, frame, recompute: window.trainmemStats.lastRecomputeMs };
}, 40);
await context.close();
await browser.close();
server.close();

console.log(`\nNavigation -> result painted (frame): median ${median(firstResult).toFixed(1)} ms`);
console.log(`Navigation -> first chart rendered: median ${median(firstChart).toFixed(1)} ms over ${RUNS} cold loads (min ${Math.min(...firstChart).toFixed(1)}, max ${Math.max(...firstChart).toFixed(1)})`);
console.log(`Navigation -> frame showing it:     median ${median(firstFrame).toFixed(1)} ms`);
console.log(`Input -> chart updated (sync):      median ${median(input.sync).toFixed(2)} ms over ${input.sync.length} changes (max ${Math.max(...input.sync).toFixed(2)})`);
console.log(`Input -> next frame:                median ${median(input.frame).toFixed(2)} ms`);
console.log(`(figures are for ${fileURLToPath(WEB)} served from 127.0.0.1; headless Chromium, no GPU)`);
