// Pure page logic that needs no browser: the preset search and the import-kind detection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { filterPresets, sizeText } from '../../web/js/preset-picker.js';
import { detectKind } from '../../web/js/import-panel.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const ids = (q) => filterPresets(engine.presets, q).map((p) => p.id);

test('preset search: words match at the start of a word, all tokens must match', () => {
  assert.deepEqual(ids('llama 3.1'), ['llama-3.1-8b', 'llama-3.1-70b', 'llama-3.1-405b']);
  assert.ok(ids('7b').includes('mistral-7b-v0.1'));
  assert.ok(!ids('7b').includes('gemma-2-27b'), '"7b" must not find 27B');
  assert.deepEqual(ids('deepseek mla'), ['deepseek-v2-lite', 'deepseek-v3']);
  assert.equal(ids('').length, engine.presets.length);
  assert.deepEqual(ids('no-such-model'), []);
});

test('preset search: sizes as comparisons, ranges and approximate counts', () => {
  for (const id of ids('<4b')) assert.ok(engine.presets.find((p) => p.id === id).published_params.total < 4e9, id);
  assert.ok(ids('>=400b').includes('llama-3.1-405b') && ids('>=400b').includes('deepseek-v3'));
  assert.ok(ids('1t').length === 0);
  assert.ok(ids('7-9b').includes('llama-3.1-8b') && !ids('7-9b').includes('llama-2-13b'));
  assert.ok(ids('moe').every((id) => engine.presets.find((p) => p.id === id).config.num_moe_experts > 0));
  assert.match(sizeText(engine.presets.find((p) => p.id === 'mixtral-8x7b')), /^46\.70 B params, 12\.90 B active$/);
});

test('import kind: a JSON object is a config.json, anything else Megatron arguments', () => {
  assert.equal(detectKind('{"model_type": "llama"}'), 'hf');
  assert.equal(detectKind('  {"model_type": '), 'hf');
  assert.equal(detectKind('torchrun pretrain_gpt.py --num-layers 2'), 'megatron');
  assert.equal(detectKind('--num-layers 2'), 'megatron');
});
