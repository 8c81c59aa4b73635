// `npm start` as a newcomer runs it: it sets up, builds what the page needs and serves it. The
// test starts it on a free port, waits for the page, the estimator module and Chart.js, then
// stops it (the whole process group: bash, then the server it exec'd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

const root = new URL('../../', import.meta.url).pathname;

const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

test('npm start serves the built calculator: the page, the estimator module and Chart.js, compressed', { timeout: 300_000 }, async () => {
  const port = await freePort();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: root, env: { ...process.env, PORT: String(port) }, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const base = `http://127.0.0.1:${port}/`;
    const deadline = Date.now() + 280_000;
    let page = null;
    while (!page && Date.now() < deadline) {
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 500))]);
      assert.equal(code, undefined, `npm start exited (${code}) before serving:\n${log}`);
      page = await fetch(base).then((r) => (r.ok ? r : null), () => null);
    }
    assert.ok(page, `npm start did not serve ${base} in time:\n${log}`);
    const html = await page.text();
    assert.match(html, /<title>[^<]*trainmem/i);
    // npm start serves dist/: content-hashed names, found in the page as a browser finds them.
    const url = (pattern) => {
      const m = pattern.exec(html);
      assert.ok(m, `the page names no ${pattern.source}`);
      return new URL(m[1], base).href;
    };
    // The head's boot script starts compiling the module (compileStreaming(fetch("wasm/…"))).
    const wasm = await fetch(url(/fetch\("(wasm\/trainmem\.[0-9a-f]{8}\.wasm)"/), { headers: { 'accept-encoding': 'br' } });
    assert.equal(wasm.status, 200);
    assert.equal(wasm.headers.get('content-type'), 'application/wasm');
    assert.equal(wasm.headers.get('content-encoding'), 'br');  // fetch() decodes it
    assert.equal(Buffer.from(await wasm.arrayBuffer()).subarray(0, 4).toString('hex'), '0061736d');  // \0asm
    assert.equal((await fetch(url(/href="(vendor\/chart\.umd\.[0-9a-f]{8}\.js)"/))).status, 200);
  } finally {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
    await exited;
  }
});
