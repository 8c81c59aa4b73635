// The page's scripts as dist/ serves them: bundled and minified by esbuild (Debian's package,
// installed by tests/setup.sh), so that a first load fetches a few files instead of two dozen
// modules, and fewer bytes. web/ keeps the modules as written (the development server sends them).
//   - Entry points: the modules the pages load (main.js, embed.js), the custom element's module
//     (its URL is public), the planner's worker (new URL('./plan-worker.js', import.meta.url) in
//     plan-panel.js keeps working: the entry keeps its name and folder). Code they share is split
//     into chunks, each fetched once.
//   - The WebAssembly glue (wasm/*.mjs) stays outside the bundles (engine.js imports it on
//     demand, the tools module only when used); it is minified on its own.
//   - boot.js is a classic script: minified, not bundled.
//   - Each page's modulepreload links name what its module imports statically, bundled.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { listFiles } from './assets.mjs';

export const ENTRIES = ['js/main.js', 'js/embed.js', 'js/trainmem-element.js', 'js/plan-worker.js'];
const CLASSIC = ['js/boot.js'];
export const TARGET = 'es2022';

/** Runs Debian's esbuild with `args` in `cwd` (also the page bench's probe, tests/bench/page-bench.mjs). */
export function esbuild(args, cwd) {
  try {
    return execFileSync('esbuild', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    if (error.code === 'ENOENT') throw new Error('esbuild is missing: run bash tests/setup.sh (it installs Debian\'s esbuild)');
    throw new Error(`esbuild ${args.join(' ')}:\n${error.stderr}`);
  }
}

/** A page's modulepreload links for its module `entry`, bundled: the entry and its static imports. */
function preloadsOf(entry, meta) {
  const seen = new Set();
  const visit = (path) => {
    if (seen.has(path)) return;
    seen.add(path);
    for (const im of meta.outputs[path]?.imports ?? []) if (im.kind === 'import-statement' && !im.external) visit(im.path);
  };
  visit(entry);
  return [...seen];
}

/**
 * `files` (path -> bytes, as readPage() gives web/) with the scripts bundled and minified and the
 * pages' modulepreload links rewritten to match.
 */
export async function bundlePage(web, files) {
  const out = await mkdtemp(join(tmpdir(), 'trainmem-bundle-'));
  try {
    esbuild([...ENTRIES, '--bundle', '--splitting', '--format=esm', '--minify', `--target=${TARGET}`,
      '--entry-names=[dir]/[name]', '--chunk-names=js/chunk-[hash]', '--outbase=.', `--outdir=${out}`,
      '--external:../wasm/*', '--legal-comments=none', `--metafile=${join(out, 'meta.json')}`, '--log-level=warning'], web);
    for (const path of CLASSIC) esbuild([path, '--minify', `--target=${TARGET}`, `--outfile=${join(out, path)}`, '--log-level=warning'], web);
    for (const path of [...files.keys()].filter((p) => /^wasm\/.*\.mjs$/.test(p))) {
      esbuild([path, '--minify', '--format=esm', `--target=${TARGET}`, `--outfile=${join(out, path)}`, '--log-level=warning'], web);
    }
    const meta = JSON.parse(await readFile(join(out, 'meta.json'), 'utf8'));
    const bundled = new Map([...files].filter(([p]) => !/^js\/.*\.js$/.test(p)));
    for (const path of await listFiles(out)) {
      if (path === 'meta.json') continue;
      bundled.set(path, await readFile(join(out, path)));
    }
    // The metafile names outputs relative to the folder esbuild ran in (web/).
    const metaKey = (p) => relative(web, join(out, p)).split(sep).join('/');
    const servedPath = (key) => relative(out, join(web, key)).split(sep).join('/');
    for (const page of [...bundled.keys()].filter((p) => p.endsWith('.html'))) {
      const html = bundled.get(page).toString('utf8');
      const entry = /<script type="module"[^>]*\ssrc="(js\/[^"]+\.js)"/.exec(html)?.[1];
      if (!entry) continue;
      const links = preloadsOf(metaKey(entry), meta).map((k) => `<link rel="modulepreload" href="${servedPath(k)}">`);
      const lines = html.split('\n');
      const first = lines.findIndex((l) => /<link rel="modulepreload" href="js\//.test(l));
      if (first < 0) continue;
      const indent = /^\s*/.exec(lines[first])[0];
      const kept = lines.filter((l, i) => i === first || !/<link rel="modulepreload" href="js\//.test(l));
      kept.splice(kept.indexOf(lines[first]), 1, ...links.map((l) => indent + l));
      bundled.set(page, Buffer.from(kept.join('\n')));
    }
    return bundled;
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
