// npm run build: a self-contained dist/ for any static host, under any sub-path.
//   node web/scripts/build-dist.mjs [outDir] [--no-build]    (default dist/)
// Brings the wasm modules up to date (an incremental build: a stale module is rebuilt, never
// shipped) and vendors Chart.js (--no-build: takes web/ as it is), then writes the page:
//   - every asset under a content-hashed name (js/main.3f2a9c1b.js, wasm/trainmem.8d41c0e2.wasm),
//     with every URL that names it rewritten: HTML src/href (modulepreload and preload links
//     included), ES import specifiers, import(), new URL('…', import.meta.url), the module glue's
//     "trainmem.wasm" (it computes new URL("trainmem.wasm", import.meta.url)), CSS url(). Hashes
//     are taken bottom-up, each over a file's content with its URLs already rewritten, so a file
//     is renamed whenever it or anything it references changes; files that reference each other
//     share one hash of the whole cycle. The names and the rules are in assets.mjs.
//   - index.html, embed.html and js/trainmem-element.js keep their names: they are the URLs people
//     and host pages use (docs/embedding.md). The element is its own module under that name, not
//     a stub importing a hashed copy, so that a host page pays no extra round trip before its
//     imports (hashed like the page's); it is revalidated on each use, like the pages.
//   - next to every compressible file, .gz and .br (serve.mjs sends them; most static hosts can).
//   - the scripts are bundled and minified (bundle.mjs: esbuild), the pages' modulepreload links
//     naming the bundles.
//   - index.html holds the fresh page's first answer, taken from the built page in headless
//     Chromium (prerender.mjs): a visitor without a link sees it before the module has run. The
//     pages' head script (js/boot.js: the module's fetch and compile start there) is inlined in
//     both, allowed by its hash in the CSP (withBootInline). What only the live page needs (the
//     inputs' contents, the explanation, the embed dialog) waits at the document's end, after
//     the first answer (prerender.mjs deferToEnd).
// Every URL in it is relative and nothing needs a server beyond static files (the host should
// send .wasm as application/wasm for streaming compilation; it works without). A URL that names
// an asset by its old name and could not be rewritten (one built at run time) fails the build.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join, relative, resolve } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import {
  COMPRESSIBLE, DOCUMENT, STABLE, TEXT, digest, hashedName, listFiles, references, rewrite,
} from './assets.mjs';
import { bundlePage } from './bundle.mjs';

export { listFiles };
import { deferToEnd, snapshotFirstAnswer, withFirstAnswer } from './prerender.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const web = join(root, 'web');
// What the page is made of; web/scripts (the dev server, build scripts) stays behind.
const PARTS = ['index.html', 'embed.html', 'css', 'js', 'wasm', 'vendor'];

/** The page's files from web/: path -> bytes. */
async function readPage() {
  const files = new Map();
  for (const part of PARTS) {
    const paths = part.includes('.') ? [part] : (await listFiles(join(web, part))).map((p) => `${part}/${p}`);
    for (const p of paths) files.set(p, await readFile(join(web, p)));
  }
  return files;
}

/** Strongly connected components of the reference graph, each after the ones it references (Tarjan). */
function componentsBottomUp(nodes, edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const out = [];
  const visit = (v) => {
    index.set(v, index.size);
    low.set(v, index.get(v));
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      out.push(component.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return out;
}

/**
 * The files as served: new path -> bytes, every asset renamed to its content hash and every
 * reference rewritten. Throws when a text file names an asset by a name it cannot rewrite.
 */
export function hashFiles(files) {
  const exists = (p) => files.has(p);
  const text = new Map();
  const refs = new Map();
  for (const [path, body] of files) {
    if (!TEXT.test(path)) continue;
    text.set(path, body.toString('utf8'));
    refs.set(path, references(text.get(path), path, exists));
  }
  const edges = new Map([...files.keys()].map((p) => [p, new Set((refs.get(p) ?? []).map((r) => r.target))]));
  const names = new Map();
  const out = new Map();
  const keepsName = (p) => STABLE.has(p) || DOCUMENT.test(p);
  for (const component of componentsBottomUp([...files.keys()], edges)) {
    const inside = new Set(component);
    // References out of the component are final; those within it are named after the component.
    const outward = (p) => (text.has(p) ? rewrite(text.get(p), refs.get(p), (t) => (inside.has(t) ? t : names.get(t))) : files.get(p));
    if (component.length === 1 && !edges.get(component[0]).has(component[0])) {
      const [p] = component;
      const body = outward(p);
      names.set(p, keepsName(p) ? p : hashedName(p, digest(body)));
      out.set(names.get(p), Buffer.from(body));
      continue;
    }
    const whole = digest(...component.flatMap((p) => [p, '\0', outward(p), '\0']));
    for (const p of component) names.set(p, keepsName(p) ? p : hashedName(p, digest(whole, p)));
    for (const p of component) {
      out.set(names.get(p), Buffer.from(text.has(p) ? rewrite(text.get(p), refs.get(p), (t) => names.get(t)) : files.get(p)));
    }
  }
  const stale = staleReferences(out, [...files.keys()].filter((p) => !keepsName(p)));
  if (stale.length) throw new Error(`URLs that name an asset by its unhashed name (build them from a literal path, relative to the file):\n  ${stale.join('\n  ')}`);
  return out;
}

/**
 * References in the served text files to `renamed` paths by their old names: the file name right
 * after a quote, "/", "url(" or "}" and before a quote, ")", "?" or "#" ('./engine.js',
 * `${dir}/trainmem.wasm`), which no longer exists. Also used by the tests on a built folder.
 */
export function staleReferences(served, renamed) {
  const names = [...new Set(renamed.map((p) => p.split('/').pop()))].map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const pattern = new RegExp(`(?<=["'\`/}]|url\\()(?:${names.join('|')})(?=["'\`)?#])`, 'g');
  const stale = [];
  if (!names.length) return stale;
  for (const [path, body] of served) {
    if (!TEXT.test(path) || path.startsWith('vendor/')) continue;
    const text = body.toString('utf8');
    for (const m of text.matchAll(pattern)) stale.push(`${path}: …${text.slice(Math.max(0, m.index - 40), m.index + m[0].length + 1)}`);
  }
  return stale;
}

/** No absolute URLs: a root-relative src/href or import would break under a sub-path. */
function absoluteUrls(served) {
  const bad = [];
  for (const [path, body] of served) {
    if (!TEXT.test(path) || path.startsWith('vendor/')) continue;
    for (const m of body.toString('utf8').matchAll(/(?:src|href)=["'](\/[^"']*)["']|from\s+["'](\/[^"']*)["']|import\(["'](\/[^"']*)["']\)|url\((\/[^)]*)\)/g)) {
      bad.push(`${path}: ${m[0]}`);
    }
  }
  return bad;
}

/** gzip -9 and brotli (quality 11) of a file's bytes. */
export function compress(path, body) {
  return {
    gz: gzipSync(body, { level: 9 }),
    br: brotliCompressSync(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
        [constants.BROTLI_PARAM_MODE]: /\.wasm$/.test(path) ? constants.BROTLI_MODE_GENERIC : constants.BROTLI_MODE_TEXT,
      },
    }),
  };
}

/** Writes `body` as `file` with its .gz and .br when it is compressible; returns their sizes. */
async function writeServed(file, path, body) {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, body);
  if (!COMPRESSIBLE.test(path)) return { raw: body.length, gz: 0, br: 0 };
  const { gz, br } = compress(path, body);
  await writeFile(`${file}.gz`, gz);
  await writeFile(`${file}.br`, br);
  return { raw: body.length, gz: gz.length, br: br.length };
}

/**
 * A page (index.html, embed.html) with its classic head script (js/boot.js, which must run before the first paint)
 * inlined and its SHA-256 added to the Content-Security-Policy's script-src, which allows no other
 * inline script: the parser no longer waits for a request before it reaches the answer. Headline
 * first paint, 15 cold loads each, interleaved, in one run on the 2-core machine: 196 ms with the
 * script fetched, 176 ms inlined. The file stays in dist/ (a hashed name nothing else uses).
 */
export function withBootInline(html, served) {
  const tag = /<script src="(js\/boot(?:\.[0-9a-f]+)?\.js)"><\/script>/.exec(html);
  if (!tag) throw new Error('the page does not load js/boot.js');
  const code = served.get(tag[1])?.toString('utf8');
  if (code === undefined) throw new Error(`the page names ${tag[1]}, which the build does not have`);
  // Either would end the element or change how the parser reads the rest of its text.
  if (/<\/script|<!--/i.test(code)) throw new Error('js/boot.js contains "</script" or "<!--": it cannot be inlined');
  const csp = /(<meta http-equiv="Content-Security-Policy" content="[^"]*script-src [^;"]*)/;
  if (!csp.test(html)) throw new Error("the page's Content-Security-Policy has no script-src");
  const hash = createHash('sha256').update(code).digest('base64');
  return html.replace(tag[0], () => `<script>${code}</script>`).replace(csp, (policy) => `${policy} 'sha256-${hash}'`);
}

/**
 * Writes the page into `out` (emptied first). `build: false` takes web/ as it is (the modules and
 * Chart.js must be there); `bundle: false` keeps the modules as written (bundle.mjs);
 * `prerender: false` leaves index.html without its first answer.
 * Resolves to { files, raw, gz, br } (sizes summed over the files).
 */
export async function buildDist(out, { build = true, bundle = true, prerender = true } = {}) {
  // TRAINMEM_PREBUILT=1: take web/wasm and web/vendor as they are (a checkout that has them
  // copied in, without the toolchain to build them).
  if (build && process.env.TRAINMEM_PREBUILT !== '1') {
    execFileSync('bash', [join(web, 'scripts/build-wasm.sh')], { stdio: 'inherit' });
    execFileSync(process.execPath, [join(web, 'scripts/vendor.mjs')], { stdio: 'inherit' });
  }
  const served = hashFiles(bundle ? await bundlePage(web, await readPage()) : await readPage());
  for (const page of ['index.html', 'embed.html']) served.set(page, Buffer.from(withBootInline(served.get(page).toString('utf8'), served)));
  const bad = absoluteUrls(served);
  if (bad.length) throw new Error(`absolute URLs would break under a sub-path:\n  ${bad.join('\n  ')}`);
  await rm(out, { recursive: true, force: true });
  const sizes = { files: served.size, raw: 0, gz: 0, br: 0 };
  const add = (s) => { for (const k of ['raw', 'gz', 'br']) sizes[k] += s[k]; };
  const sizeOf = new Map();
  for (const [path, body] of served) sizeOf.set(path, await writeServed(join(out, path), path, body));
  if (prerender) {
    const index = withFirstAnswer(served.get('index.html').toString('utf8'), await snapshotFirstAnswer(out));
    // What only the live page needs goes to the document's end (prerender.mjs deferToEnd).
    sizeOf.set('index.html', await writeServed(join(out, 'index.html'), 'index.html', Buffer.from(deferToEnd(index, 2))));
  }
  for (const s of sizeOf.values()) add(s);
  return sizes;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  const out = resolve(root, args.find((a) => !a.startsWith('--')) ?? 'dist');
  try {
    const s = await buildDist(out, { build: !args.includes('--no-build') });
    const kb = (n) => `${(n / 1024).toFixed(0)} KB`;
    console.log(`dist: ${s.files} files, ${kb(s.raw)} (${kb(s.gz)} gzip, ${kb(s.br)} brotli) in ${relative(root, out) || '.'}/`);
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
