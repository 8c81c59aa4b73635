// Static file server for web/ on 127.0.0.1. Module scripts need text/javascript and streaming
// compilation needs application/wasm, which generic servers do not always send.
//   node web/scripts/serve.mjs [port]     (port 0 picks a free one; default $PORT or 8080)
// Imported by the browser tests and the benchmark: serve({ port: 0 }) -> { server, url }.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WEB_ROOT = fileURLToPath(new URL('..', import.meta.url));

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
};

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
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found');
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
  try {
    if (!(await stat(file)).isFile()) throw new Error('not a file');
    const body = await readFile(file);
    res.writeHead(200, {
      'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
      // The <trainmem-calculator> element may be loaded by pages of other origins: its module
      // scripts and the .wasm are fetched with CORS (docs/embedding.md).
      'Access-Control-Allow-Origin': '*',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found');
  }
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
  const { url } = await serve({ port });
  console.log(`trainmem is served at ${url}`);
}
