// Times the estimator module's calls as the page makes them, for one or more builds of the module in
// one run (interleaved rounds, so a loaded machine slows each alike), and prints each build's size.
// Asserts nothing.
//   [ROUNDS=9] node tests/bench/module-compare.mjs [dir-or-wasm ...]     default: web/wasm/trainmem.wasm
// Each argument is a trainmem.wasm (or a folder holding one) with its glue trainmem.mjs beside it
// and its data trainmem-data.json (web/scripts/engine-data.mjs; builds before it cannot be compared
// with this Engine).
// Cases: the fresh page's config (restoreLink('')) and issue 31's link (70B, TP 8, PP 2, DP 4,
// 8,192 tokens on an H100: a run that does not fit, so its answer carries suggestions), each as
// engine.estimate and as engine.view (what a keystroke calls); and the cold start: glue import,
// instantiate, the Engine constructor, the first view of the link.
import { readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { Engine } from '../../web/js/engine.js';
import { restoreLink } from '../../web/js/link-config.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const LINK = 'v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb';
const ROUNDS = Number(process.env.ROUNDS ?? 9);

async function wasmPath(arg) {
  const path = resolve(arg);
  return (await stat(path)).isDirectory() ? join(path, 'trainmem.wasm') : path;
}
const builds = await Promise.all((process.argv.length > 2 ? process.argv.slice(2) : [join(ROOT, 'web/wasm')]).map(async (arg) => {
  const wasm = await wasmPath(arg);
  const binary = await readFile(wasm);
  // A query makes each glue a module of its own (the glue keeps state at module level).
  const glue = (await import(`${pathToFileURL(wasm.replace(/\.wasm$/, '.mjs')).href}?${Math.random()}`)).default;
  const dataText = await readFile(join(dirname(wasm), 'trainmem-data.json'), 'utf8');
  return { label: arg, binary, glue, dataText };
}));

async function coldStart(build) {
  const t0 = performance.now();
  const module = await build.glue({ wasmBinary: build.binary });
  // The data's parse is part of the start, as the page's fetch and parse are.
  const engine = new Engine(module, JSON.parse(build.dataText));
  const { config } = restoreLink(LINK, engine);
  engine.view(config);
  return { ms: performance.now() - t0, engine };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cold = new Map(builds.map((b) => [b, []]));
for (let round = 0; round < 4; round++) { // the first round also warms up the shared JS: not counted
  for (const build of builds) {
    const { ms, engine } = await coldStart(build);
    if (round > 0) cold.get(build).push(ms);
    build.engine = engine;
  }
}

const cases = builds.map((b) => {
  const fresh = restoreLink('', b.engine).config;
  const link = restoreLink(LINK, b.engine).config;
  return [
    ['estimate, fresh page', () => b.engine.estimate(fresh)],
    ['view, fresh page', () => b.engine.view(fresh)],
    ['view, the 70B link (does not fit)', () => b.engine.view(link)],
  ];
});
const timings = builds.map(() => cases[0].map(() => []));
// CPU time of this process, not the wall clock: the machine is shared, and a build running beside
// the bench takes the core away for whole time slices.
const batch = (call, n) => {
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) call();
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / n;
};
for (const [bi] of builds.entries()) {
  for (const [, call] of cases[bi]) for (const t0 = performance.now(); performance.now() - t0 < 300;) batch(call, 10);
}
for (let round = 0; round < ROUNDS; round++) {
  for (const [bi] of builds.entries()) {
    cases[bi].forEach(([, call], ci) => {
      const per = batch(call, 10);
      timings[bi][ci].push(batch(call, Math.max(10, Math.ceil(50_000 / Math.max(per, 1)))));
    });
  }
}

for (const [bi, build] of builds.entries()) {
  const gz = gzipSync(build.binary, { level: 9 }).length;
  console.log(`${build.label}: ${(build.binary.length / 1024).toFixed(1)} KB raw, ${(gz / 1024).toFixed(1)} KB gzip;` +
    ` cold start to the link's first view ${median(cold.get(build)).toFixed(0)} ms (median of 3)`);
  cases[bi].forEach(([name], ci) => console.log(`  ${name.padEnd(36)} ${median(timings[bi][ci]).toFixed(1).padStart(8)} µs of CPU a call` +
    ` (median of ${ROUNDS} rounds; fastest round ${Math.min(...timings[bi][ci]).toFixed(1)} µs)`));
}
