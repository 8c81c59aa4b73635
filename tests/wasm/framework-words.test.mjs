// The framework's words in the form after an import (web/js/framework-words.js, issue 32 item 5):
// each field shows the key the imported file used for it. The expected keys are the files' own
// (the torchtune recipe's `batch_size` and `enable_activation_checkpointing`, config.json's
// `intermediate_size`, Megatron-LM's `--num-layers`), read through the core's real importers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { frameworksInUse, keysRead, valueSpelling } from '../../web/js/framework-words.js';
import { TORCHTUNE_DISTRIBUTED_RULE, plannerBase, recipeFramework, recipeNotice } from '../../web/js/recipe-words.js';
import { methodNotice } from '../../web/js/method-defaults.js';
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

// The framework in use for a run built by hand or from a link (framework-words.js runFrameworks):
// from the core's resolved config, its words from the generated table (framework-keys.js).
import { formWords, runFrameworks } from '../../web/js/framework-words.js';
import { FRAMEWORK_KEYS } from '../../web/js/framework-keys.js';

const preset = engine.presets.find((p) => p.id === 'llama-3.1-8b');
const resolvedOf = (fields) => {
  const { result } = engine.view({ ...preset.config, seq_length: 2048, micro_batch_size: 2, ...fields });
  assert.ok(result.ok, JSON.stringify(result.issues));
  return result.config;
};
const wordsOf = (fields) => formWords(null, runFrameworks(resolvedOf(fields), fields, true));
const shown = (words, field) => (words.has(field) ? `${words.get(field).framework}: ${words.get(field).key}` : null);

test('a torchtune run built by hand speaks torchtune: batch_size, tokenizer.max_seq_len', () => {
  const words = wordsOf({ framework: 'ddp', model_implementation: 'torchtune' });
  assert.equal(shown(words, 'micro_batch_size'), 'torchtune: batch_size');
  assert.equal(shown(words, 'seq_length'), 'torchtune: tokenizer.max_seq_len');
  assert.equal(shown(words, 'global_batch_size'), null, 'a product of keys names none');
  assert.equal(shown(words, 'num_layers'), null, 'torchtune names no model dimension: its model builder does');
});

test('the page\'s default run (Megatron) speaks Megatron-LM\'s flags', () => {
  const words = wordsOf({});
  assert.equal(shown(words, 'micro_batch_size'), 'Megatron-LM: --micro-batch-size');
  assert.equal(shown(words, 'num_layers'), 'Megatron-LM: --num-layers');
  assert.equal(shown(words, 'tensor_model_parallel_size'), 'Megatron-LM: --tensor-model-parallel-size');
});

test('fsdp2 resolves to torchtitan\'s model code, and speaks torchtitan', () => {
  const words = wordsOf({ framework: 'fsdp2' });
  assert.equal(shown(words, 'micro_batch_size'), 'torchtitan: training.batch_size');
  assert.equal(shown(words, 'seq_length'), 'torchtitan: training.seq_len');
});

test('a Hugging Face run: accelerate\'s words; with DeepSpeed, its config keys and no accelerate YAML key', () => {
  const ddp = wordsOf({ framework: 'ddp' });
  assert.equal(shown(ddp, 'micro_batch_size'), 'accelerate: --per_device_train_batch_size');
  const ds = wordsOf({ framework: 'deepspeed', zero_stage: 3 });
  assert.equal(shown(ds, 'zero_stage'), 'DeepSpeed: zero_optimization.stage');
  assert.equal(shown(ds, 'micro_batch_size'), 'accelerate: --per_device_train_batch_size');
  for (const [field, word] of ds) {
    assert.ok(word.framework === 'DeepSpeed' ? !word.key.startsWith('--') : word.key.startsWith('--'),
      `${field}: ${word.framework}: ${word.key} is no DeepSpeed config key nor a launch flag`);
  }
});

test('every word a run shows is its framework\'s key in the generated table', () => {
  for (const fields of [{}, { framework: 'ddp' }, { framework: 'fsdp2' }, { framework: 'deepspeed' }, { framework: 'ddp', model_implementation: 'torchtune' }]) {
    const tables = Object.values(FRAMEWORK_KEYS);
    for (const [field, word] of wordsOf(fields)) {
      assert.ok(tables.some((t) => t[field] === word.key), `${JSON.stringify(fields)}: ${field} ← ${word.key} is in no table`);
      assert.notEqual(word.key, field);
    }
  }
});

test('a config that does not resolve keeps the framework its fields give', () => {
  const megatron = resolvedOf({});
  // TP 3 breaks the heads' rule: the last valid result is Megatron's, the fields name torchtune.
  const words = formWords(null, runFrameworks(megatron, { framework: 'ddp', model_implementation: 'torchtune', tensor_model_parallel_size: 3 }, false));
  assert.equal(shown(words, 'micro_batch_size'), 'torchtune: batch_size');
  // Another framework without a model_implementation: the core's default for it is not guessed.
  assert.equal(formWords(null, runFrameworks(megatron, { framework: 'ddp' }, false)).size, 0);
  // Nothing changed about the framework: the last valid one's words stay.
  assert.equal(shown(formWords(null, runFrameworks(megatron, { micro_batch_size: 0 }, false)), 'micro_batch_size'), 'Megatron-LM: --micro-batch-size');
});

test('an import names the framework: its file\'s keys, then its table; a config.json leaves the rest to the run', () => {
  const megatronRun = runFrameworks(resolvedOf({}), {}, true);
  const torchtuneRun = runFrameworks(resolvedOf({ framework: 'ddp', model_implementation: 'torchtune' }), {}, true);
  const torchtune = formWords({ kind: 'torchtune', keys: { micro_batch_size: 'batch_size' } }, torchtuneRun);
  assert.equal(shown(torchtune, 'micro_batch_size'), 'torchtune: batch_size');
  assert.equal(torchtune.get('micro_batch_size').file, true);
  assert.equal(shown(torchtune, 'seq_length'), 'torchtune: tokenizer.max_seq_len', 'from the table');
  assert.equal(torchtune.get('seq_length').file, false);
  // The words before the import's own result came (the screen before was Megatron's): the file's alone.
  const before = formWords({ kind: 'torchtune', keys: { micro_batch_size: 'batch_size' } }, megatronRun);
  assert.deepEqual([...before.keys()], ['micro_batch_size'], 'no Megatron-LM flag on a torchtune import');
  // An accelerate file whose run is DeepSpeed's: DeepSpeed's keys, the launch flags, no FSDP key.
  const dsRun = runFrameworks(resolvedOf({ framework: 'deepspeed', zero_stage: 3 }), {}, true);
  const accelerate = formWords({ kind: 'accelerate', keys: { micro_batch_size: '--per_device_train_batch_size' } }, dsRun);
  assert.equal(shown(accelerate, 'zero_stage'), 'DeepSpeed: zero_optimization.stage');
  assert.equal(shown(accelerate, 'offload_params'), null, 'accelerate\'s fsdp_config.fsdp_offload_params is no DeepSpeed key');
  // axolotl is no run's framework: its file's keys alone.
  assert.deepEqual([...formWords({ kind: 'axolotl', keys: { seq_length: 'sequence_len' } }, dsRun).keys()], ['seq_length']);
  const hf = formWords({ kind: 'hf', keys: { num_layers: 'num_hidden_layers' } }, megatronRun);
  assert.equal(shown(hf, 'num_layers'), 'config.json: num_hidden_layers');
  assert.equal(shown(hf, 'micro_batch_size'), 'Megatron-LM: --micro-batch-size');
});

test('a Megatron-LM command line pasted in the import panel (kind "megatron") takes Megatron-LM\'s table for the rest', () => {
  const words = formWords({ kind: 'megatron', keys: { num_layers: '--num-layers' } }, runFrameworks(resolvedOf({}), {}, true));
  assert.equal(shown(words, 'num_layers'), 'Megatron-LM: --num-layers');
  assert.equal(shown(words, 'seq_length'), 'Megatron-LM: --seq-length');
});

test('a value in the notices as the framework in use spells it, where its files spell it; trainmem\'s elsewhere', () => {
  // An accelerate run (the Trainer on FSDP): the files' `distributed_type: FSDP` for fsdp2
  // (tests/import/fixtures/accelerate/peft-fsdp_config_qlora.yaml); ddp and megatron have no
  // spelling in any accelerate file the importer reads (a plain DDP file's note is an assumption).
  const accelerate = formWords(null, frameworksInUse('hf-transformers', 'fsdp2'));
  assert.equal(valueSpelling(accelerate.get('framework'), 'framework', 'fsdp2'), 'FSDP');
  assert.equal(valueSpelling(accelerate.get('framework'), 'framework', 'ddp'), undefined);
  // torchtune: `enable_activation_checkpointing: True` is recompute "full"; "selective" is no
  // torchtune setting, and a field without a key of torchtune's has no spelling either.
  const torchtune = formWords(null, frameworksInUse('torchtune', 'ddp'));
  assert.equal(valueSpelling(torchtune.get('recompute_granularity'), 'recompute_granularity', 'full'), 'true');
  assert.equal(valueSpelling(torchtune.get('recompute_granularity'), 'recompute_granularity', 'selective'), undefined);
  assert.equal(valueSpelling(torchtune.get('params_dtype'), 'params_dtype', 'bf16'), undefined);
  // A file's own key that is not the table's has no spelling from the table.
  const file = formWords({ kind: 'torchtune', keys: { recompute_granularity: 'some_other_key' } }, frameworksInUse('torchtune', 'ddp'));
  assert.equal(valueSpelling(file.get('recompute_granularity'), 'recompute_granularity', 'full'), undefined);
  // The method notice with the form's words: the spelling first, trainmem's value second.
  const valueText = (name, v, text) => {
    const spelled = valueSpelling(torchtune.get(name), name, v);
    return spelled === undefined ? text : `${spelled} (${text})`;
  };
  const label = (name) => (torchtune.get(name) ? `torchtune: ${torchtune.get(name).key} · ${name}` : name);
  assert.equal(methodNotice('lora', [{ name: 'recompute_granularity', from: 'selective', to: 'full', why: 'w' }], {}, {}, label, valueText),
    'LoRA: set torchtune: enable_activation_checkpointing · recompute_granularity selective → true (full) (w).');
});

// torchtune's recipe follows the GPU count (recipe-words.js; core rule
// framework/torchtune-distributed): torchtune has no DDP recipe, so its single-device framework on
// 2 GPUs is the core's named error, which the page answers with fsdp2 (the distributed recipe);
// back on one GPU a framework that followed goes back. The torchtune 8B LoRA setup (the fresh page).
test('torchtune\'s framework follows its GPU count: the core names ddp on 2 GPUs, fsdp2 answers, one GPU goes back', () => {
  const setup = engine.setups.find((s) => s.id === 'llama-3.1-8b-lora-torchtune-1x4090');
  const { data_parallel_size: _dp, ...config } = setup.config;
  const onTwo = engine.estimate({ ...config, world_size: 2 });
  assert.equal(onTwo.ok, false);
  const issue = onTwo.issues.find((i) => i.rule === TORCHTUNE_DISTRIBUTED_RULE);
  assert.equal(issue?.field, 'framework', JSON.stringify(onTwo.issues));
  assert.deepEqual(recipeFramework(onTwo, null), { framework: 'fsdp2' });
  const fsdp2 = engine.estimate({ ...config, world_size: 2, framework: 'fsdp2' });
  assert.equal(fsdp2.ok, true, JSON.stringify(fsdp2.issues));
  assert.equal(recipeFramework(fsdp2, { from: 'ddp' }), null); // 2 GPUs, already distributed
  assert.equal(recipeNotice(fsdp2.config), 'Framework → distributed: torchtune runs 2 GPUs with lora_finetune_distributed (FSDP2).');
  const oneGpu = engine.estimate({ ...config, world_size: 1, framework: 'fsdp2' });
  assert.equal(oneGpu.ok, true);
  assert.deepEqual(recipeFramework(oneGpu, { from: 'ddp' }), { framework: 'ddp' });
  assert.equal(recipeFramework(oneGpu, null), null); // fsdp2 chosen on one GPU (a distributed recipe on 1 GPU) stays
  const single = engine.estimate({ ...config, world_size: 1 });
  assert.equal(recipeNotice(single.config), 'Framework → single device: torchtune runs one GPU with lora_finetune_single_device.');
  // DDP on 2 GPUs under the Hugging Face Trainer is a run: nothing follows.
  const trainer = engine.estimate({ ...config, world_size: 2, model_implementation: 'hf-transformers' });
  assert.equal(recipeFramework(trainer, null), null);
});

test('the planner searches torchtune\'s layouts on more than one GPU as its distributed recipe, and finds them', () => {
  const setup = engine.setups.find((s) => s.id === 'llama-3.1-8b-lora-torchtune-1x4090');
  const resolved = engine.estimate(setup.config).config;
  const noPipeline = ['pipeline_model_parallel_size', 'virtual_pipeline_model_parallel_size'];
  assert.deepEqual(plannerBase(setup.config, resolved, 1, 'none'), { config: setup.config, layoutFields: {}, keep: noPipeline });
  const { config, layoutFields, keep } = plannerBase(setup.config, resolved, 2, 'none');
  assert.deepEqual([config.framework, layoutFields, keep], ['fsdp2', { framework: 'fsdp2' }, noPipeline]);
  assert.equal(plannerBase(setup.config, resolved, 1, 'min-gpus').config.framework, 'fsdp2');
  const capacity = engine.gpus.find((g) => g.id === setup.gpu).memory_bytes;
  const found = engine.plan(config, { gpus: 2, gpu_memory_bytes: capacity, headroom: 0.1, max_results: 50, keep });
  assert.ok(found.ok && found.layouts.length > 0, JSON.stringify(found.issues ?? found.n_fitting));
  for (const l of found.layouts) {
    const r = engine.estimate({ ...setup.config, ...layoutFields, ...l.fields, gpu_memory_bytes: capacity });
    assert.ok(r.ok && r.config.framework === 'fsdp2' && r.config.world_size === 2 && r.config.pipeline_model_parallel_size === 1, JSON.stringify(r.issues));
  }
  // Not torchtune's: searched as it is (the Megatron example's pipeline may vary).
  const megatron = { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, seq_length: 4096, micro_batch_size: 1 };
  assert.deepEqual(plannerBase(megatron, engine.estimate(megatron).config, 8, 'none'), { config: megatron, layoutFields: {}, keep: [] });
  // The single-device framework on 2 GPUs finds nothing: every candidate is the core's named error.
  const ddp = engine.plan(setup.config, { gpus: 2, gpu_memory_bytes: capacity, headroom: 0.1, max_results: 5 });
  assert.ok(!ddp.ok || ddp.layouts.length === 0);
});
