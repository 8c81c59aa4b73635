// The framework's words in the form after an import (web/js/framework-words.js, issue 32 item 5):
// each field shows the key the imported file used for it. The expected keys are the files' own
// (the torchtune recipe's `batch_size` and `enable_activation_checkpointing`, config.json's
// `intermediate_size`, Megatron-LM's `--num-layers`), read through the core's real importers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { keysRead } from '../../web/js/framework-words.js';
import { parseDocument } from '../../web/js/import-panel.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
await engine.loadTools();
const fixture = (path) => readFile(new URL(`../import/fixtures/${path}`, import.meta.url), 'utf8');

test('a torchtune recipe: batch_size, enable_activation_checkpointing, model.lora_rank; a product of keys names none', async () => {
  const { tree } = await parseDocument(await fixture('torchtune/llama3_1-8B_qlora_single_device.yaml'), 'yaml');
  const result = engine.importFramework('torchtune', tree, { gpus: 1 }, { seq_length: 2048 });
  const keys = keysRead(result.keys);
  assert.equal(keys.get('micro_batch_size'), 'batch_size');
  assert.equal(keys.get('recompute_granularity'), 'enable_activation_checkpointing');
  assert.equal(keys.get('lora_rank'), 'model.lora_rank');
  assert.equal(keys.has('global_batch_size'), false, 'batch_size × gradient_accumulation_steps × ranks is no one key');
});

test('a config.json: intermediate_size and num_hidden_layers; a key of the same name adds nothing', () => {
  const result = engine.importHfConfig(JSON.stringify({ model_type: 'llama', hidden_size: 4096, num_hidden_layers: 32, num_attention_heads: 32, intermediate_size: 11008, vocab_size: 32000 }), {});
  const keys = keysRead(result.keys);
  assert.equal(keys.get('ffn_hidden_size'), 'intermediate_size');
  assert.equal(keys.get('num_layers'), 'num_hidden_layers');
  assert.equal(keys.has('hidden_size'), false);
});

test('Megatron-LM arguments: the flags', () => {
  const result = engine.importMegatronArgs('--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 --vocab-size 32000', {});
  const keys = keysRead(result.keys);
  assert.equal(keys.get('num_layers'), '--num-layers');
  assert.equal(keys.get('micro_batch_size'), '--micro-batch-size');
});
