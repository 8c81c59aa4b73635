// dist/ as npm start and npm run build make it: content-hashed names with every reference
// rewritten, .gz and .br beside each compressible file, and the server sending the coding a
// request accepts with the cache headers. Builds dist/ from web/ as it is (the modules must be
// built) into a temporary folder and serves it on a free port.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { buildDist, hashFiles, listFiles, staleReferences, withBootInline } from '../../web/scripts/build-dist.mjs';
import { createHash } from 'node:crypto';
import { DOCUMENT, HASHED, STABLE } from '../../web/scripts/assets.mjs';
import { IMMUTABLE, WEB_ROOT, acceptedEncodings, serve } from '../../web/scripts/serve.mjs';
import { deferElement, deferToEnd } from '../../web/scripts/prerender.mjs';

/** GET without decoding: { status, headers, body } with the bytes as sent. */
const fetchRaw = (url, headers = {}) => new Promise((resolve, reject) => {
  get(url, { headers }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
  }).on('error', reject);
});

let out;
let site;
let files;
before(async () => {
  out = await mkdtemp(join(tmpdir(), 'trainmem-serve-'));
  await buildDist(out, { build: false });
  files = await listFiles(out);
  site = await serve({ port: 0, root: out });
});
after(async () => {
  site?.server.close();
  await rm(out, { recursive: true, force: true });
});

const served = (pattern) => {
  const found = files.find((f) => pattern.test(f));
  assert.ok(found, `dist/ has no file like ${pattern}: ${files.join(' ')}`);
  return found;
};

describe('dist/ served compressed', () => {
  for (const pattern of [/^js\/main\.[0-9a-f]{8}\.js$/, /^wasm\/trainmem\.[0-9a-f]{8}\.wasm$/]) {
    test(`${pattern.source}: brotli, gzip or identity as accepted, each the file's bytes`, async () => {
      const path = served(pattern);
      const bytes = await readFile(join(out, path));
      const cases = [['br', 'br', brotliDecompressSync], ['gzip, deflate', 'gzip', gunzipSync],
        ['gzip, deflate, br', 'br', brotliDecompressSync], ['br;q=0, gzip', 'gzip', gunzipSync],
        ['identity', undefined, (b) => b], [undefined, undefined, (b) => b]];
      for (const [accept, coding, decode] of cases) {
        const r = await fetchRaw(site.url + path, accept ? { 'accept-encoding': accept } : {});
        assert.equal(r.status, 200);
        assert.equal(r.headers['content-encoding'], coding, `Accept-Encoding: ${accept}`);
        assert.equal(r.headers.vary, 'Accept-Encoding');
        assert.equal(r.headers['cache-control'], IMMUTABLE);
        assert.equal(r.headers['access-control-allow-origin'], '*');
        assert.equal(r.headers['content-type'], path.endsWith('.wasm') ? 'application/wasm' : 'text/javascript; charset=utf-8');
        assert.equal(Number(r.headers['content-length']), r.body.length);
        assert.ok(decode(r.body).equals(bytes), `Accept-Encoding: ${accept}: the body decodes to other bytes`);
        if (coding) assert.ok(r.body.length < bytes.length / 2, `${coding} sends ${r.body.length} of ${bytes.length} bytes`);
      }
    });
  }

  test('stable names are revalidated (no-cache, ETag: 304 when unchanged)', async () => {
    for (const path of ['', 'index.html', 'embed.html', 'js/trainmem-element.js']) {
      const r = await fetchRaw(site.url + path, { 'accept-encoding': 'gzip, br' });
      assert.equal(r.status, 200, path);
      assert.equal(r.headers['cache-control'], 'no-cache', path);
      assert.equal(r.headers['content-encoding'], 'br', path);
      const again = await fetchRaw(site.url + path, { 'accept-encoding': 'gzip, br', 'if-none-match': r.headers.etag });
      assert.equal(again.status, 304, path);
      assert.equal(again.body.length, 0);
    }
  });

  test('every compressible file has a .gz and a .br that decode to it', async () => {
    for (const path of files.filter((f) => /\.(html|js|mjs|css|wasm)$/.test(f))) {
      const bytes = await readFile(join(out, path));
      assert.ok(gunzipSync(await readFile(join(out, `${path}.gz`))).equals(bytes), `${path}.gz`);
      assert.ok(brotliDecompressSync(await readFile(join(out, `${path}.br`))).equals(bytes), `${path}.br`);
    }
  });
});

// The URLs a page follows: HTML src/href, ES imports, import(), new URL(…, import.meta.url), and
// the module glue's quoted "x.wasm" (not JSDoc's extension-less type imports).
function urlsIn(text, html) {
  const pattern = html
    ? /\s(?:src|href)="([^"#][^"]*)"/g
    : /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)["'`]([^"'`]+)["'`]|["']([\w.-]+\.wasm)["']/g;
  return [...text.matchAll(pattern)].map((m) => m[1] ?? m[2]).filter((u) => !/^(?:data:|https?:)/.test(u) && /\.\w+(?:[?#].*)?$/.test(u));
}

describe('every URL of the pages and the element', () => {
  test('resolves (200), and names a content-hashed file or a stable one', async () => {
    const seen = new Map();
    const queue = ['index.html', 'embed.html', 'js/trainmem-element.js'].map((p) => new URL(p, site.url).href);
    while (queue.length) {
      const url = queue.shift();
      if (seen.has(url)) continue;
      const r = await fetchRaw(url);
      const path = url.slice(site.url.length);
      seen.set(url, r.status);
      assert.equal(r.status, 200, url);
      assert.ok(HASHED.test(path) || STABLE.has(path), `${path} is referenced by an unhashed name`);
      if (/\.(html|m?js|css)$/.test(path)) {
        for (const u of urlsIn(r.body.toString('utf8'), path.endsWith('.html'))) queue.push(new URL(u, url).href);
      }
    }
    const paths = [...seen.keys()].map((u) => u.slice(site.url.length));
    // The modules are bundled (web/scripts/bundle.mjs): shared code is in chunks.
    for (const p of [/^js\/main\./, /^js\/chunk-/, /^js\/plan-worker\./, /^wasm\/trainmem\.[0-9a-f]+\.mjs$/,
      /^wasm\/trainmem\.[0-9a-f]+\.wasm$/, /^wasm\/trainmem-tools\.[0-9a-f]+\.wasm$/, /^vendor\/chart\.umd\./, /^css\/app\./]) {
      assert.ok(paths.some((x) => p.test(x)), `nothing reached ${p.source}: ${paths.join(' ')}`);
    }
  });

  test('dist/ holds hashed names, the stable ones, licences and their .gz/.br; no old name is referenced', async () => {
    const web = (await Promise.all(['css', 'js', 'wasm', 'vendor'].map(async (d) => (await listFiles(join(WEB_ROOT, d))).map((f) => `${d}/${f}`)))).flat();
    const renamed = web.filter((p) => !STABLE.has(p) && !DOCUMENT.test(p));
    for (const f of files) {
      const base = f.replace(/\.(gz|br)$/, '');
      assert.ok(HASHED.test(base) || STABLE.has(base) || DOCUMENT.test(base), `${f} is neither hashed nor stable`);
      assert.ok(!renamed.includes(base), `${f} kept its name`);
    }
    const texts = new Map(await Promise.all(files.filter((f) => /\.(html|m?js|css)$/.test(f)).map(async (f) => [f, await readFile(join(out, f))])));
    assert.deepEqual(staleReferences(texts, renamed), []);
  });
});

describe('hashing', () => {
  const page = (entries) => new Map(Object.entries(entries).map(([p, t]) => [p, Buffer.from(t)]));
  const names = (m) => [...m.keys()].sort();
  const base = {
    'index.html': '<script type="module" src="js/a.js"></script><link rel="preload" href="wasm/m.wasm">',
    'js/a.js': "import { b } from './b.js';\nconst w = new URL('./w.js', import.meta.url);",
    'js/b.js': "export const b = () => import('../wasm/m.mjs');",
    'js/w.js': "import { b } from './b.js';",
    'wasm/m.mjs': 'var f=new URL("m.wasm",import.meta.url)',
    'wasm/m.wasm': '\0asm1',
    'js/trainmem-element.js': "import { b } from './b.js';",
  };

  test('a change below a file renames it and every file above it, and nothing else', () => {
    const one = hashFiles(page(base));
    const two = hashFiles(page({ ...base, 'wasm/m.wasm': '\0asm2' }));
    const three = hashFiles(page({ ...base, 'js/w.js': "import { b } from './b.js'; // edited" }));
    assert.deepEqual(names(one).filter((n) => !HASHED.test(n)), ['index.html', 'js/trainmem-element.js']);
    const changed = (x, y) => names(x).filter((n) => !y.has(n)).map((n) => n.replace(/\.[0-9a-f]{8}\./, '.'));
    assert.deepEqual(changed(two, one), ['js/a.js', 'js/b.js', 'js/w.js', 'wasm/m.mjs', 'wasm/m.wasm']);
    assert.deepEqual(changed(three, one), ['js/a.js', 'js/w.js']);
    assert.notEqual(one.get('index.html').toString(), two.get('index.html').toString());
    const glue = names(one).find((n) => n.startsWith('wasm/m.') && n.endsWith('.mjs'));
    assert.match(one.get(glue).toString(), /new URL\("m\.[0-9a-f]{8}\.wasm",import\.meta\.url\)/);
  });

  test('files that import each other are renamed together', () => {
    const cyclic = { ...base, 'js/b.js': "import './a.js';\nexport const b = 1;" };
    const one = hashFiles(page(cyclic));
    const two = hashFiles(page({ ...cyclic, 'js/a.js': `${cyclic['js/a.js']}\n// edited` }));
    const a = names(one).find((n) => n.startsWith('js/a.'));
    const b = names(one).find((n) => n.startsWith('js/b.'));
    assert.ok(one.get(a).toString().includes(`'./${b.slice(3)}'`) && one.get(b).toString().includes(`'./${a.slice(3)}'`));
    assert.ok(!two.has(a) && !two.has(b));
  });

  test('a URL built at run time from an old name fails the build', () => {
    assert.throws(() => hashFiles(page({ ...base, 'js/b.js': 'export const b = (d) => import(`${d}/m.mjs`);' })), /unhashed name[^]*js\/b\.[0-9a-f]{8}\.js/);
  });
});

describe('development: web/ as it is', () => {
  test('served uncompressed, revalidated, with CORS for the element', async () => {
    const dev = await serve({ port: 0 });
    try {
      for (const path of ['index.html', 'js/engine.js', 'wasm/trainmem.wasm']) {
        const r = await fetchRaw(dev.url + path, { 'accept-encoding': 'gzip, deflate, br' });
        assert.equal(r.status, 200, path);
        assert.equal(r.headers['content-encoding'], undefined, path);
        assert.equal(r.headers['cache-control'], 'no-cache', path);
        assert.equal(r.headers['access-control-allow-origin'], '*', path);
        assert.ok(r.body.equals(await readFile(join(WEB_ROOT, path))), path);
      }
    } finally {
      dev.server.close();
    }
  });

  test('Accept-Encoding: q=0 refuses a coding, * allows the ones not named', () => {
    assert.deepEqual([...acceptedEncodings('gzip, deflate, br')], ['br', 'gzip']);
    assert.deepEqual([...acceptedEncodings('br;q=0, gzip;q=0.5')], ['gzip']);
    assert.deepEqual([...acceptedEncodings('*;q=0.1, gzip;q=0')], ['br']);
    assert.deepEqual([...acceptedEncodings('identity')], []);
    assert.deepEqual([...acceptedEncodings()], []);
  });
});

describe('the first document defers what its first frame need not lay out', () => {
  test('an element is wrapped whole in a template, nested elements of its tag included', () => {
    const html = '<p>a</p><section id="how"><section>in</section><p>b</p></section><section>after</section>';
    assert.equal(deferElement(html, '<section id="how"', 2),
      '<p>a</p><template data-deferred="2"><section id="how"><section>in</section><p>b</p></section></template><section>after</section>');
  });
  test('a missing or unclosed element fails the build, naming it', () => {
    assert.throws(() => deferElement('<main></main>', '<dialog id="embed-dialog"', 2), /no <dialog id="embed-dialog">/);
    assert.throws(() => deferElement('<section id="how"><section></section>', '<section id="how"', 2), /not closed/);
  });
  test('index.html has the elements the build defers', async () => {
    const index = await readFile(join(WEB_ROOT, 'index.html'), 'utf8');
    for (const opening of ['<section id="how"', '<dialog id="embed-dialog"']) assert.match(deferElement(index, opening, 2), /<template data-deferred="2">/);
  });
});

describe('what only the live page needs waits at the document\'s end, after the first answer', () => {
  const html = '<!doctype html>\n<html lang="en">\n<head></head><body><template data-deferred="2"><div id="inputs">x</div></template>'
    + '<p id="answer">a</p><template data-deferred="1"><p>cards</p></template><template data-deferred="2"><section id="how"></section></template>\n</body>\n</html>';
  test('each stage-2 template leaves an empty one with its index; its contents move before </body>, stage 1 stays', () => {
    assert.equal(deferToEnd(html, 2), '<!doctype html>\n<html lang="en">\n<head></head><body><template data-deferred="2" data-part="0"></template>'
      + '<p id="answer">a</p><template data-deferred="1"><p>cards</p></template><template data-deferred="2" data-part="1"></template>\n'
      + '<template data-part="0"><div id="inputs">x</div></template>\n<template data-part="1"><section id="how"></section></template>\n</body>\n</html>');
  });
  test('a document without stage-2 templates, without </body>, or with a template inside a part, fails the build', () => {
    assert.throws(() => deferToEnd('<html><body></body></html>', 2), /no <template data-deferred="2">/);
    assert.throws(() => deferToEnd('<html><body><template data-deferred="2">x</template>', 2), /no <\/body>/);
    assert.throws(() => deferToEnd('<body><template data-deferred="2"><template>t</template>x</template></body>', 2), /holds a <template>/);
  });
});

describe('the head script is inlined, allowed by its hash alone', () => {
  const page = `<meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'">
  <script src="js/boot.0123abcd.js"></script>`;
  test('the script text replaces the tag and its SHA-256 joins script-src', () => {
    const code = "document.documentElement.setAttribute('data-x','');\n";
    const out = withBootInline(page, new Map([['js/boot.0123abcd.js', Buffer.from(code)]]));
    const hash = createHash('sha256').update(code).digest('base64');
    assert.ok(out.includes(`<script>${code}</script>`));
    assert.ok(out.includes(`script-src 'self' 'wasm-unsafe-eval' 'sha256-${hash}'; style-src 'self'`));
    assert.ok(!out.includes('src="js/boot'));
  });
  test('a page without it, a missing file or a script that would end or escape the tag fails the build', () => {
    assert.throws(() => withBootInline('<p></p>', new Map()), /does not load js\/boot.js/);
    assert.throws(() => withBootInline(page, new Map()), /does not have/);
    for (const text of ['"</script>"', '"<!--"']) {
      assert.throws(() => withBootInline(page, new Map([['js/boot.0123abcd.js', Buffer.from(text)]])), /cannot be inlined/);
    }
  });
});
