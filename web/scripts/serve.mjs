// Static file server on 127.0.0.1. Module scripts need text/javascript and streaming compilation
// needs application/wasm, which generic servers do not always send.
//   node web/scripts/serve.mjs [port]               dist/ as npm run build wrote it (npm start)
//   node web/scripts/serve.mjs --dev [port]         web/ as it is, for development: edit and reload
//   node web/scripts/serve.mjs --root DIR [port]    any folder
// (port 0 picks a free one; default $PORT or 8080.) For each file it sends the precompressed
// sibling the request accepts (name.br, else name.gz, as build-dist.mjs writes them; web/ has
// none, so it is sent as it is) with Vary: Accept-Encoding; content-hashed names (assets.mjs)
// are cacheable for a year, everything else is revalidated (no-cache, with an ETag).
// Imported by the browser tests and the benchmark: serve({ port: 0 }) -> { server, url }, web/
// by default.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMPRESSIBLE, HASHED, digest } from './assets.mjs';

export const WEB_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST_ROOT = fileURLToPath(new URL('../../dist/', import.meta.url));
export const IMMUTABLE = 'public, max-age=31536000, immutable';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
};
// Preferred first.
const ENCODINGS = [['br', '.br'], ['gzip', '.gz']];

/** The content codings an Accept-Encoding header allows (q > 0; "*" allows any not named). */
export function acceptedEncodings(header = '') {
  const q = new Map();
  for (const part of String(header).split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const qv = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find(Boolean);
    q.set(name, qv ? Number(qv[1]) : 1);
  }
  return new Set(ENCODINGS.map(([name]) => name).filter((name) => (q.get(name) ?? q.get('*') ?? 0) > 0));
}

const isFile = (path) => stat(path).then((s) => (s.isFile() ? s : null), () => null);

/** The file to send for `file`: a precompressed sibling the request accepts, else the file itself. */
async function variant(file, acceptEncoding) {
  if (!(await isFile(file))) return null;
  if (!COMPRESSIBLE.test(file)) return { path: file, encoding: null, varies: false };
  const accepted = acceptedEncodings(acceptEncoding);
  let varies = false;
  for (const [encoding, suffix] of ENCODINGS) {
    const sibling = await isFile(file + suffix);
    varies ||= Boolean(sibling);
    if (sibling && accepted.has(encoding)) return { path: file + suffix, encoding, varies };
  }
  return { path: file, encoding: null, varies };
}

const notFound = (res) => res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found');

async function handle(req, res, root, prefix) {
  let path;
  try {
    path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
  } catch {
    res.writeHead(400).end('bad request');
    return;
  }
  // Served under a sub-path (tests of dist/): only URLs below it exist.
  if (!path.startsWith(prefix)) {
    notFound(res);
    return;
  }
  path = `/${path.slice(prefix.length)}`;
  if (path.endsWith('/')) path += 'index.html';
  const file = normalize(join(root, path));
  // Refuse anything outside the root (e.g. an encoded "..%2F").
  if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) {
    res.writeHead(403).end('forbidden');
    return;
  }
  const sent = await variant(file, req.headers['accept-encoding']);
  if (!sent) {
    notFound(res);
    return;
  }
  const headers = {
    'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
    'Cache-Control': HASHED.test(file) ? IMMUTABLE : 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    // The <trainmem-calculator> element may be loaded by pages of other origins: its module
    // scripts and the .wasm are fetched with CORS (docs/embedding.md).
    'Access-Control-Allow-Origin': '*',
  };
  if (sent.encoding) headers['Content-Encoding'] = sent.encoding;
  if (sent.varies) headers.Vary = 'Accept-Encoding';
  let body;
  try {
    body = await readFile(sent.path);
  } catch {
    notFound(res);
    return;
  }
  headers.ETag = `"${digest(body)}"`;
  if (req.headers['if-none-match']?.split(/\s*,\s*/).includes(headers.ETag)) {
    res.writeHead(304, headers).end();
    return;
  }
  res.writeHead(200, { ...headers, 'Content-Length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/**
 * Starts the server; resolves when it listens. `root` is the folder served (default web/);
 * `prefix` a sub-path it is served under ("/docs/trainmem/"), as a static host might.
 */
export function serve({ port = 0, host = '127.0.0.1', root = WEB_ROOT, prefix = '/' } = {}) {
  return new Promise((resolve, reject) => {
    const server = createServer((req, res) => { handle(req, res, root, prefix); });
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      resolve({ server, url: `http://${host}:${actual}${prefix}` });
    });
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf('--root');
  const root = args.includes('--dev') ? WEB_ROOT : rootAt >= 0 ? resolve(args[rootAt + 1]) : DIST_ROOT;
  const portArg = args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== '--root');
  if (!(await isFile(join(root, 'index.html')))) {
    console.error(`${root} holds no index.html: build it (npm run build), or serve web/ as it is with --dev`);
    process.exit(1);
  }
  const { url } = await serve({ port: Number(portArg ?? process.env.PORT ?? 8080), root: root.endsWith(sep) ? root : root + sep });
  console.log(`trainmem is served at ${url} (${root})`);
}
