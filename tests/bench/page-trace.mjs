// Where a cold load's time goes (issue 31): one Chromium performance trace per case of dist/ as
// the page bench builds it (web/ as it is, its wasm and Chart.js taken as they are), summarised
// as the main thread's tasks in time order, each with what took its time (script evaluation,
// wasm compilation, style, layout, paint), the page's performance marks among them. Prints,
// asserts nothing.
//   node tests/bench/page-trace.mjs [case ...] [--loads N] [--keep FILE]
// case: plain, link or embed (all three by default); --loads: traces per case, the summary of
// the last (the others warm nothing: a fresh context each); --keep: writes the last trace's JSON
// (Chromium's trace format: open it in chrome://tracing or Perfetto).
// What it showed for the link (issue 31, main 504be6f, this 2-core machine at load 4-9; the
// page's marks, medians of 7 cold loads without tracing): first paint 108-124 ms; main.js runs at
// 151-165 ms, as its bundle and chunks arrive (96-116 ms; the wasm, compiled as it streams from
// the head, arrives at 103-125 ms); the glue and WebAssembly.instantiate of the compiled module
// take under 1 ms, the Emscripten runtime and Embind 3-6 ms; the Engine constructor 30-45 ms
// (fieldSpecsText 8.5, presets 3.9, resultSchemaText 2.9, the slot codec 4.1 ms: the first calls
// into the module's code); restoreLink 20-28 ms; the first view (estimate and suggestions)
// 17-30 ms; writing the answer 8-10 ms: the answer at ~250-270 ms. Traced, the first calls
// compile 631 wasm functions lazily on the main thread (~32 ms) while TurboFan's tier-up takes
// ~300 ms of the thread pool.
// The answer's frame then laid out its cards for 33-59 ms, most of it loading fonts (24 lookups,
// 23 of 33 ms). Laying the cards out hidden while the module loaded took that frame's layout to
// 8-10 ms but moved the same font loading before the answer, on this machine for no net gain
// (headline painted 384 / 400 ms, 12 interleaved loads), and it lays out the fresh page's
// answer, which a link never shows: not kept.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../web/scripts/serve.mjs';
import { buildDist } from '../../web/scripts/build-dist.mjs';

const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const LOADS = Number(option('--loads') ?? 1);
const KEEP = option('--keep');
const LINK = 'v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb';
const CASES = { plain: 'index.html', link: `index.html#${LINK}`, embed: `embed.html#${LINK}` };
const chosen = args.filter((a, i) => CASES[a] && !['--loads', '--keep'].includes(args[i - 1]));
const CATEGORIES = [
  'toplevel', 'devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing',
  'v8', 'v8.execute', 'disabled-by-default-v8.compile', 'v8.wasm', 'disabled-by-default-v8.wasm.detailed', 'loading', 'fonts',
];

// What a task's time is spent on, by the trace event names that say it (their own time, children
// subtracted, so nothing counts twice).
const KINDS = [
  ['html', /^ParseHTML$/],
  // Loading a font face, and a sync call to the browser for each new size (in layout).
  ['fonts', /^(FontCache::GetFontPlatformData|WebSandboxSupportLinux::GetWebFontRenderStyleForStrike|FontDataManager)/],
  ['wasm compile', /wasm.*(Compile|compile)|CompileLazy|v8\.wasm\.(compile|lazy)/],
  ['js compile', /^v8\.(compile|parse)|V8\.Compile|ScriptCompiler|v8\.compileModule|PreParse/],
  ['script', /^(EvaluateScript|v8\.evaluateModule|FunctionCall|v8\.callFunction|RunMicrotasks|V8\.Execute|v8\.run|TimerFire|FireAnimationFrame|EventDispatch|HandlePostMessage|v8\.execute)$/],
  ['gc', /GC|MinorGC|MajorGC|V8\.GC/],
  ['style', /^(UpdateLayoutTree|RecalculateStyles|ParseAuthorStyleSheet|ScheduleStyleRecalculation)$/],
  ['layout', /^(Layout|UpdateLayout)$/],
  ['paint', /^(Paint|PrePaint|Layerize|UpdateLayer|UpdateLayerTree|PaintImage|CompositeLayers|Commit)$/],
];
const kindOf = (name) => KINDS.find(([, re]) => re.test(name))?.[0] ?? 'other';

/** One cold load of `path` with a trace: the trace's events and the page's marks. */
async function traceLoad(browser, site, path) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await browser.startTracing(page, { categories: CATEGORIES });
  await page.goto(`${site}${path}`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 60_000 });
  await page.waitForTimeout(300);
  const marks = await page.evaluate(() => [
    ...performance.getEntriesByType('mark').map((m) => ({ name: m.name, at: m.startTime })),
    ...performance.getEntriesByType('paint').map((m) => ({ name: m.name, at: m.startTime })),
  ]);
  const trace = JSON.parse((await browser.stopTracing()).toString('utf8'));
  await context.close();
  return { events: trace.traceEvents ?? trace, marks, raw: trace };
}

/** The renderer's main thread: the CrRendererMain whose ParseHTML read `path`. */
function mainThread(events, path) {
  const names = events.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
  const parsed = events.find((e) => e.name === 'ParseHTML' && String(e.args?.beginData?.url ?? '').includes(path.split('#')[0]));
  const t = names.find((n) => parsed && n.pid === parsed.pid && n.tid === parsed.tid) ?? names[0];
  return { pid: t.pid, tid: t.tid };
}

/** Complete events of a thread as a tree of {name, start, end, children} (µs). */
function eventTree(events, { pid, tid }) {
  const spans = [];
  const open = [];
  for (const e of events.filter((x) => x.pid === pid && x.tid === tid).sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0))) {
    if (e.ph === 'X') spans.push({ name: e.name, start: e.ts, end: e.ts + (e.dur ?? 0), args: e.args });
    else if (e.ph === 'B') open.push({ name: e.name, start: e.ts, args: e.args });
    else if (e.ph === 'E') {
      const b = open.pop();
      if (b) spans.push({ ...b, end: e.ts });
    }
  }
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const roots = [];
  const stack = [];
  for (const s of spans) {
    s.children = [];
    while (stack.length && stack.at(-1).end <= s.start) stack.pop();
    (stack.at(-1)?.children ?? roots).push(s);
    stack.push(s);
  }
  return roots;
}

/** A span's time by kind: each descendant's own time (its children's taken out). */
function byKind(span, into = new Map(), inherited = 'other') {
  const own = span.end - span.start - span.children.reduce((s, c) => s + (c.end - c.start), 0);
  const kind = kindOf(span.name) === 'other' ? inherited : kindOf(span.name);
  into.set(kind, (into.get(kind) ?? 0) + own);
  for (const c of span.children) byKind(c, into, kind);
  return into;
}

/** The script's URL a task ran, short: the file name without its hash. */
function scriptOf(span) {
  for (const s of [span, ...span.children.flatMap((c) => [c, ...c.children])]) {
    const url = s.args?.data?.url ?? s.args?.data?.scriptName ?? s.args?.fileName;
    if (url) return String(url).split('/').pop().replace(/\.[0-9a-f]{8,}\./, '.');
  }
  return '';
}

function summarise(name, { events, marks }, path) {
  const thread = mainThread(events, path);
  const nav = events.find((e) => e.name === 'navigationStart' && e.pid === thread.pid)
    ?? events.find((e) => e.name === 'navigationStart');
  const zero = nav.ts;
  const ms = (us) => (us / 1000).toFixed(1).padStart(7);
  const tasks = eventTree(events, thread).filter((s) => s.end - s.start >= 2000 && s.start >= zero);
  console.log(`\n== ${name}: ${path} (times from navigation start, ms; main-thread tasks of 2 ms or more)`);
  const rows = [
    ...tasks.map((t) => ({ at: (t.start - zero) / 1000, line: () => {
      const kinds = [...byKind(t)].filter(([, us]) => us >= 500).sort((a, b) => b[1] - a[1]).map(([k, us]) => `${k} ${(us / 1000).toFixed(1)}`);
      const script = scriptOf(t);
      return `${ms(t.start - zero)} +${ms(t.end - t.start)}  ${kinds.join(', ')}${script ? `  [${script}]` : ''}`;
    } })),
    ...marks.map((m) => ({ at: m.at, line: () => `${m.at.toFixed(1).padStart(7)}   mark ${m.name}` })),
  ].sort((a, b) => a.at - b.at);
  for (const r of rows) console.log(r.line());
  const busy = new Map();
  for (const t of tasks) for (const [k, us] of byKind(t)) busy.set(k, (busy.get(k) ?? 0) + us);
  const end = Math.max(...marks.filter((m) => /link-answer|first-result|inputs-live/.test(m.name)).map((m) => m.at), 0);
  console.log(`  main thread in these tasks, by kind (ms): ${[...busy].sort((a, b) => b[1] - a[1]).map(([k, us]) => `${k} ${(us / 1000).toFixed(0)}`).join(', ')}`);
  if (end) console.log(`  (the page's first-answer mark at ${end.toFixed(0)} ms)`);
}

const out = await mkdtemp(join(tmpdir(), 'trainmem-trace-dist-'));
await buildDist(out, { build: false });
const site = await serve({ port: 0, root: out });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  for (const name of chosen.length ? chosen : Object.keys(CASES)) {
    let last;
    for (let i = 0; i < LOADS; i += 1) last = await traceLoad(browser, site.url, CASES[name]);
    summarise(name, last, CASES[name]);
    if (KEEP) await writeFile(KEEP.replace(/(\.json)?$/, `-${name}.json`), JSON.stringify(last.raw));
  }
} finally {
  await browser.close();
  site.server.close();
  await rm(out, { recursive: true, force: true });
}
