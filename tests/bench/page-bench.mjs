// The page's figures (issues 15 and 31) beside their targets, measured in headless Chromium on
// localhost, for dist/ as npm start serves it (content-hashed names, brotli or gzip: built from
// web/ as it is into a temporary folder, the wasm modules and Chart.js taken as they are in web/:
// it never builds them). Three cases, their cold loads interleaved with the paint-floor probes:
// the plain page (index.html), a shared link (index.html#LINK) and the embed (embed.html#LINK).
// Prints, asserts nothing. Where a case's time goes: tests/bench/page-trace.mjs (a trace per case).
//   node tests/bench/page-bench.mjs [cold loads per case, default 15] [--compare DIR]
// --compare DIR: also builds DIR/web (another checkout, e.g. `git archive main | tar -x -C DIR`,
// with its web/wasm and web/vendor in place) and interleaves its cold loads with this tree's, so a
// before and an after are measured in one run on the same machine.
// - first frame showing the result: navigation start -> when the headline (#total) was first
//   painted with the case's figure: for a headline in the document before its first paint (dist/'s
//   prerendered one), the Element Timing entry of its first paint (the frame's presentation);
//   otherwise the presentation of the frame that showed the figure (the Element Timing of a
//   one-pixel marker the bench puts in with it; until stop 45 the animation frame after the
//   figure, which left that frame's own rendering out), or the first contentful paint if that is
//   later; median of cold loads (a fresh browser context each, so
//   nothing is cached). A link's figure is its own once #total is no longer inside dist/'s
//   prerendered <main> (the fresh page's answer, hidden for a link).
// - result in the DOM: when #total first held that figure.
// - inputs respond: the page's mark trainmem:inputs-live (an edit reaches the live estimator from
//   then on), or trainmem:first-result where the page sets no such mark (the form built, the
//   first answer settled).
// - element count of the first frame: in one more load per case, the elements laid out (Element
//   .checkVisibility, content-visibility: auto's skipped ones not counted) in the animation frame
//   that first shows the figure.
// - keystroke -> next frame: an input event on the layer count until the main thread has drawn
//   the next frame (the first task after its animation frame callbacks), at 1280x900 and 390x844;
//   also input -> headline updated and the handler's time. A keystroke is made just after a frame
//   (60 ms after the one before): it waits for the display's next tick, nearly a whole interval
//   less what the frame before took, so a longer frame before it reads as a faster keystroke
//   (main 8dff56a, 60 keystrokes each: 8 ms of busy wait added to the frame before took 1280x900
//   from 15.8 to 9.3 ms, 390x844 from 20.5 to 12.1; the wait, 9.9 -> 2.0 and 14.9 -> 6.5 ms). So
//   the wait (the frame's time stamp, the tick it began at) is printed apart from the frame's own
//   time, and the target is read on keystrokes made at any moment of the interval (0, 2, ... 14 ms
//   after a frame, in turn), as a typist's come. Beside them, the measure's floor on the same page
//   after the keystrokes: the same pause, then the next frame with nothing changed (no
//   keystroke); on the idle page the display starts again at once.
// - bytes for the first answer: for a headline painted with the document (dist/'s prerendered
//   one), the document up to the answer's end (its gzip up to dist/'s stage-1 template: what the
//   parser must have read; dist/ puts what only the live page needs at the document's end) and
//   what blocks its rendering (Resource Timing's renderBlockingStatus: the stylesheet); for one the
//   page writes, every own asset that arrived before it did, whole; gzip -9
//   (the .gz beside it in dist/), median of the loads; also the whole first load until the
//   network is idle, without and with Chart.js (vendor/), and the requests.
// - estimate call through the module, for the default config (what a fresh page shows: the
//   empty link's config, with the GPU's capacity): engine.estimate(config) as the page calls it,
//   in Node and in web/'s page in Chromium.
// - this machine's paint floor: the first contentful paint of two probe documents served by the
//   dist/ server in the same interleaved cold loads, one line of text alone (the floor the
//   targets are multiples of) and the same line under dist/'s stylesheet.
// - the module's floor (issue 31's bound): two more probe documents in the same loads. One does
//   only what a link's answer needs of the estimator module (fetched and compiled from the head,
//   instantiated, the Engine made, the link restored and estimated through link-config.js) and
//   writes the headline's figure as its only text: its first contentful paint is the least a page
//   on this module can take to show a link's answer on this machine, its mark the least before an
//   input can reach the live estimator. The other does the same with an empty module: the least
//   for any estimator. A target below the first is out of reach for this module, not the page.
import { copyFile, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { serve, WEB_ROOT } from '../../web/scripts/serve.mjs';
import { buildDist, listFiles } from '../../web/scripts/build-dist.mjs';
import { deferredOpening } from '../../web/scripts/prerender.mjs';
import { TARGET, esbuild } from '../../web/scripts/bundle.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT_DIR = join(BENCH_DIR, '..', '..');

const args = process.argv.slice(2);
const compareAt = args.indexOf('--compare');
const COMPARE = compareAt >= 0 ? resolve(args[compareAt + 1]) : null;
const LOADS = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== '--compare') ?? 15);
const KEYSTROKES = 40;
// The issue's link: Llama 3.1 70B, TP 8, PP 2, DP 4, 8,192 tokens, micro batch 1, H100 80 GB.
const LINK = 'v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb';
const VIEWPORTS = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];
// Issue 31's targets (the floor: the one-line probe's first contentful paint in the same run);
// issue 15's estimate call.
const TARGETS = {
  frame: { plain: null, link: 2.5, embed: 2 }, // × floor
  inputs: { plain: 3, link: null, embed: null }, // × floor
  keystrokeMs: 16.7,
  firstKB: { plain: 20, link: 100, embed: 100 },
  estimateUs: 20,
};

const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length ? v[Math.floor(v.length / 2)] : NaN;
};
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const ms = (n, digits = 1) => (Number.isFinite(n) ? `${n.toFixed(digits)} ms` : 'n/a');

// Runs in Node and, as source text, in the page: the page's engine call for the default config.
async function measureEstimate({ engineUrl, linkUrl, wasmBinary, data }) {
  const { createEngine } = await import(engineUrl);
  const { restoreLink } = await import(linkUrl);
  const engine = await createEngine(wasmBinary ? { wasmBinary } : undefined, data);
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

// Installed before any script of the page: when #total first shows the case's figure, and the
// frame after; when the headline element was first painted (Element Timing: its elementtiming
// attribute); with `countElements`, the elements laid out in that frame.
function watchHeadline(countElements) {
  const b = { result: NaN, frame: NaN, presented: NaN, painted: NaN, breakdown: NaN, elements: NaN };
  window.benchHeadline = b;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.identifier === 'headline' && !(b.painted >= 0)) b.painted = e.renderTime || e.loadTime;
      // The marker put in with the figure (below): the presentation of the frame that shows it.
      if (e.identifier === 'bench-figure-frame' && !(b.presented >= 0)) {
        b.presented = e.renderTime || e.loadTime;
        e.element?.remove(); // its work is done: the page is measured on as it is
      }
      // The breakdown card's heading: painted with the card.
      if (e.identifier === 'breakdown' && !(b.breakdown >= 0)) b.breakdown = e.renderTime || e.loadTime;
    }
  }).observe({ type: 'element', buffered: true });
  // A link page's headline inside dist/'s prerendered <main> shows the fresh page's figure (hidden).
  const own = (el) => !(document.documentElement.hasAttribute('data-link') && el.closest('main[data-prerendered]'));
  const mo = new MutationObserver(() => {
    const el = document.getElementById('total');
    if (!el || !/\d/.test(el.textContent) || !own(el)) return;
    mo.disconnect();
    b.result = performance.now();
    // A headline that showed a dash first (the embed's) reports no paint of its own when the
    // figure arrives: a one-pixel, all but transparent text marker put in now is painted in the
    // same frame, and its Element Timing is that frame's presentation, as the headline's is for a
    // headline painted once (a link's). Set through the CSSOM, which the pages' CSP allows.
    const marker = document.createElement('span');
    marker.setAttribute('elementtiming', 'bench-figure-frame');
    marker.setAttribute('aria-hidden', 'true');
    marker.textContent = '.';
    Object.assign(marker.style, { position: 'fixed', left: '0', top: '0', fontSize: '1px', lineHeight: '1px', opacity: '0.02', pointerEvents: 'none' });
    document.body.append(marker);
    requestAnimationFrame(() => {
      b.frame = performance.now();
      if (countElements) {
        b.elements = [...document.querySelectorAll('body *')].filter((e) => e !== marker && e.checkVisibility({ contentVisibilityAuto: true })).length;
      }
    });
  });
  mo.observe(document, { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ['data-prerendered', 'data-link'] });
}

/** A cold load of a case (a fresh context: nothing cached), once the network is idle. */
async function openPage(browser, target, { viewport = VIEWPORTS[0], countElements = false } = {}) {
  const context = await browser.newContext({ viewport });
  await context.addInitScript(watchHeadline, countElements);
  const page = await context.newPage();
  await page.goto(target.url);
  await page.waitForFunction(() => Number.isFinite(window.benchHeadline.frame), null, { timeout: 60_000 });
  await page.waitForLoadState('networkidle');
  return { context, page };
}

/** A cold load of a probe document: its first contentful paint, and its mark probe:answer if it sets one. */
async function probeLoad(browser, url) {
  const context = await browser.newContext({ viewport: VIEWPORTS[0] });
  const page = await context.newPage();
  await page.goto(url);
  const times = await page.evaluate(() => new Promise((resolve) => {
    const answers = () => !document.getElementById('answer') || performance.getEntriesByName('probe:answer').length > 0;
    const fcp = () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime;
    const done = () => resolve({ fcp: fcp() ?? NaN, answer: performance.getEntriesByName('probe:answer')[0]?.startTime ?? NaN });
    const poll = () => (fcp() !== undefined && answers() ? done() : setTimeout(poll, 20));
    poll();
    setTimeout(done, 10_000);
  }));
  await context.close();
  return times;
}

/**
 * The probe documents, written beside dist/'s files: one line of text, alone and under dist/'s
 * stylesheet (its content-hashed name read from the built index.html); and the module's own floor
 * for a link's answer (probe-answer.js, bundled alone by esbuild as dist/'s scripts are): a
 * document without text whose head fetches dist/'s module and data as js/boot.js does, and writes
 * the link's headline figure as its only text once estimated (its bundle and glue preloaded, as the pages' are).
 */
async function writeProbes(root) {
  const index = await readFile(join(root, 'index.html'), 'utf8');
  const sheet = index.match(/<link rel="stylesheet" href="([^"]+)">/)?.[1];
  if (!sheet) throw new Error('dist/index.html links no stylesheet');
  const doc = (head, body = '<p>60.81 GiB of 79.65 GiB</p>') => '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    + `<title>probe</title>${head}</head><body>${body}</body></html>`;
  await writeFile(join(root, 'probe-text.html'), doc(''));
  await writeFile(join(root, 'probe-styled.html'), doc(`<link rel="stylesheet" href="${sheet}">`));
  // dist/'s module, its glue and data by their hashed names; the probe's bundle imports the glue as
  // engine.js names it (../wasm/trainmem.mjs), so a copy goes under that name.
  const wasmFiles = await readdir(join(root, 'wasm'));
  const hashed = (re) => wasmFiles.find((f) => re.test(f)) ?? (() => { throw new Error(`dist/wasm has no ${re}`); })();
  await copyFile(join(root, 'wasm', hashed(/^trainmem\.[0-9a-f]+\.mjs$/)), join(root, 'wasm/trainmem.mjs'));
  esbuild([join(BENCH_DIR, 'probe-answer.js'), '--bundle', '--format=esm', '--minify', `--target=${TARGET}`,
    '--external:../wasm/*', `--outfile=${join(root, 'js/probe-answer.js')}`, '--log-level=warning'], ROOT_DIR);
  const head = '<script>window.trainmemWasm = WebAssembly.compileStreaming(fetch('
    + `'wasm/${hashed(/^trainmem\.[0-9a-f]+\.wasm$/)}')).catch(() => null);`
    + `window.trainmemData = fetch('wasm/${hashed(/^trainmem-data\.[0-9a-f]+\.json$/)}').then((r) => r.json());</script>`
    + '<link rel="modulepreload" href="js/probe-answer.js"><link rel="modulepreload" href="wasm/trainmem.mjs">'
    + '<script type="module" src="js/probe-answer.js"></script>';
  await writeFile(join(root, 'probe-answer.html'), doc(head, '<p id="answer"></p>'));
  // The same document with an empty module (the 8-byte header, WebAssembly core spec §5.5.16):
  // the floor of fetching a module, the build's data and a script before writing a figure, for
  // any estimator however small.
  await writeFile(join(root, 'wasm/probe-empty.wasm'), Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]));
  const emptyHead = '<script>window.probeWasm = WebAssembly.compileStreaming(fetch(\'wasm/probe-empty.wasm\'));'
    + `window.probeData = fetch('wasm/${hashed(/^trainmem-data\.[0-9a-f]+\.json$/)}').then((r) => r.json());</script>`
    + '<script type="module">const [m, d] = await Promise.all([window.probeWasm, window.probeData]);'
    + 'await WebAssembly.instantiate(m, {}); performance.mark(\'probe:answer\');'
    + 'document.getElementById(\'answer\').textContent = `151.85 GiB · ${d.version}`;</script>';
  await writeFile(join(root, 'probe-empty.html'), doc(emptyHead, '<p id="answer"></p>'));
  return [
    { what: 'one line of text', path: 'probe-text.html', fcp: [] },
    { what: 'one line under the stylesheet', path: 'probe-styled.html', fcp: [] },
    { what: 'a link\'s figure through the module', path: `probe-answer.html#${LINK}`, fcp: [], answer: [] },
    { what: 'a figure after an empty module', path: 'probe-empty.html', fcp: [], answer: [] },
  ];
}

async function coldLoad(browser, target) {
  const { context, page } = await openPage(browser, target);
  const t = await page.evaluate(() => {
    const mark = (name) => performance.getEntriesByName(name)[0]?.startTime ?? NaN;
    // A frame cannot show the figure before the page's first contentful paint: a prerendered
    // headline (dist/) is in the document before the stylesheet lets anything paint.
    const fcp = mark('first-contentful-paint');
    // A headline in the document before its first paint was on screen when Element Timing says
    // it was first painted: the frame's presentation, which comes after that frame's animation
    // callbacks. A headline that first showed a dash and was filled in later is measured by the
    // marker painted with the figure (its frame's presentation; the animation frame after the
    // figure arrived where no marker was reported, which leaves the frame's rendering out).
    const { result, painted, presented } = window.benchHeadline;
    const shownAtFirstPaint = Number.isFinite(painted) && painted >= result;
    const figureFrame = Number.isFinite(presented) ? presented : window.benchHeadline.frame;
    const live = mark('trainmem:inputs-live');
    return {
      ...window.benchHeadline,
      frame: shownAtFirstPaint ? painted : Math.max(figureFrame, Number.isFinite(fcp) ? fcp : -Infinity),
      fcp,
      inputs: Number.isFinite(live) ? live : mark('trainmem:first-result'),
      pageChart: mark('trainmem:first-chart'),
      resources: [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
        .map((e) => ({ name: e.name, end: e.responseEnd, wire: e.encodedBodySize, blocking: e.renderBlockingStatus === 'blocking', document: e.entryType === 'navigation' })),
      // In the document before its first paint (dist/'s prerendered headline), not written by the page.
      prerendered: Number.isFinite(fcp) && result <= fcp,
    };
  });
  await context.close();
  return t;
}

/** The elements laid out in the first frame showing the figure: one more load. */
async function elementCount(browser, target) {
  const { context, page } = await openPage(browser, target, { countElements: true });
  const n = await page.evaluate(() => window.benchHeadline.elements);
  await context.close();
  return n;
}

/** Keystrokes on the layer count at one viewport: input -> headline, handler, next frame drawn. */
async function keystrokes(browser, target, viewport) {
  const { context, page } = await openPage(browser, target, { viewport });
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60_000 });
  const input = await page.evaluate(async (n) => {
    const el = document.getElementById('f-num_layers');
    const total = document.getElementById('total');
    // The next frame drawn: the task after the frame's animation callbacks (style, layout and
    // paint run between them), posted from a callback registered before the keystroke, so that
    // it is the first task after that frame (a task the page queues from its own callbacks in
    // that frame comes after it, as it comes after the frame). Also the frame's time stamp: the
    // display's tick it began at.
    const { port1, port2 } = new MessageChannel();
    const drawn = () => new Promise((r) => requestAnimationFrame((tick) => {
      port1.onmessage = () => r({ at: performance.now(), tick });
      port2.postMessage(0);
    }));
    let changedAt = NaN;
    new MutationObserver(() => { if (Number.isNaN(changedAt)) changedAt = performance.now(); })
      .observe(total, { childList: true, subtree: true, characterData: true, attributes: true });
    const out = { headline: [], sync: [], frame: [], tickWait: [], spread: [], still: [] };
    const values = [32, 40, 48, 80];
    // The moment a keystroke is made: after a pause, just after a frame.
    const pause = async () => {
      await new Promise((r) => setTimeout(r, 60)); // idle between keystrokes: what was put off runs
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    };
    const keystroke = (i) => {
      el.value = String(values[i % values.length]);
      el.dispatchEvent(new Event('input', { bubbles: true }));
    };
    for (let i = 0; el && i < n; i += 1) {
      await pause();
      const before = total.textContent;
      changedAt = NaN;
      const t0 = performance.now();
      const frame = drawn();
      keystroke(i);
      const t1 = performance.now();
      const changedInHandler = total.textContent !== before;
      const { at, tick } = await frame;
      out.frame.push(at - t0);
      out.tickWait.push(Math.max(0, tick - t0));
      for (let w = 0; !changedInHandler && Number.isNaN(changedAt) && w < 100; w += 1) await new Promise((r) => setTimeout(r, 10));
      out.sync.push(t1 - t0);
      out.headline.push(changedInHandler ? t1 - t0 : changedAt - t0);
    }
    // Keystrokes as a typist makes them, at any moment of the display's interval: the same
    // loop, each keystroke 0, 2, ... 14 ms after the frame in turn.
    for (let i = 0; el && i < n; i += 1) {
      await pause();
      await new Promise((r) => setTimeout(r, (i % 8) * 2));
      const t0 = performance.now();
      const frame = drawn();
      keystroke(i);
      out.spread.push((await frame).at - t0);
    }
    // The measure's own floor, once the keystrokes are done: the same pause, then the next frame
    // with nothing changed (no keystroke). On the idle page the display starts again with a
    // frame at once, which no keystroke above had (the display still ticks for the one before).
    for (let i = 0; el && i < n; i += 1) {
      await pause();
      const s0 = performance.now();
      out.still.push((await drawn()).at - s0);
    }
    return { ...out, found: Boolean(el) };
  }, KEYSTROKES);
  await context.close();
  return input;
}

/**
 * raw and gzip -9 (the .gz beside it when there is one) sizes of a served file, cached; for a
 * page, also `firstGz`: its gzip up to the end of its first answer (FIRST_ANSWER_END, dist/'s
 * stage-1 template: the result cards after the headline's), what the parser must have read to
 * paint it (a deflate stream decodes in order), NaN for a page without one.
 */
function sizer(root) {
  const cache = new Map();
  return async (path) => {
    if (!cache.has(path)) {
      const body = await readFile(join(root, path));
      const gz = await stat(join(root, `${path}.gz`)).then((s) => s.size, () => gzipSync(body, { level: 9 }).length);
      const end = path.endsWith('.html') ? body.indexOf(FIRST_ANSWER_END) : -1;
      cache.set(path, { raw: body.length, gz, firstGz: end < 0 ? NaN : gzipSync(body.subarray(0, end), { level: 9 }).length });
    }
    return cache.get(path);
  };
}
const FIRST_ANSWER_END = deferredOpening(1);

/** A cold load's responses, split into own assets and Chart.js, with their sizes. */
async function firstLoadBytes(target, load) {
  const rows = [];
  for (const r of load.resources) {
    if (!r.name.startsWith(target.site)) continue;
    let path = new URL(r.name).pathname.slice(new URL(target.site).pathname.length);
    if (!path || path.endsWith('/')) path += 'index.html';
    // What the first answer needs: a prerendered one (painted with the document) the document and
    // what blocks its rendering (the stylesheet); one the page writes, what arrived before it did.
    const needed = r.document || r.blocking || (!load.prerendered && r.end <= load.result);
    const size = await target.size(path);
    // A prerendered answer needs its document only up to the answer's end (the rest, dist/'s
    // stage-2 parts at the document's end, streams in behind it).
    const firstGz = r.document && load.prerendered && Number.isFinite(size.firstGz) ? size.firstGz : size.gz;
    rows.push({ path, wire: r.wire, beforeFrame: needed, ...size, neededGz: firstGz });
  }
  const sum = (list, key) => list.reduce((s, r) => s + r[key], 0);
  const own = rows.filter((r) => !r.path.startsWith('vendor/'));
  const early = own.filter((r) => r.beforeFrame);
  return {
    rows, own: { n: own.length, gz: sum(own, 'gz'), raw: sum(own, 'raw'), wire: sum(own, 'wire') },
    all: { n: rows.length, gz: sum(rows, 'gz'), wire: sum(rows, 'wire') },
    early: { n: early.length, gz: sum(early, 'neededGz') },
  };
}

/** dist/ built from a tree's web/ (the modules and Chart.js as they are), served. */
async function builtSite(label, buildDistOf) {
  const out = await mkdtemp(join(tmpdir(), 'trainmem-bench-dist-'));
  await buildDistOf(out, { build: false });
  const site = await serve({ port: 0, root: out });
  const size = sizer(out);
  const cases = [
    { kind: 'plain', what: 'plain page', url: `${site.url}index.html` },
    { kind: 'link', what: 'shared link', url: `${site.url}index.html#${LINK}` },
    { kind: 'embed', what: 'embed + link', url: `${site.url}embed.html#${LINK}` },
  ].map((c) => ({ ...c, tree: label, name: `${c.what}${label ? ` (${label})` : ''}`, site: site.url, size, loads: [] }));
  return { out, site, cases };
}

const sites = [await builtSite(COMPARE ? 'this tree' : '', buildDist)];
if (COMPARE) {
  const other = await import(pathToFileURL(join(COMPARE, 'web/scripts/build-dist.mjs')).href);
  sites.unshift(await builtSite(COMPARE.split('/').pop(), other.buildDist));
}
const probes = await writeProbes(sites.at(-1).out);
const probeSite = sites.at(-1).site.url;
const targets = sites.flatMap((s) => s.cases);
const web = await serve({ port: 0 });

const node = await measureEstimate({
  engineUrl: pathToFileURL(join(WEB_ROOT, 'js/engine.js')).href,
  linkUrl: pathToFileURL(join(WEB_ROOT, 'js/link-config.js')).href,
  wasmBinary: await readFile(join(WEB_ROOT, 'wasm/trainmem.wasm')),
  data: JSON.parse(await readFile(join(WEB_ROOT, 'wasm/trainmem-data.json'), 'utf8')),
}).catch((error) => ({ us: NaN, error: error.message }));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
for (let i = 0; i < LOADS; i += 1) {
  for (const t of targets) t.loads.push(await coldLoad(browser, t));
  for (const p of probes) {
    const { fcp, answer } = await probeLoad(browser, `${probeSite}${p.path}`);
    p.fcp.push(fcp);
    p.answer?.push(answer);
  }
}
for (const t of targets) {
  t.elements = await elementCount(browser, t);
  t.keys = t.kind === 'embed' ? [] : [];
  if (t.kind !== 'embed') for (const v of VIEWPORTS) t.keys.push({ viewport: v, ...(await keystrokes(browser, t, v)) });
  t.bytes = await firstLoadBytes(t, t.loads.at(-1));
  // What arrived before the frame differs from load to load: the median of all loads.
  t.earlyGz = median(await Promise.all(t.loads.map(async (l) => (await firstLoadBytes(t, l)).early.gz)));
}
let chromiumEstimate;
{
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${web.url}index.html`);
  chromiumEstimate = await page.evaluate(`(${measureEstimate})(${JSON.stringify({ engineUrl: `${web.url}js/engine.js`, linkUrl: `${web.url}js/link-config.js` })})`)
    .catch((error) => ({ us: NaN, error: error.message.split('\n')[0] }));
  await context.close();
}
await browser.close();
web.server.close();
for (const s of sites) {
  s.site.server.close();
  await rm(s.out, { recursive: true, force: true });
}

// Details.
const floor = median(probes[0].fcp);
for (const t of targets) {
  const m = (key) => median(t.loads.map((l) => l[key]));
  console.log(`\n== ${t.name}: ${t.url.slice(t.site.length)}, ${LOADS} cold loads`);
  console.log('First load (until the network is idle):');
  for (const r of t.bytes.rows) {
    console.log(`  ${r.path.padEnd(34)} ${kb(r.raw).padStart(9)} raw ${kb(r.gz).padStart(9)} gzip ${kb(r.wire).padStart(9)} wire${r.beforeFrame ? '' : '  (not needed for the first answer)'}`);
  }
  console.log(`  own assets:            ${kb(t.bytes.own.gz)} gzip, ${kb(t.bytes.own.wire)} on the wire (${kb(t.bytes.own.raw)} raw) in ${t.bytes.own.n} requests`);
  console.log(`  own assets + Chart.js: ${kb(t.bytes.all.gz)} gzip, ${kb(t.bytes.all.wire)} on the wire in ${t.bytes.all.n} requests`);
  console.log(`  needed for the first answer: ${kb(t.bytes.early.gz)} gzip of own assets in ${t.bytes.early.n} requests in this load; median of the loads ${kb(t.earlyGz)}`);
  console.log(`Navigation -> first contentful paint:    median ${ms(m('fcp'))}`);
  console.log(`Navigation -> result in the DOM:         median ${ms(m('result'))}`);
  console.log(`Navigation -> first frame showing it:    median ${ms(m('frame'))} (min ${ms(Math.min(...t.loads.map((l) => l.frame)))}, max ${ms(Math.max(...t.loads.map((l) => l.frame)))}); ${t.elements} elements laid out in it`);
  console.log(`Navigation -> headline element painted:  median ${ms(m('painted'))} (Element Timing)`);
  console.log(`Navigation -> breakdown card painted:    median ${ms(m('breakdown'))} (Element Timing of its heading)`);
  console.log(`Navigation -> inputs respond:            median ${ms(m('inputs'))}; first chart ${ms(m('pageChart'))}`);
  for (const k of t.keys) {
    if (!k.found) console.log('Keystrokes: no #f-num_layers input on the page');
    console.log(`Keystroke at ${k.viewport.width}x${k.viewport.height}: -> next frame drawn median ${ms(median(k.frame), 2)} (max ${ms(Math.max(...k.frame), 2)}; of it waiting for the display's tick ${ms(median(k.tickWait), 2)}, the frame's own ${ms(median(k.frame.map((f, i) => f - k.tickWait[i])), 2)}); at any moment of the interval ${ms(median(k.spread), 2)}; -> headline ${ms(median(k.headline), 2)}; handler ${ms(median(k.sync), 2)}; ${k.frame.length} keystrokes; no keystroke, the same pause on the idle page -> next frame ${ms(median(k.still), 2)} (the measure's floor)`);
  }
}
const fetched = new Set(targets.filter((t) => !t.tree || t.tree === 'this tree').flatMap((t) => t.bytes.rows.map((r) => r.path)));
const notFetched = [];
const webSize = sizer(WEB_ROOT);
for (const dir of ['wasm']) for (const f of await listFiles(join(WEB_ROOT, dir))) if (![...fetched].some((p) => p.startsWith(`${dir}/${f.replace(/\.[^.]+$/, '')}.`))) notFetched.push(`${dir}/${f}`);
console.log('\nModules no first load fetches (the tools module: the importers, the exporters and the planner):');
for (const p of notFetched) {
  const s = await webSize(p);
  console.log(`  ${p.padEnd(34)} ${kb(s.raw).padStart(9)} raw ${kb(s.gz).padStart(9)} gzip`);
}
console.log('\nThis machine\'s paint floor (first contentful paint of a probe document, cold loads interleaved with the above):');
for (const p of probes) {
  const answer = p.answer ? `; estimated at ${ms(median(p.answer))} (min ${ms(Math.min(...p.answer))})` : '';
  console.log(`  ${p.what.padEnd(40)} median ${ms(median(p.fcp))} (min ${ms(Math.min(...p.fcp))})${answer}`);
}
const us = (r) => (Number.isFinite(r.us) ? `${r.us.toFixed(1)} µs a call (median of 9 rounds of ${r.calls})` : `n/a (${r.error})`);
console.log(`engine.estimate(default config) in Node: ${us(node)}; in Chromium (web/): ${us(chromiumEstimate)}`);

// The figures beside their targets.
const verdict = (value, target) => (Number.isFinite(value) && Number.isFinite(target) ? (value <= target ? 'met' : 'NOT met') : '');
const keyAt = (t, i) => median(t.keys[i]?.frame ?? []);
const rows = [
  ['first frame showing the result', (t) => median(t.loads.map((l) => l.frame)), (v) => ms(v, 0), (t) => TARGETS.frame[t.kind] && TARGETS.frame[t.kind] * floor, (t) => TARGETS.frame[t.kind] && `≤ ${TARGETS.frame[t.kind]} × floor`],
  ['result in the DOM', (t) => median(t.loads.map((l) => l.result)), (v) => ms(v, 0), () => NaN, () => ''],
  ['inputs respond (live estimator)', (t) => (t.kind === 'embed' ? NaN : median(t.loads.map((l) => l.inputs))), (v) => ms(v, 0), (t) => TARGETS.inputs[t.kind] && TARGETS.inputs[t.kind] * floor, (t) => TARGETS.inputs[t.kind] && `≤ ${TARGETS.inputs[t.kind]} × floor`],
  ['keystroke -> next frame, 1280x900', (t) => median(t.keys[0]?.spread ?? []), (v) => ms(v), () => TARGETS.keystrokeMs, (t) => t.kind !== 'embed' && `≤ ${TARGETS.keystrokeMs} ms`],
  ['keystroke -> next frame, 390x844', (t) => median(t.keys[1]?.spread ?? []), (v) => ms(v), () => TARGETS.keystrokeMs, (t) => t.kind !== 'embed' && `≤ ${TARGETS.keystrokeMs} ms`],
  ['  just after a frame, 1280x900', (t) => keyAt(t, 0), (v) => ms(v), () => NaN, () => ''],
  ['    of it the wait for the tick', (t) => median(t.keys[0]?.tickWait ?? []), (v) => ms(v), () => NaN, () => ''],
  ['    the frame\'s own time', (t) => median((t.keys[0]?.frame ?? []).map((f, j) => f - t.keys[0].tickWait[j])), (v) => ms(v), () => NaN, () => ''],
  ['  just after a frame, 390x844', (t) => keyAt(t, 1), (v) => ms(v), () => NaN, () => ''],
  ['    of it the wait for the tick', (t) => median(t.keys[1]?.tickWait ?? []), (v) => ms(v), () => NaN, () => ''],
  ['    the frame\'s own time', (t) => median((t.keys[1]?.frame ?? []).map((f, j) => f - t.keys[1].tickWait[j])), (v) => ms(v), () => NaN, () => ''],
  ['  no keystroke (floor), 1280x900', (t) => median(t.keys[0]?.still ?? []), (v) => ms(v), () => NaN, () => ''],
  ['  no keystroke (floor), 390x844', (t) => median(t.keys[1]?.still ?? []), (v) => ms(v), () => NaN, () => ''],
  ['gzip needed for the first answer', (t) => t.earlyGz / 1024, (v) => `${v.toFixed(0)} KB`, (t) => TARGETS.firstKB[t.kind], (t) => `≤ ${TARGETS.firstKB[t.kind]} KB`],
  ['elements laid out in the first frame', (t) => t.elements, (v) => String(v), () => NaN, () => ''],
];
const cell = (s) => s.padEnd(40);
console.log(`\n${'Figure (issue 31), median'.padEnd(38)}${targets.map((t) => cell(t.name)).join('')}`);
for (const [label, value, format, target, targetText] of rows) {
  console.log(`${label.padEnd(38)}${targets.map((t) => {
    const v = value(t);
    if (!Number.isFinite(v)) return cell('—');
    const aim = targetText(t) ? ` ${verdict(v, target(t))} (${targetText(t)})` : '';
    return cell(`${format(v)}${aim}`);
  }).join('')}`);
}
console.log(`Paint floor (one line of text): ${ms(floor, 0)}; under the stylesheet ${ms(median(probes[1].fcp), 0)}. Keystroke target ${TARGETS.keystrokeMs} ms; estimate call ≤ ${TARGETS.estimateUs} µs: Node ${verdict(node.us, TARGETS.estimateUs)}, Chromium ${verdict(chromiumEstimate.us, TARGETS.estimateUs)}.`);
// What the targets ask against the least this module allows (the answer probe, writeProbes): a
// target below the probe's figure cannot be met by any page built on this module on this machine;
// and against the least any module allows (the empty module's probe).
const moduleFloor = probes[2];
const emptyFloor = probes[3];
console.log(`The module's floor (a document that only loads the module and writes the link's figure): first frame ${ms(median(moduleFloor.fcp), 0)}`
  + ` = ${(median(moduleFloor.fcp) / floor).toFixed(2)} × floor (targets: link ${TARGETS.frame.link} ×, embed ${TARGETS.frame.embed} ×);`
  + ` the live estimator's first answer at ${ms(median(moduleFloor.answer), 0)} = ${(median(moduleFloor.answer) / floor).toFixed(2)} × floor`
  + ` (target for the plain page's inputs: ${TARGETS.inputs.plain} ×). With an empty module: first frame ${ms(median(emptyFloor.fcp), 0)}`
  + ` = ${(median(emptyFloor.fcp) / floor).toFixed(2)} × floor.`);
console.log(`(${LOADS} cold loads per case, interleaved; ${KEYSTROKES} keystrokes per viewport; headless Chromium on 127.0.0.1, no GPU; the link: #${LINK})`);
