// npm run build: a self-contained dist/ for any static host, under any sub-path.
//   node web/scripts/build-dist.mjs [outDir]    (default dist/)
// Brings the wasm modules up to date (an incremental build: a stale module is rebuilt, never
// shipped) and vendors Chart.js, then copies the page: every URL in it is relative, and nothing
// needs a server beyond static files
// (the host should send .wasm as application/wasm for streaming compilation; it works without).
import { cp, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join, relative, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('../../', import.meta.url));
const web = join(root, 'web');
const args = process.argv.slice(2);
const out = resolve(root, args.find((a) => !a.startsWith('--')) ?? 'dist');

execFileSync('bash', [join(web, 'scripts/build-wasm.sh')], { stdio: 'inherit' });
execFileSync(process.execPath, [join(web, 'scripts/vendor.mjs')], { stdio: 'inherit' });

// What the page is made of; web/scripts (the dev server, build scripts) stays behind.
const PARTS = ['index.html', 'embed.html', 'css', 'js', 'wasm', 'vendor'];
await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
for (const part of PARTS) await cp(join(web, part), join(out, part), { recursive: true });

// No absolute URLs: a root-relative src/href or import would break under a sub-path.
async function files(dir) {
  const list = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) list.push(...(await files(p)));
    else list.push(p);
  }
  return list;
}
const all = await files(out);
const bad = [];
for (const f of all.filter((p) => /\.(html|css|js|mjs)$/.test(p) && !p.includes('/vendor/'))) {
  const text = await readFile(f, 'utf8');
  for (const m of text.matchAll(/(?:src|href)=["'](\/[^"']*)["']|from\s+["'](\/[^"']*)["']|import\(["'](\/[^"']*)["']\)|url\((\/[^)]*)\)/g)) {
    bad.push(`${relative(out, f)}: ${m[0]}`);
  }
}
if (bad.length) {
  console.error(`absolute URLs would break under a sub-path:\n  ${bad.join('\n  ')}`);
  process.exit(1);
}
let raw = 0;
let gz = 0;
for (const f of all) {
  const body = await readFile(f);
  raw += body.length;
  gz += gzipSync(body, { level: 9 }).length;
}
console.log(`dist: ${all.length} files, ${(raw / 1024).toFixed(0)} KB (${(gz / 1024).toFixed(0)} KB gzip) in ${relative(root, out) || '.'}/`);
