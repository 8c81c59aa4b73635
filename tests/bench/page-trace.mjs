// Where a cold load's time goes (issue 31): one Chromium performance trace per case of dist/ as
// the page bench builds it (web/ as it is, its wasm and Chart.js taken as they are), summarised
// as the main thread's tasks in time order, each with what took its time (script evaluation,
// wasm compilation, style, layout, paint), the page's performance marks among them. Prints,
// asserts nothing.
//   node tests/bench/page-trace.mjs [case ...] [--loads N] [--keep FILE] [--keys WxH]
// case: plain, link or embed (all three by default); --loads: traces per case, the summary of
// the last (the others warm nothing: a fresh context each); --keep: writes the last trace's JSON
// (Chromium's trace format: open it in chrome://tracing or Perfetto). --keys WxH: instead of a
// load, keystrokes on the layer count as page-bench.mjs makes them (just after a frame, 60 ms
// after the one before) at that viewport on plain and link, traced once the page is ready: for
// each, the wait for the display's tick, the frame's main-thread work by kind (with the layout's
// dirty and total objects), and its follow-up (when its details were all on the page, the tasks
// and frames until then).
// What --keys showed (main 8dff56a, 390x844 and 1280x900, 10 keystrokes): the keystroke's frame is
// 3.5-4.5 ms of work (style 0.3, layout 0.4-0.6 of 10-26 dirty objects, pre-paint 0.3-0.7, paint
// 1-2, commit 0.2-3 waiting for the compositor) at both viewports; a keystroke made just after a
// frame waits for the next tick, the interval less what the frame before it took (~14 ms), and
// its follow-up (then a step a frame) drew frames until ~100 ms after it.
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
const KEYS = option('--keys')?.split('x').map(Number);
const KEYSTROKES = 10;
const chosen = args.filter((a, i) => CASES[a] && !['--loads', '--keep', '--keys'].includes(args[i - 1]));
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

/**
 * Keystrokes on a ready page, traced: page-bench.mjs's (just after a frame, 60 ms after the one
 * before), each with the page's reading of its frame (the tick it began at, when it was drawn).
 */
async function traceKeystrokes(browser, site, path, [width, height]) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  await page.goto(`${site}${path}`);
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60_000 });
  await page.waitForTimeout(500);
  await browser.startTracing(page, { categories: ['toplevel', 'devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing', 'cc'] });
  const keys = await page.evaluate(async (n) => {
    const el = document.getElementById('f-num_layers');
    const { port1, port2 } = new MessageChannel();
    const drawn = () => new Promise((r) => requestAnimationFrame((tick) => {
      port1.onmessage = () => r({ at: performance.now(), tick });
      port2.postMessage(0);
    }));
    const values = [32, 40, 48, 80];
    const out = [];
    let keysMade = 0;
    for (let i = 0; i < n; i += 1) {
      await new Promise((r) => setTimeout(r, 60));
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      performance.mark(`trace:key${i}`);
      const t0 = performance.now();
      const frame = drawn();
      el.value = String(values[i % values.length]);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      keysMade += 1;
      // When the keystroke's details are all on the page (main.js trainmemSettled), if before the next.
      let settled = NaN;
      window.trainmemSettled().then(() => { if (keysMade === i + 1) settled = performance.now() - t0; });
      const { at, tick } = await frame;
      out.push({ frame: at - t0, wait: Math.max(0, tick - t0), settled: () => settled });
    }
    await new Promise((r) => setTimeout(r, 200));
    performance.mark(`trace:key${n}`);
    return out.map((k) => ({ ...k, settled: k.settled() }));
  }, KEYSTROKES);
  const trace = JSON.parse((await browser.stopTracing()).toString('utf8'));
  await context.close();
  return { events: trace.traceEvents ?? trace, keys, raw: trace };
}

function summariseKeystrokes(name, { events, keys }) {
  const marks = new Map(events.filter((e) => /^trace:key\d+$/.test(e.name)).map((e) => [Number(e.name.slice(9)), e]));
  const { pid, tid } = marks.get(0);
  const main = events.filter((e) => e.pid === pid && e.tid === tid && e.ph === 'X').sort((a, b) => a.ts - b.ts);
  const within = (outer, e) => e.ts >= outer.ts && e.ts + (e.dur ?? 0) <= outer.ts + outer.dur;
  const sum = (list) => list.reduce((s, e) => s + (e.dur ?? 0), 0) / 1000;
  const f = (x) => x.toFixed(1);
  console.log(`\n== ${name}: keystrokes at ${KEYS.join('x')} (ms; the keystroke's frame: the first BeginMainFrame after it)`);
  const rows = [];
  for (let i = 0; i < keys.length; i += 1) {
    const start = marks.get(i).ts;
    const end = marks.get(i + 1)?.ts ?? Infinity;
    const frames = main.filter((e) => e.name === 'ProxyMain::BeginMainFrame' && e.ts > start && e.ts < end);
    const frame = frames[0];
    if (!frame) continue;
    const inFrame = main.filter((e) => within(frame, e));
    const layouts = inFrame.filter((e) => e.name === 'Layout');
    // The follow-up: the tasks after the keystroke's frame until its details are on the page, and
    // the frames begun by then and one more (the one that draws the last of them).
    const settledAt = Number.isFinite(keys[i].settled) ? start + keys[i].settled * 1000 : end;
    const tasks = main.filter((e) => e.name === 'ThreadControllerImpl::RunTask' && e.ts > frame.ts + frame.dur && e.ts < settledAt);
    const followFrames = frames.filter((e) => e.ts <= settledAt).length + (frames.some((e) => e.ts > settledAt) ? 1 : 0);
    const row = {
      drawn: keys[i].frame, wait: keys[i].wait, work: frame.dur / 1000,
      style: sum(inFrame.filter((e) => e.name === 'UpdateLayoutTree')), layout: sum(layouts),
      objects: layouts.map((e) => `${e.args?.beginData?.dirtyObjects}/${e.args?.beginData?.totalObjects}`).join(' '),
      prePaint: sum(inFrame.filter((e) => e.name === 'PrePaint')), paint: sum(inFrame.filter((e) => e.name === 'Paint' && !inFrame.some((p) => p !== e && p.name === 'Paint' && within(p, e)))),
      commit: sum(inFrame.filter((e) => e.name === 'Commit')), after: sum(tasks), frames: followFrames, settled: keys[i].settled,
    };
    rows.push(row);
    console.log(`  key ${i}: drawn ${f(row.drawn)} (waited ${f(row.wait)} for the tick); its frame ${f(row.work)}: style ${f(row.style)}, layout ${f(row.layout)} (${row.objects} objects), pre-paint ${f(row.prePaint)}, paint ${f(row.paint)}, commit ${f(row.commit)}; its details on the page ${Number.isFinite(row.settled) ? `${f(row.settled)} after the keystroke, ${f(row.after)} of tasks and ${row.frames - 1} more frames` : 'not before the next keystroke'}`);
  }
  const median = (key) => { const v = rows.map((r) => r[key]).filter(Number.isFinite).sort((a, b) => a - b); return v.length ? v[Math.floor(v.length / 2)] : NaN; };
  console.log(`  medians: drawn ${f(median('drawn'))}, waited ${f(median('wait'))}, the frame ${f(median('work'))} (style ${f(median('style'))}, layout ${f(median('layout'))}, pre-paint ${f(median('prePaint'))}, paint ${f(median('paint'))}, commit ${f(median('commit'))}); ${rows.filter((r) => Number.isFinite(r.settled)).length} of ${rows.length} keystrokes' details on the page before the next, median ${f(median('settled'))} after it, ${f(median('after'))} of tasks, ${median('frames') - 1} more frames`);
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
    if (KEYS) {
      if (name === 'embed') continue; // no form
      const traced = await traceKeystrokes(browser, site.url, CASES[name], KEYS);
      summariseKeystrokes(name, traced);
      if (KEEP) await writeFile(KEEP.replace(/(\.json)?$/, `-${name}-keys.json`), JSON.stringify(traced.raw));
      continue;
    }
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
