// How dist/ names and packs its files: one place for the build (build-dist.mjs), the server
// (serve.mjs), their test (tests/web/serve.test.mjs) and the page benchmark.
//   - Every asset is written as name.<hash>.ext, the hash taken over its content after the URLs
//     in it were rewritten to the hashed names of what they reference, so a change anywhere below
//     a file renames it; such a file never changes and is cached for a year.
//   - STABLE files keep their names (revalidated on every use): the two pages, and the custom
//     element's module, whose URL host pages embed (docs/embedding.md).
//   - Next to every COMPRESSIBLE file, name.gz (gzip -9) and name.br (brotli, quality 11).
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join, posix, relative, sep } from 'node:path';

export const STABLE = new Set(['index.html', 'embed.html', 'js/trainmem-element.js']);

const HASH_DIGITS = 8;
/** A content-hashed name: "js/main.3f2a9c1b.js". */
export const HASHED = new RegExp(`\\.[0-9a-f]{${HASH_DIGITS}}\\.[a-z0-9]+$`);
export const COMPRESSIBLE = /\.(html|js|mjs|css|wasm|json|svg|txt|md|map)$/;
/** Files whose text may hold URLs of other files. */
export const TEXT = /\.(html|js|mjs|css|svg)$/;
/** Files that are not assets of the page and keep their names (licence texts). */
export const DOCUMENT = /\.(md|txt)$/;

/** The first HASH_DIGITS hex digits of the SHA-256 of the given parts. */
export function digest(...parts) {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex').slice(0, HASH_DIGITS);
}

/** "js/main.js" with hash "3f2a9c1b" -> "js/main.3f2a9c1b.js" (the hash goes before the last extension). */
export function hashedName(path, hash) {
  const ext = posix.extname(path);
  return `${path.slice(0, path.length - ext.length)}.${hash}${ext}`;
}

// A URL in a text file: a quoted string that is nothing but a relative path (HTML attributes, ES
// import specifiers, import(), new URL('...', import.meta.url), the module glue's "x.wasm"), or a
// CSS url(). Absolute URLs (scheme, "//", "/") are never a file of the folder.
const QUOTED = /(["'`])([^"'`\s<>()\\]+)\1/g;
const CSS_URL = /url\(\s*([^"'\s)]+)\s*\)/g;
const EXTERNAL = /^(?:[a-z][a-z0-9+.-]*:|\/|#)/i;

/**
 * Every URL in `text` (the file `from`, a path relative to the folder) that names a file of the
 * folder: [{ index, length, value, target }], `value` the URL as written, `target` the file's path.
 * A URL is resolved against the file's folder, and, in a script, against the folder's root too
 * (a script's fetch() or script.src resolves against the page, and the pages sit at the root).
 * `exists(path)` says whether the folder holds the file.
 */
export function references(text, from, exists) {
  const found = [];
  const dir = posix.dirname(from);
  const script = /\.m?js$/.test(from);
  const add = (index, value) => {
    if (EXTERNAL.test(value)) return;
    const path = value.replace(/[?#].*$/, '');
    if (!path || path.endsWith('/')) return;
    const candidates = [posix.normalize(posix.join(dir, path))];
    if (script) candidates.push(posix.normalize(path));
    const target = candidates.find((p) => !p.startsWith('..') && exists(p));
    if (target) found.push({ index, length: value.length, value, target });
  };
  for (const m of text.matchAll(QUOTED)) add(m.index + 1, m[2]);
  if (/\.(css|html)$/.test(from)) for (const m of text.matchAll(CSS_URL)) add(m.index + m[0].indexOf(m[1]), m[1]);
  return found.sort((a, b) => a.index - b.index);
}

/**
 * `text` with each reference's path replaced by `rename(target)`, relative to the file as it was
 * written (a query or fragment is kept).
 */
export function rewrite(text, refs, rename) {
  let out = '';
  let at = 0;
  for (const ref of refs) {
    const path = ref.value.replace(/[?#].*$/, '');
    const suffix = ref.value.slice(path.length);
    const base = posix.basename(path);
    const renamed = `${path.slice(0, path.length - base.length)}${posix.basename(rename(ref.target))}${suffix}`;
    out += text.slice(at, ref.index) + renamed;
    at = ref.index + ref.length;
  }
  return out + text.slice(at);
}

/** Every file below `dir`, as paths relative to `base` with "/" separators, sorted. */
export async function listFiles(dir, base = dir) {
  const list = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) list.push(...(await listFiles(p, base)));
    else list.push(relative(base, p).split(sep).join('/'));
  }
  return list.sort();
}
