// The share-link format (web/js/url-state.js): round trips, a pinned encoding, and what a reader
// does with tampered, truncated and future links. Values are judged by the core, not here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FIELD_KEYS, FORMAT_VERSION, checksum, decodeState, encodeState, listToText, textToList,
} from '../../web/js/url-state.js';
import { parseInput } from '../../web/js/form.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const specs = new Map(engine.fieldSpecs.map((s) => [s.name, s]));

const STATE = {
  fields: { num_layers: 32, hidden_size: 4096, gated_linear_unit: true, activation_func: 'silu',
    moe_layer_freq: [0, 0, 0, 1, 1, 1], tensor_model_parallel_size: 2 },
  names: ['num_layers', 'hidden_size', 'num_query_groups', 'gated_linear_unit', 'activation_func',
    'moe_layer_freq', 'tensor_model_parallel_size'],
  resolved: { num_query_groups: 32 },
  preset: 'llama-3.1-8b', gpu: 'h100-80gb', capacity: '', unit: 'GiB',
};

test('the encoding of a fixed state is pinned (links made today must stay readable)', () => {
  assert.equal(encodeState(STATE),
    'v=1&m=llama-3.1-8b&L=32&h=4096&g=~32&glu=1&act=silu&freq=0*3,1*3&tp=2&gpu=h100-80gb&u=GiB&ck=17m85re');
});

test('decode(encode(state)) gives back the set fields, the resolved defaults and the page state', () => {
  const back = decodeState(`#${encodeState(STATE)}`, specs);
  assert.deepEqual(back.fields, STATE.fields);
  assert.deepEqual(back.auto, { num_query_groups: 32 });
  assert.equal(back.preset, 'llama-3.1-8b');
  assert.equal(back.gpu, 'h100-80gb');
  assert.equal(back.unit, 'GiB');
  assert.equal(back.version, FORMAT_VERSION);
  assert.equal(back.integrity, 'ok');
  assert.deepEqual(back.rejected, []);
  assert.deepEqual(back.notes, []);
});

test('a custom capacity survives the trip', () => {
  const back = decodeState(encodeState({ ...STATE, gpu: 'custom', capacity: '95.5GiB' }), specs);
  assert.equal(back.gpu, 'custom');
  assert.equal(back.capacity, '95.5GiB');
});

test('every short key names a field the core knows, and no two fields share a key', () => {
  for (const name of Object.keys(FIELD_KEYS)) assert.ok(specs.has(name), name);
  const keys = Object.values(FIELD_KEYS);
  assert.equal(new Set(keys).size, keys.length);
});

test('0/1 layer patterns are written as runs and read in three spellings', () => {
  const pattern = [0, 0, 0, ...Array(58).fill(1)];
  assert.equal(listToText(pattern), '0*3,1*58');
  assert.deepEqual(textToList('0*3,1*58'), pattern);
  assert.deepEqual(textToList('[0]*3+[1]*58'), pattern);
  assert.deepEqual(textToList('[0,0,0,1]'), [0, 0, 0, 1]);
  assert.equal(textToList('[0]*3+banana'), null);
  assert.equal(textToList('1*99999999'), null); // no giant allocations from a link
});

test('unknown keys, pairs without a value and broken escapes are rejected by name; the rest is kept', () => {
  const body = 'v=1&L=32&zzz=4&h&tp=%E0%A4%A&s=4096';
  const back = decodeState(`${body}&ck=${checksum(body)}`, specs);
  assert.deepEqual(back.fields, { num_layers: 32, seq_length: 4096 });
  assert.deepEqual(back.rejected.map((r) => r.key), ['zzz', 'h', 'tp=%E0%A4%A']);
  assert.equal(back.integrity, 'ok');
});

test('values of the wrong shape are kept as text, so the core names the problem', () => {
  const back = decodeState('v=1&L=thirty&glu=maybe&tp=2.5', specs);
  assert.deepEqual(back.fields, { num_layers: 'thirty', gated_linear_unit: 'maybe', tensor_model_parallel_size: 2.5 });
  const result = engine.estimate({ ...back.fields, hidden_size: 64, num_attention_heads: 8, vocab_size: 100,
    seq_length: 16, micro_batch_size: 1 });
  assert.equal(result.ok, false);
  assert.deepEqual(result.issues.map((i) => i.field).sort(),
    ['gated_linear_unit', 'num_layers', 'tensor_model_parallel_size']);
});

test('a truncated or edited link is flagged, and what is left is still read', () => {
  const full = encodeState(STATE);
  const cut = decodeState(full.slice(0, full.indexOf('&act=')), specs);
  assert.equal(cut.integrity, 'missing');
  assert.equal(cut.fields.num_layers, 32);
  const edited = decodeState(full.replace('L=32', 'L=33'), specs);
  assert.equal(edited.integrity, 'mismatch');
  assert.equal(edited.fields.num_layers, 33);
});

test('a link from a newer version is read with the keys this version knows, with a note', () => {
  const back = decodeState('v=7&L=32&warp=9', specs);
  assert.equal(back.version, 7);
  assert.equal(back.fields.num_layers, 32);
  assert.deepEqual(back.rejected.map((r) => r.key), ['warp']);
  assert.match(back.notes.join(' '), /newer trainmem \(link format 7\)/);
});

test('Megatron field names work as keys in a hand-written link', () => {
  const back = decodeState('num_layers=12&hidden_size=768', specs);
  assert.deepEqual(back.fields, { num_layers: 12, hidden_size: 768 });
  assert.match(back.notes.join(' '), /no format version/);
});

test('typed input: separators are allowed in integers, anything else goes to the core as text', () => {
  assert.equal(parseInput('8,192', 'integer'), 8192);
  assert.equal(parseInput(' 8_192 ', 'integer'), 8192);
  assert.equal(parseInput('', 'integer'), undefined);
  assert.equal(parseInput('12a', 'integer'), '12a');
  assert.equal(parseInput('1.5', 'integer'), 1.5);
  assert.equal(parseInput('2', 'integer_or_list'), 2);
  assert.deepEqual(parseInput('[0]*2+[1]', 'integer_or_list'), [0, 0, 1]);
  // A per-stage list: commas or runs, blanks around them; blanks between two numbers would join
  // them ("20 12" is not 2012), and a run of none is no run: both go to the core as text.
  assert.deepEqual(parseInput(' 7 , 8*3 , 7 ', 'integer_list'), [7, 8, 8, 8, 7]);
  assert.deepEqual(parseInput('[7] + [8]*2', 'integer_list'), [7, 8, 8]);
  assert.equal(parseInput('20 12', 'integer_list'), '20 12');
  assert.equal(parseInput('1 6, 16', 'integer_list'), '1 6, 16');
  assert.equal(parseInput('3*0,32', 'integer_list'), '3*0,32');
});

test('the compared figure and a pinned configuration travel in the link and come back', () => {
  const pin = encodeState({ fields: { num_layers: 16, seq_length: 4096 }, names: ['num_layers', 'seq_length'],
    preset: null, gpu: 'h100-80gb', unit: 'GiB' });
  const text = encodeState({ ...STATE, figure: 'reserved', pin });
  const back = decodeState(text, specs);
  assert.equal(back.figure, 'reserved');
  assert.equal(back.pin, pin);
  assert.equal(back.integrity, 'ok');
  assert.deepEqual(back.rejected, []);
  const inner = decodeState(back.pin, specs);
  assert.deepEqual(inner.fields, { num_layers: 16, seq_length: 4096 });
  assert.equal(inner.integrity, 'ok');
  assert.deepEqual(decodeState('v=1&fig=most', specs).rejected.map((r) => r.key), ['fig']);
});

test('trainmem-profile fields have short keys and round-trip, lists included', () => {
  const fields = { framework: 'deepspeed', zero_stage: 3, optimizer: 'adamw', recompute_modules: ['core_attn', 'mlp'],
    optimizer_offload_fraction: 0.5, cuda_context_bytes: 536870912 };
  const names = Object.keys(fields);
  const text = encodeState({ fields, names, preset: null, gpu: 'h100-80gb', unit: 'GiB' });
  assert.match(text, /&fw=deepspeed&zero=3&opt=adamw&rcmod=core_attn,mlp&ooff=0\.5&ctx=536870912&/);
  assert.deepEqual(decodeState(text, specs).fields, fields);
});
