// The import panel's "Fetch config.json from the Hub" (web/js/hub-config.js, issue 32 item 2): the
// address it builds, the page's CSP it checks first, and the message for each way it can fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { DEFAULT_HUB, allowedByCsp, connectSources, fetchHubConfig, hubBase, hubConfigUrl, rememberBase, rememberedBase } from '../../web/js/hub-config.js';

const html = await readFile(new URL('../../web/index.html', import.meta.url), 'utf8');
const policy = /<meta http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)[1];
const PAGE = 'http://127.0.0.1:8080';

test('the address: {base}/{id}/resolve/main/config.json, the id checked, the base a http(s) URL', () => {
  assert.equal(hubConfigUrl(DEFAULT_HUB, ' Qwen/Qwen2.5-14B ').url, 'https://huggingface.co/Qwen/Qwen2.5-14B/resolve/main/config.json');
  assert.equal(hubConfigUrl('https://hf-mirror.com///', 'gpt2').url, 'https://hf-mirror.com/gpt2/resolve/main/config.json');
  assert.equal(hubConfigUrl('', 'a/b').url, 'https://huggingface.co/a/b/resolve/main/config.json', 'an empty base is the default');
  assert.match(hubConfigUrl(DEFAULT_HUB, '').error, /^Model id: give/);
  for (const bad of ['../etc', 'a/b/c', 'a b', 'a/..', 'https://huggingface.co/x']) assert.match(hubConfigUrl(DEFAULT_HUB, bad).error, /^Model id: .* is not a Hub repository id/, bad);
  assert.match(hubBase('file:///etc').error, /^Hub address: must start with https:\/\/ or http:\/\//);
  assert.match(hubBase('huggingface dot co').error, /^Hub address: .* is not a URL/);
  assert.match(hubBase('https://huggingface.co/?x=1').error, /no query/);
});

test('index.html\'s connect-src lets the page reach the Hub, its mirror and a local one, nothing else; the panel\'s note names the same', () => {
  const sources = connectSources(policy);
  const allowed = (url) => allowedByCsp(sources, url, PAGE);
  assert.ok(allowed('https://huggingface.co/Qwen/Qwen2.5-14B/resolve/main/config.json'));
  assert.ok(allowed('https://hf-mirror.com/gpt2/resolve/main/config.json'));
  assert.ok(allowed('http://127.0.0.1:41234/a/resolve/main/config.json') && allowed('http://localhost:3000/a'));
  assert.ok(allowed(`${PAGE}/wasm/trainmem.wasm`), "'self'");
  for (const url of ['https://example.com/a', 'http://huggingface.co/a', 'https://evil.huggingface.co.example/a', 'http://10.0.0.1/a']) assert.ok(!allowed(url), url);
  const note = /<p class="hint" id="import-hub-note">([\s\S]*?)<\/p>/.exec(html)[1];
  for (const source of sources.filter((s) => s !== "'self'")) {
    assert.ok(note.includes(source.replace(/:\*$/, '')), `the note does not name ${source}`);
  }
});

test('CSP source matching: schemes, wildcards and ports as CSP Level 3 reads them', () => {
  assert.ok(allowedByCsp(['https:'], 'https://a.example/x', PAGE));
  assert.ok(!allowedByCsp(['https:'], 'http://a.example/x', PAGE));
  assert.ok(allowedByCsp(['*.hf.co'], 'https://cdn.hf.co/x', PAGE) && !allowedByCsp(['*.hf.co'], 'https://hf.co/x', PAGE));
  assert.ok(allowedByCsp(['https://a.example:8443'], 'https://a.example:8443/x', PAGE) && !allowedByCsp(['https://a.example'], 'https://a.example:8443/x', PAGE));
  assert.ok(!allowedByCsp(["'none'"], `${PAGE}/x`, PAGE));
  assert.ok(allowedByCsp(null, 'https://anything.example/', PAGE), 'no policy: nothing blocks');
  assert.deepEqual(connectSources("default-src 'self'; img-src data:"), ["'self'"], 'connect-src falls back to default-src');
});

/** A fetch that answers with `status`, `headers` and `body`, recording the request. */
function fakeFetch(status, body = '', headers = {}) {
  const calls = [];
  const fn = async (url, init) => {
    calls.push({ url, init });
    return new Response(body, { status, headers });
  };
  fn.calls = calls;
  return fn;
}
const options = (fetchImpl) => ({ fetchImpl, policy, pageOrigin: PAGE });

test('a config.json fetched: the text as it came, its model_type; no credentials sent', async () => {
  const text = '{"model_type": "qwen2", "hidden_size": 5120}';
  const fetchImpl = fakeFetch(200, text, { 'Content-Type': 'application/json' });
  const got = await fetchHubConfig(DEFAULT_HUB, 'Qwen/Qwen2.5-14B', options(fetchImpl));
  assert.deepEqual(got, { ok: true, text, url: 'https://huggingface.co/Qwen/Qwen2.5-14B/resolve/main/config.json', modelType: 'qwen2' });
  assert.equal(fetchImpl.calls.length, 1);
  assert.equal(fetchImpl.calls[0].init.credentials, 'omit');
});

test('each failure is a sentence naming what to do, and a blocked or malformed request is never made', async () => {
  const cases = [
    [fakeFetch(401, '', { 'X-Error-Code': 'GatedRepo' }), /meta-llama\/Llama-3.1-8B is a gated model \(the Hub answered 401\): accept its licence/],
    [fakeFetch(401), /The Hub answered 401 for meta-llama\/Llama-3.1-8B: the model is gated or private .* or no such model exists/],
    [fakeFetch(403), /is a gated model \(the Hub answered 403\)/],
    [fakeFetch(404, '', { 'X-Error-Code': 'EntryNotFound' }), /^Not found \(404\): meta-llama\/Llama-3.1-8B has no config.json on its main branch/],
    [fakeFetch(404), /^Not found \(404\): no model meta-llama\/Llama-3.1-8B at https:\/\/huggingface.co/],
    [fakeFetch(500, 'oops'), /https:\/\/huggingface.co answered 500/],
    [fakeFetch(200, '<html>login</html>'), /is not JSON .*is the Hub address right\?/],
    [fakeFetch(200, '[1, 2]'), /is not a config.json \(a JSON object\)/],
    [async () => { throw new TypeError('Failed to fetch'); }, /^No answer from https:\/\/huggingface.co \(Failed to fetch\): offline, the address is wrong, or the server does not allow this page to read it \(CORS\)/],
  ];
  for (const [fetchImpl, message] of cases) {
    const got = await fetchHubConfig(DEFAULT_HUB, 'meta-llama/Llama-3.1-8B', options(fetchImpl));
    assert.equal(got.ok, false);
    assert.match(got.message, message);
  }
  const never = fakeFetch(200, '{}');
  const blocked = await fetchHubConfig('https://models.example.org', 'a/b', options(never));
  assert.match(blocked.message, /^This page may not connect to https:\/\/models.example.org: its Content-Security-Policy \(connect-src\) allows 'self' https:\/\/huggingface.co/);
  const badId = await fetchHubConfig(DEFAULT_HUB, 'a/b/c', options(never));
  assert.match(badId.message, /^Model id:/);
  assert.equal(never.calls.length, 0);
});

test('the base is remembered only when it is not the default; storage that refuses is no error', () => {
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v), removeItem: (k) => store.delete(k) };
  assert.equal(rememberedBase(storage), DEFAULT_HUB);
  rememberBase('http://127.0.0.1:9000', storage);
  assert.equal(rememberedBase(storage), 'http://127.0.0.1:9000');
  rememberBase(DEFAULT_HUB, storage);
  assert.equal(store.size, 0);
  const refusing = { getItem() { throw new Error('SecurityError'); }, setItem() { throw new Error('SecurityError'); }, removeItem() { throw new Error('SecurityError'); } };
  assert.equal(rememberedBase(refusing), DEFAULT_HUB);
  rememberBase('http://x', refusing);
});

test('the question the panel answers: each importer that names a model by its Hub id asks for it by rule id and model_asked (no message read), and takes the config.json as options.model', async () => {
  const { loadEngine } = await import('./load.mjs');
  const { MODEL_NOT_A_PRESET, modelAsked, parseDocument } = await import('../../web/js/import-panel.js');
  const engine = await loadEngine();
  const fixture = (path) => readFile(new URL(`../import/fixtures/${path}`, import.meta.url), 'utf8');
  const qwen = await readFile(new URL('../data/hf/qwen2.5-14b.json', import.meta.url), 'utf8');
  const runs = [
    ['axolotl', (await fixture('axolotl/llama-3-qlora.yml')).replace(/^base_model:.*$/m, 'base_model: Qwen/Qwen2.5-14B'), 'yaml', { gpus: 1 }, 'base_model'],
    ['accelerate', await fixture('accelerate/peft-fsdp_config_qlora.yaml'), 'yaml',
      { launch: 'accelerate launch --config_file c.yaml train.py --model_name_or_path Qwen/Qwen2.5-14B --max_seq_len 2048 --bf16 True --per_device_train_batch_size 1' }, '--model_name_or_path'],
    ['deepspeed', await fixture('deepspeed/zero3_bf16.json'), 'json',
      { launch: 'torchrun --nproc_per_node 8 train.py --model_name_or_path Qwen/Qwen2.5-14B --deepspeed ds.json --per_device_train_batch_size 1 --bf16 True --max_length 2048' }, '--model_name_or_path'],
  ];
  for (const [kind, text, format, options, key] of runs) {
    const { tree } = await parseDocument(text, format);
    const asked = engine.importFramework(kind, tree, options, {});
    assert.equal(asked.ok, false, kind);
    const question = asked.issues.find((i) => i.rule === MODEL_NOT_A_PRESET);
    assert.ok(question, `${kind}: ${JSON.stringify(asked.issues)}`);
    assert.deepEqual([question.field, modelAsked(asked)], [key, 'Qwen/Qwen2.5-14B'], kind);
    assert.ok(question.message.includes('"Qwen/Qwen2.5-14B" is not the Hugging Face repository of a trainmem preset'), question.message);
    const answered = engine.importFramework(kind, tree, { ...options, model: qwen }, {});
    assert.equal(answered.ok, true, `${kind}: ${JSON.stringify(answered.issues)}`);
    assert.equal(answered.config.num_layers, 48, kind);
    assert.equal(answered.config.hidden_size, 5120, kind);
  }
});
