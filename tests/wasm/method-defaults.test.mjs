// Choosing a fine-tuning method on a hand-built run (web/js/method-defaults.js, issue 32 item 5):
// each change answers an objection the core makes to the run as it is, and is kept only when the
// core stops objecting. Every expectation below is the core's own rule, read back from the core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { METHOD_RULES, answerGpuCount, chooseMethod, methodNotice, startLayoutToClear, usualSettings } from '../../web/js/method-defaults.js';
import { START, coreConfig } from '../../web/js/link-config.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const H100 = engine.gpus.find((g) => g.id === 'h100-80gb').memory_bytes;
const estimate = (fields) => engine.estimate(coreConfig(engine, fields, H100).config);
const model = (id) => engine.presets.find((p) => p.id === id).config;
// The first screen: Llama 3.1 8B with START's Megatron training fields (TP 2, DP 4, selective recompute).
const firstScreen = () => ({ ...model('llama-3.1-8b'), ...START.fields });

test('QLoRA on the first screen: the core objects to Megatron, then to selective recompute; ddp and full answer both', () => {
  const before = estimate({ ...firstScreen(), peft: 'qlora' });
  assert.equal(before.ok, false);
  assert.ok(before.issues.some((i) => i.field === 'peft' && /needs framework ddp, fsdp2 or deepspeed/.test(i.message)), JSON.stringify(before.issues));
  const { fields, changes, result } = chooseMethod(firstScreen(), 'qlora', estimate);
  assert.equal(result.ok, true, JSON.stringify(result.issues));
  assert.deepEqual(changes.map((c) => [c.name, c.from, c.to]), [['framework', undefined, 'ddp'], ['recompute_granularity', 'selective', 'full']]);
  assert.equal(fields.peft, 'qlora');
  // The core's resolution of the result: NF4 base (the field spec's default for qlora), PyTorch model code.
  assert.equal(result.config.params_dtype, 'nf4');
  assert.equal(result.config.model_implementation, 'hf-transformers');
  // The same fields straight to the core give the same figure: the page adds nothing else.
  assert.equal(estimate(fields).device_bytes, result.device_bytes);
  assert.equal(methodNotice('qlora', changes, { framework: 'megatron', recompute_granularity: 'selective' }, result.config),
    'QLoRA: set framework megatron → ddp, recompute_granularity selective → full (QLoRA\'s 4-bit layers need a PyTorch framework; PyTorch fine-tuning checkpoints whole layers).');
});

test('LoRA and full fine-tuning on Megatron: nothing conflicts, nothing changes', () => {
  for (const peft of ['lora', 'none', undefined]) {
    const { fields, changes, result } = chooseMethod(firstScreen(), peft, estimate);
    assert.equal(result.ok, true, `${peft}: ${JSON.stringify(result.issues)}`);
    assert.deepEqual(changes, [], String(peft));
    assert.equal(fields.framework, undefined);
  }
});

test('a weights dtype set for one method goes back to the other method\'s default', () => {
  const ddp = { ...model('llama-3.1-8b'), seq_length: 2048, micro_batch_size: 1, framework: 'ddp', recompute_granularity: 'full' };
  // bf16 weights, then QLoRA: the core wants nf4 with qlora; cleared, its default is nf4.
  const toQlora = chooseMethod({ ...ddp, params_dtype: 'bf16' }, 'qlora', estimate);
  assert.deepEqual(toQlora.changes.map((c) => [c.name, c.from, c.to]), [['params_dtype', 'bf16', undefined]]);
  assert.equal(toQlora.result.ok, true);
  assert.equal(toQlora.result.config.params_dtype, 'nf4');
  // nf4 weights, then LoRA: nf4 needs qlora; cleared, the ddp default (fp32, the field spec's) applies.
  const toLora = chooseMethod({ ...ddp, params_dtype: 'nf4', peft: 'qlora' }, 'lora', estimate);
  assert.deepEqual(toLora.changes.map((c) => [c.name, c.from]), [['params_dtype', 'nf4']]);
  assert.equal(toLora.result.ok, true, JSON.stringify(toLora.result.issues));
  assert.equal(toLora.result.config.params_dtype, engine.estimate({ ...ddp, peft: 'lora', gpu_memory_bytes: H100 }).config.params_dtype);
});

test('torchtitan\'s per-op recompute with adapters: full, as the core says', () => {
  const titan = { ...model('llama-3.1-8b'), seq_length: 4096, micro_batch_size: 1, framework: 'fsdp2', recompute_granularity: 'selective_op' };
  assert.equal(estimate(titan).ok, true);
  const { changes, result } = chooseMethod(titan, 'lora', estimate);
  assert.deepEqual(changes.map((c) => [c.name, c.to]), [['recompute_granularity', 'full']]);
  assert.equal(result.ok, true, JSON.stringify(result.issues));
});

test('an objection no rule answers is left to the user: nothing is changed behind it', () => {
  // DeepSeek-V2-Lite has multi-latent attention, whose projections LoRA does not target here.
  const mla = { ...model('deepseek-v2-lite'), ...START.fields, tensor_model_parallel_size: 1, data_parallel_size: 8 };
  const { fields, changes, result } = chooseMethod(mla, 'lora', estimate);
  assert.equal(result.ok, false);
  assert.ok(result.issues.some((i) => i.field === 'peft' && /multi_latent_attention/.test(i.message)), JSON.stringify(result.issues));
  assert.deepEqual(changes, []);
  assert.deepEqual(fields, { ...mla, peft: 'lora' });
});

test('FP8 with adapters: the recipe goes back to its default, none', () => {
  const fp8 = { ...firstScreen(), fp8_recipe: 'tensorwise' };
  assert.equal(estimate(fp8).ok, true, JSON.stringify(estimate(fp8).issues));
  const { changes, result } = chooseMethod(fp8, 'lora', estimate);
  assert.deepEqual(changes.map((c) => [c.name, c.from, c.to]), [['fp8_recipe', 'tensorwise', undefined]]);
  assert.equal(result.ok, true, JSON.stringify(result.issues));
  assert.equal(result.config.fp8_recipe, 'none');
});

test('every answer names rules the core has and a field the core has, with a value among its choices', () => {
  const names = new Set(engine.fieldSpecs.map((s) => s.name));
  const rules = new Set(engine.codec.tables.rule);
  assert.ok(rules.size > 0, 'the module lists its rule ids');
  for (const answer of METHOD_RULES) {
    assert.ok(names.has(answer.set), answer.set);
    for (const id of answer.rules) assert.ok(rules.has(id), `${id} is not a rule of the core`);
    if (answer.to !== undefined) {
      const spec = engine.fieldSpecs.find((s) => s.name === answer.set);
      assert.ok(spec.choices.includes(answer.to), `${answer.set}: ${answer.to} is not among ${spec.choices}`);
    }
  }
});

// The fresh page's example is an 8-GPU pretraining layout none of which the user gave: an adapter
// method chosen on it takes the layout back to the core's defaults (issue 32 task 5: "1 GPU" met
// "world_size: must be divisible by ... (2)"), and leaves what the user edited or was given.
const specs = new Map(engine.fieldSpecs.map((s) => [s.name, s]));
const startFields = { ...START.fields };

test('an adapter method on the fresh page clears the example\'s layout the user did not edit: the core\'s defaults apply', () => {
  for (const peft of ['lora', 'qlora']) {
    const cleared = startLayoutToClear(startFields, firstScreen(), new Set(), specs, peft);
    // Every START field but the required ones (sequence, micro batch), the one the core's rules
    // answer (recompute) and the one already at its default (PP 1).
    const expected = Object.keys(START.fields).filter((name) => specs.get(name).default !== 'required'
      && !METHOD_RULES.some((r) => r.set === name) && String(START.fields[name]) !== specs.get(name).default);
    assert.deepEqual(cleared.map((c) => c.name).sort(), expected.sort(), peft);
    assert.deepEqual(cleared.map((c) => c.name).sort(), ['data_parallel_size', 'sequence_parallel', 'tensor_model_parallel_size', 'use_distributed_optimizer'], peft);
    const base = { ...firstScreen() };
    for (const c of cleared) delete base[c.name];
    const { result } = chooseMethod(base, peft, estimate);
    assert.equal(result.ok, true, `${peft}: ${JSON.stringify(result.issues)}`);
    // The core's own defaults, read from its specs: one GPU, TP 1, no sequence parallelism.
    assert.equal(String(result.config.tensor_model_parallel_size), specs.get('tensor_model_parallel_size').default);
    assert.equal(String(result.config.data_parallel_size), specs.get('data_parallel_size').default);
    assert.equal(String(result.config.sequence_parallel), specs.get('sequence_parallel').default);
    assert.equal(result.config.world_size, 1);
    // ... and a GPU count of 1 typed next is no problem (it was: world_size 1 with TP 2).
    assert.equal(estimate({ ...chooseMethod(base, peft, estimate).fields, world_size: 1 }).ok, true);
    assert.ok(estimate({ ...firstScreen(), peft, framework: 'ddp', recompute_granularity: 'full', world_size: 1 }).issues.some((i) => i.rule === 'world_size/divisible'));
  }
});

test('the example\'s layout stays where it is the user\'s: edited, changed, a link or setup, or full training', () => {
  const screen = firstScreen();
  // Edited (touched), even back to the example's value: kept.
  assert.ok(!startLayoutToClear(startFields, screen, new Set(['tensor_model_parallel_size']), specs, 'qlora').some((c) => c.name === 'tensor_model_parallel_size'));
  // A value other than the example's: kept.
  assert.ok(!startLayoutToClear(startFields, { ...screen, data_parallel_size: 2 }, new Set(), specs, 'lora').some((c) => c.name === 'data_parallel_size'));
  // Not the fresh page (a link, a setup, an import: startFields null): nothing.
  assert.deepEqual(startLayoutToClear(null, screen, new Set(), specs, 'qlora'), []);
  // Full training is what the example is: nothing.
  for (const peft of ['none', undefined]) assert.deepEqual(startLayoutToClear(startFields, screen, new Set(), specs, peft), []);
});

test('a GPU count the example\'s layout cannot divide takes the example\'s layout back, once the core agrees', () => {
  // "1 GPU" under the example's TP 2: the core's world_size/divisible, answered by its defaults.
  const one = { ...firstScreen(), world_size: 1 };
  delete one.data_parallel_size; // the page's GPU count and DP: the one typed last is kept
  assert.ok(estimate(one).issues.some((i) => i.rule === 'world_size/divisible'));
  const { fields, changes } = answerGpuCount(startFields, one, new Set(['world_size']), specs, estimate);
  assert.deepEqual(changes.map((c) => c.name).sort(), ['sequence_parallel', 'tensor_model_parallel_size', 'use_distributed_optimizer']);
  const result = estimate(fields);
  assert.equal(result.ok, true, JSON.stringify(result.issues));
  assert.equal(result.config.world_size, 1);
  assert.equal(String(result.config.tensor_model_parallel_size), specs.get('tensor_model_parallel_size').default);
  // What the example leaves and the user did not touch stays: its sequence, micro batch, recompute.
  for (const name of ['seq_length', 'micro_batch_size', 'recompute_granularity']) assert.equal(fields[name], START.fields[name], name);
  // A count the layout divides (16 under TP 2), a TP the user set, or a link's page: nothing.
  assert.deepEqual(answerGpuCount(startFields, { ...one, world_size: 16 }, new Set(), specs, estimate).changes, []);
  assert.deepEqual(answerGpuCount(startFields, one, new Set(['tensor_model_parallel_size']), specs, estimate).changes, []);
  assert.deepEqual(answerGpuCount(null, one, new Set(), specs, estimate).changes, []);
  // A count the core still refuses after it (3 GPUs under PP 2 the user gave) changes nothing.
  const pp = { ...one, world_size: 3, pipeline_model_parallel_size: 2 };
  assert.deepEqual(answerGpuCount(startFields, pp, new Set(['pipeline_model_parallel_size']), specs, estimate), { fields: pp, changes: [] });
});

test('LoRA or QLoRA on the fresh page takes the method\'s usual framework and recompute from the core, where the example\'s stand', () => {
  // The core's method_settings (core/src/config/fields.cpp): LoRA and QLoRA on ddp with full recompute.
  const settings = engine.methodSettings;
  for (const peft of ['lora', 'qlora']) {
    const mine = settings.filter((s) => s.peft === peft);
    assert.deepEqual(mine.map((s) => [s.field, s.value]).sort(), [['framework', 'ddp'], ['recompute_granularity', 'full']]);
    const fields = firstScreen();
    const usual = usualSettings(START.fields, fields, new Set(), settings, peft);
    assert.deepEqual(usual.map((c) => [c.name, c.from, c.to]), [['framework', undefined, 'ddp'], ['recompute_granularity', 'selective', 'full']]);
    // With them (and the example's layout taken back, as the page does), the core accepts the run
    // and resolves it as the settings say.
    const base = { ...fields };
    for (const c of startLayoutToClear(START.fields, fields, new Set(), new Map(engine.fieldSpecs.map((s) => [s.name, s])), peft)) delete base[c.name];
    for (const c of usual) base[c.name] = c.to;
    const { result } = chooseMethod(base, peft, estimate);
    assert.equal(result.ok, true, JSON.stringify(result.issues));
    assert.equal(result.config.framework, 'ddp');
    assert.equal(result.config.recompute_granularity, 'full');
  }
  // A field the user edited, a value the user changed, a link or setup (no example), full training: nothing.
  assert.deepEqual(usualSettings(START.fields, firstScreen(), new Set(['framework', 'recompute_granularity']), settings, 'lora'), []);
  assert.deepEqual(usualSettings(START.fields, { ...firstScreen(), framework: 'fsdp2' }, new Set(), settings, 'lora').map((c) => c.name), ['recompute_granularity']);
  assert.deepEqual(usualSettings(null, firstScreen(), new Set(), settings, 'lora'), []);
  assert.deepEqual(usualSettings(START.fields, firstScreen(), new Set(), settings, 'none'), []);
});
