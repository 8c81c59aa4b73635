// The page's figures of issue 15 beside their targets, measured in headless Chromium on localhost,
// for web/ as the development server sends it (uncompressed) and for dist/ as npm start serves it
// (content-hashed names, brotli or gzip: built from web/ as it is into a temporary folder).
// Prints, asserts nothing.
//   node tests/bench/page-bench.mjs [cold loads per target, default 15]
// - first frame showing the result: navigation start -> when the headline (#total) was first
//   painted with a figure: for a headline in the document before its first paint (dist/'s
//   prerendered one), the Element Timing entry of its first paint (the frame's presentation);
//   otherwise the first animation frame after the page wrote the figure, or the first
//   contentful paint if that is later; median of cold loads (a fresh browser context each, so
//   nothing is cached), the two targets interleaved. Also the page's own marks when it sets them
//   (trainmem:first-result-frame, first-chart, first-frame) and first contentful paint.
// - keystroke -> updated headline: an input event on the layer count until #total shows the new
//   figure (the handler's synchronous time when it updates it before returning, which is when the
//   frame can paint it); also the handler's time and input -> next frame.
// - own assets at first load: every response until the network is idle after the load event,
//   gzip -9 bytes of each (the .gz beside it in dist/) and the bytes on the wire, without and
//   with Chart.js (vendor/), and the requests; also what came in before the result frame, and the
//   assets the first load does not fetch (tools module, planner worker, the other views).
// - estimate call through the module, for the default config (what a fresh page shows: the
//   empty link's config, with the GPU's capacity): engine.estimate(config) as the page calls it,
//   in Node and in the page in Chromium.
// - this machine's paint floor, beside the first frame: the first contentful paint of two probe
//   documents served by the dist/ server in the same interleaved cold loads, one line of text
//   alone and the same line under dist/'s stylesheet. No page can show its result before the
//   styled probe paints, so the gap between the two rows is what the page itself costs.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { serve, WEB_ROOT } from '../../web/scripts/serve.mjs';
import { buildDist, listFiles } from '../../web/scripts/build-dist.mjs';

const LOADS = Number(process.argv[2] ?? 15);
const KEYSTROKES = 40;
const TARGETS = { frame: 150, keystroke: 1, ownKB: 60, estimateUs: 20 };

const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length ? v[Math.floor(v.length / 2)] : NaN;
};
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const ms = (n, digits = 1) => (Number.isFinite(n) ? `${n.toFixed(digits)} ms` : 'n/a');

// Runs in Node and, as source text, in the page: the page's engine call for the default config.
async function measureEstimate({ engineUrl, linkUrl, wasmBinary }) {
  const { createEngine } = await import(engineUrl);
  const { restoreLink } = await import(linkUrl);
  const engine = await createEngine(wasmBinary ? { wasmBinary } : undefined);
  const { config } = restoreLink('', engine);
  const batch = (n) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i += 1) engine.estimate(config);
    return (performance.now() - t0) / n;
  };
  for (const t0 = performance.now(); performance.now() - t0 < 300;) batch(10); // warm up: let the engine tier up
  const calls = Math.max(20, Math.ceil(100 / Math.max(batch(20), 1e-4))); // ~100 ms a round
  const rounds = Array.from({ length: 9 }, () => batch(calls) * 1000);
  return { us: rounds.sort((a, b) => a - b)[4], calls, config: Object.keys(config).length };
}

// Installed before any script of the page: when #total first shows a figure, and the frame after;
// and when the headline element was first painted (Element Timing: its elementtiming attribute).
function watchHeadline() {
  const b = { result: NaN, frame: NaN, painted: NaN, breakdown: NaN };
  window.benchHeadline = b;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.identifier === 'headline' && !(b.painted >= 0)) b.painted = e.renderTime || e.loadTime;
      // The breakdown card's heading: painted with the card (dist/ puts it in place after the headline's frame).
      if (e.identifier === 'breakdown' && !(b.breakdown >= 0)) b.breakdown = e.renderTime || e.loadTime;
    }
  }).observe({ type: 'element', buffered: true });
  const mo = new MutationObserver(() => {
    const el = document.getElementById('total');
    if (!el || !/\d/.test(el.textContent)) return;
    mo.disconnect();
    b.result = performance.now();
    requestAnimationFrame(() => { b.frame = performance.now(); });
  });
  mo.observe(document, { childList: true, subtree: true, characterData: true });
}

/** A cold load of the page (a fresh context: nothing cached), once the network is idle. */
async function openPage(browser, target) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(watchHeadline);
  const page = await context.newPage();
  await page.goto(`${target.url}index.html`);
  await page.waitForFunction(() => Number.isFinite(window.benchHeadline.frame), null, { timeout: 60_000 });
  await page.waitForLoadState('networkidle');
  return { context, page };
}

/** A cold load of a probe document: its first contentful paint. */
async function probeLoad(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(url);
  const fcp = await page.evaluate(() => new Promise((resolve) => {
    new PerformanceObserver((list) => {
      const e = list.getEntries().find((x) => x.name === 'first-contentful-paint');
      if (e) resolve(e.startTime);
    }).observe({ type: 'paint', buffered: true });
    setTimeout(() => resolve(NaN), 10_000);
  }));
  await context.close();
  return fcp;
}

/**
 * The probe documents, written beside dist/'s files: one line of text, alone and under dist/'s
 * stylesheet (its content-hashed name read from the built index.html).
 */
async function writeProbes(root) {
  const index = await readFile(join(root, 'index.html'), 'utf8');
  const sheet = index.match(/<link rel="stylesheet" href="([^"]+)">/)?.[1];
  if (!sheet) throw new Error('dist/index.html links no stylesheet');
  const doc = (head) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>probe</title>${head}</head>`
    + '<body><p>60.81 GiB of 79.65 GiB</p></body></html>';
  await writeFile(join(root, 'probe-text.html'), doc(''));
  await writeFile(join(root, 'probe-styled.html'), doc(`<link rel="stylesheet" href="${sheet}">`));
  return [
    { what: 'one line of text', path: 'probe-text.html', fcp: [] },
    { what: 'one line under the stylesheet', path: 'probe-styled.html', fcp: [] },
  ];
}

async function coldLoad(browser, target) {
  const { context, page } = await openPage(browser, target);
  const t = await page.evaluate(() => {
    const mark = (name) => performance.getEntriesByName(name)[0]?.startTime ?? NaN;
    // A frame cannot show the figure before the page's first contentful paint: a prerendered
    // headline (dist/) is in the document before the stylesheet lets anything paint.
    const fcp = mark('first-contentful-paint');
    // A headline in the document before its first paint (dist/'s prerendered one) was on screen
    // when Element Timing says it was first painted: the frame's presentation, which comes after
    // that frame's animation callbacks. A headline that first showed a dash and was filled in
    // later (web/) is measured by the animation frame after the figure arrived.
    const { result, painted } = window.benchHeadline;
    const shownAtFirstPaint = Number.isFinite(painted) && painted >= result;
    return {
      ...window.benchHeadline,
      frame: shownAtFirstPaint ? painted : Math.max(window.benchHeadline.frame, Number.isFinite(fcp) ? fcp : -Infinity),
      fcp: mark('first-contentful-paint'),
      pageResultFrame: mark('trainmem:first-result-frame'),
      pageChart: mark('trainmem:first-chart'),
      pageFrame: mark('trainmem:first-frame'),
      resources: [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
        .map((e) => ({ name: e.name, end: e.responseEnd, wire: e.encodedBodySize })),
    };
  });
  await context.close();
  return t;
}

async function keystrokes(browser, target, estimateArgs) {
  const { context, page } = await openPage(browser, target);
  const input = await page.evaluate(async (n) => {
    const el = document.getElementById('f-num_layers');
    const total = document.getElementById('total');
    const nextFrame = () => new Promise((r) => requestAnimationFrame(() => r(performance.now())));
    let changedAt = NaN;
    new MutationObserver(() => { if (Number.isNaN(changedAt)) changedAt = performance.now(); })
      .observe(total, { childList: true, subtree: true, characterData: true, attributes: true });
    const out = { headline: [], sync: [], frame: [] };
    for (let i = 0; el && i < n; i += 1) {
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const before = total.textContent;
      changedAt = NaN;
      const t0 = performance.now();
      el.value = String(i % 2 ? 32 : 40);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      const t1 = performance.now();
      const changedInHandler = total.textContent !== before;
      out.frame.push((await nextFrame()) - t0);
      for (let w = 0; !changedInHandler && Number.isNaN(changedAt) && w < 100; w += 1) await new Promise((r) => setTimeout(r, 10));
      out.sync.push(t1 - t0);
      out.headline.push(changedInHandler ? t1 - t0 : changedAt - t0);
    }
    return { ...out, found: Boolean(el), recompute: window.trainmemStats?.headlineMs };
  }, KEYSTROKES);
  let estimate = { us: NaN, error: 'bundled: the same module as web/' };
  if (estimateArgs) try {
    estimate = await page.evaluate(`(${measureEstimate})(${JSON.stringify(estimateArgs)})`);
  } catch (error) {
    estimate = { us: NaN, error: error.message.split('\n')[0] };
  }
  await context.close();
  return { input, estimate };
}

/** raw, gzip -9 (the .gz beside it when there is one) and brotli-or-raw sizes of a served file, cached. */
function sizer(root) {
  const cache = new Map();
  return async (path) => {
    if (!cache.has(path)) {
      const body = await readFile(join(root, path));
      const gz = await stat(join(root, `${path}.gz`)).then((s) => s.size, () => gzipSync(body, { level: 9 }).length);
      cache.set(path, { raw: body.length, gz });
    }
    return cache.get(path);
  };
}

/** A cold load's responses, split into own assets and Chart.js, with their sizes. */
async function firstLoadBytes(target, load) {
  const rows = [];
  for (const r of load.resources) {
    if (!r.name.startsWith(target.url)) continue;
    let path = new URL(r.name).pathname.slice(new URL(target.url).pathname.length);
    if (!path || path.endsWith('/')) path += 'index.html';
    rows.push({ path, wire: r.wire, beforeFrame: r.end <= load.frame, ...(await target.size(path)) });
  }
  const sum = (list, key) => list.reduce((s, r) => s + r[key], 0);
  const own = rows.filter((r) => !r.path.startsWith('vendor/'));
  const early = own.filter((r) => r.beforeFrame);
  return {
    rows, own: { n: own.length, gz: sum(own, 'gz'), raw: sum(own, 'raw'), wire: sum(own, 'wire') },
    all: { n: rows.length, gz: sum(rows, 'gz'), wire: sum(rows, 'wire') },
    early: { n: early.length, gz: sum(early, 'gz') },
  };
}

const out = await mkdtemp(join(tmpdir(), 'trainmem-bench-dist-'));
await buildDist(out, { build: false });
const web = await serve({ port: 0 });
const dist = await serve({ port: 0, root: out });
const probes = await writeProbes(out);
const targets = [
  { name: 'web/', what: 'web/ as is, uncompressed', url: web.url, size: sizer(WEB_ROOT), modules: true, loads: [] },
  // dist/'s modules are bundled (no engine.js to import): its estimate call is web/'s, the same module.
  { name: 'dist/', what: 'dist/, brotli', url: dist.url, size: sizer(out), modules: false, loads: [] },
];

const node = await measureEstimate({
  engineUrl: pathToFileURL(join(WEB_ROOT, 'js/engine.js')).href,
  linkUrl: pathToFileURL(join(WEB_ROOT, 'js/link-config.js')).href,
  wasmBinary: await readFile(join(WEB_ROOT, 'wasm/trainmem.wasm')),
}).catch((error) => ({ us: NaN, error: error.message }));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
for (let i = 0; i < LOADS; i += 1) {
  for (const t of targets) t.loads.push(await coldLoad(browser, t));
  for (const p of probes) p.fcp.push(await probeLoad(browser, `${dist.url}${p.path}`));
}
for (const t of targets) {
  Object.assign(t, await keystrokes(browser, t, t.modules && { engineUrl: `${t.url}js/engine.js`, linkUrl: `${t.url}js/link-config.js` }));
  t.bytes = await firstLoadBytes(t, t.loads.at(-1));
}
await browser.close();
web.server.close();
dist.server.close();
await rm(out, { recursive: true, force: true });

// Details.
for (const t of targets) {
  const m = (key) => median(t.loads.map((l) => l[key]));
  console.log(`\n== ${t.what} (${t.url}), ${LOADS} cold loads`);
  console.log('First load (until the network is idle):');
  for (const r of t.bytes.rows) {
    console.log(`  ${r.path.padEnd(34)} ${kb(r.raw).padStart(9)} raw ${kb(r.gz).padStart(9)} gzip ${kb(r.wire).padStart(9)} wire${r.beforeFrame ? '' : '  (after the result frame)'}`);
  }
  console.log(`  own assets:            ${kb(t.bytes.own.gz)} gzip, ${kb(t.bytes.own.wire)} on the wire (${kb(t.bytes.own.raw)} raw) in ${t.bytes.own.n} requests`);
  console.log(`  own assets + Chart.js: ${kb(t.bytes.all.gz)} gzip, ${kb(t.bytes.all.wire)} on the wire in ${t.bytes.all.n} requests`);
  console.log(`  before the result frame: ${kb(t.bytes.early.gz)} gzip of own assets in ${t.bytes.early.n} requests`);
  console.log(`Navigation -> headline shows a figure:   median ${ms(m('result'))}`);
  console.log(`Navigation -> first frame showing it:    median ${ms(m('frame'))} (min ${ms(Math.min(...t.loads.map((l) => l.frame)))}, max ${ms(Math.max(...t.loads.map((l) => l.frame)))})`);
  console.log(`Navigation -> first contentful paint:    median ${ms(m('fcp'))}`);
  console.log(`Navigation -> headline element painted: median ${ms(m('painted'))} (Element Timing; a dash before the figure in web/)`);
  console.log(`Navigation -> breakdown card painted:    median ${ms(m('breakdown'))} (Element Timing of its heading; the table's rows come with it in dist/, with the live page in web/)`);
  console.log(`Page marks: result frame ${ms(m('pageResultFrame'))}, first chart ${ms(m('pageChart'))}, frame showing it ${ms(m('pageFrame'))}`);
  const inp = t.input;
  if (!inp.found) console.log('Keystrokes: no #f-num_layers input on the page');
  console.log(`Keystroke -> headline updated:           median ${ms(median(inp.headline), 2)} over ${inp.headline.length} changes (max ${ms(Math.max(...inp.headline), 2)})`);
  console.log(`Input handler (sync):                    median ${ms(median(inp.sync), 2)}; input -> next frame median ${ms(median(inp.frame), 2)}; last headline update ${ms(inp.recompute, 2)}`);
  console.log(`engine.estimate(default config) in Chromium: ${Number.isFinite(t.estimate.us) ? `${t.estimate.us.toFixed(1)} µs a call (median of 9 rounds of ${t.estimate.calls})` : `n/a (${t.estimate.error})`}`);
}
const fetched = new Set(targets[0].bytes.rows.map((r) => r.path));
const notFetched = [];
for (const dir of ['js', 'wasm', 'css']) for (const f of await listFiles(join(WEB_ROOT, dir))) if (!fetched.has(`${dir}/${f}`)) notFetched.push(`${dir}/${f}`);
let lazy = 0;
console.log('\nNot fetched by the first load (tools module, planner worker, the embed and the element):');
for (const p of notFetched) {
  const s = await targets[0].size(p);
  lazy += s.gz;
  console.log(`  ${p.padEnd(34)} ${kb(s.raw).padStart(9)} raw ${kb(s.gz).padStart(9)} gzip`);
}
console.log(`  in all:                ${kb(lazy)} gzip`);
console.log('\nThis machine\'s paint floor (first contentful paint of a probe document, cold loads interleaved with the above):');
for (const p of probes) console.log(`  ${p.what.padEnd(32)} median ${ms(median(p.fcp))} (min ${ms(Math.min(...p.fcp))})`);
console.log(`engine.estimate(default config) in Node: ${Number.isFinite(node.us) ? `${node.us.toFixed(1)} µs a call (median of 9 rounds of ${node.calls})` : `n/a (${node.error})`}`);

// The figures beside their targets.
const verdict = (value, target) => (Number.isFinite(value) ? (value <= target ? 'met' : 'not met') : 'n/a');
const rows = [
  ['First frame showing the result, median', (t) => median(t.loads.map((l) => l.frame)), (v) => ms(v), TARGETS.frame, `≤ ${TARGETS.frame} ms`],
  ['Keystroke -> updated headline, median', (t) => median(t.input.headline), (v) => ms(v, 2), TARGETS.keystroke, `≤ ${TARGETS.keystroke} ms`],
  ['Own assets at first load, gzip', (t) => t.bytes.own.gz / 1024, (v, t) => `${v.toFixed(1)} KB, ${t.bytes.own.n} req`, TARGETS.ownKB, `≤ ${TARGETS.ownKB} KB`],
  ['Estimate call, Chromium (default config)', (t) => t.estimate.us, (v) => (Number.isFinite(v) ? `${v.toFixed(1)} µs` : 'n/a'), TARGETS.estimateUs, `≤ ${TARGETS.estimateUs} µs`],
  ['Estimate call, Node (default config)', () => node.us, (v) => (Number.isFinite(v) ? `${v.toFixed(1)} µs` : 'n/a'), TARGETS.estimateUs, `≤ ${TARGETS.estimateUs} µs`],
];
const cell = (s) => s.padEnd(30);
console.log(`\n${'Figure (issue 15)'.padEnd(42)}${targets.map((t) => cell(t.what)).join('')}target`);
for (const [label, value, format, target, targetText] of rows) {
  console.log(`${label.padEnd(42)}${targets.map((t) => cell(`${format(value(t), t)} (${verdict(value(t), target)})`)).join('')}${targetText}`);
}
// Not a figure of the page: the probe is served once, so both columns show the same floor.
console.log(`${'Paint floor here (styled one-line probe)'.padEnd(42)}${targets.map(() => cell(ms(median(probes[1].fcp)))).join('')}what no first frame beats here`);
console.log(`(${LOADS} cold loads per target, interleaved; ${KEYSTROKES} keystrokes; headless Chromium on 127.0.0.1, no GPU; Chart.js not counted as own)`);
