// Choosing a fine-tuning method on a hand-built run (web/js/method-defaults.js, issue 32 item 5):
// each change answers an objection the core makes to the run as it is, and is kept only when the
// core stops objecting. Every expectation below is the core's own rule, read back from the core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { METHOD_RULES, chooseMethod, clearedAfter, methodNotice, restoredSettings, usualSettings } from '../../web/js/method-defaults.js';
import { coreConfig, restoreLink } from '../../web/js/link-config.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const H100 = engine.gpus.find((g) => g.id === 'h100-80gb').memory_bytes;
const estimate = (fields) => engine.estimate(coreConfig(engine, fields, H100).config);
const model = (id) => engine.presets.find((p) => p.id === id).config;
// A Megatron pretraining run built by hand or from a link (the page's opening example until issue
// 32): Llama 3.1 8B, TP 2 × DP 4 with sequence parallelism, the distributed optimizer, selective recompute.
const MEGATRON_RUN = Object.freeze({ seq_length: 8192, micro_batch_size: 1, tensor_model_parallel_size: 2, pipeline_model_parallel_size: 1,
  data_parallel_size: 4, use_distributed_optimizer: true, sequence_parallel: true, recompute_granularity: 'selective' });
const firstScreen = () => ({ ...model('llama-3.1-8b'), ...MEGATRON_RUN });

test('QLoRA on a Megatron run: the core objects to Megatron, then to selective recompute; ddp and full answer both', () => {
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
  const mla = { ...model('deepseek-v2-lite'), ...MEGATRON_RUN, tensor_model_parallel_size: 1, data_parallel_size: 8 };
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

// The fresh page's example (link-config.js START) is no setting of the user's: a method chosen on
// it takes the method's usual settings where the example's values still stand.
test('LoRA or QLoRA on an example takes the method\'s usual framework and recompute from the core, where the example\'s stand', () => {
  // The core's method_settings (core/src/config/fields.cpp): LoRA and QLoRA on ddp with full recompute.
  const settings = engine.methodSettings;
  // An example with Megatron's selective recompute and no layout (a layout under ddp is the user's to change).
  const example = { seq_length: 8192, micro_batch_size: 1, recompute_granularity: 'selective' };
  const screen = () => ({ ...model('llama-3.1-8b'), ...example });
  for (const peft of ['lora', 'qlora']) {
    const mine = settings.filter((s) => s.peft === peft);
    assert.deepEqual(mine.map((s) => [s.field, s.value]).sort(), [['framework', 'ddp'], ['recompute_granularity', 'full']]);
    const fields = screen();
    const usual = usualSettings(example, fields, new Set(), settings, peft);
    assert.deepEqual(usual.map((c) => [c.name, c.from, c.to]), [['framework', undefined, 'ddp'], ['recompute_granularity', 'selective', 'full']]);
    // With them the core accepts the run and resolves it as the settings say.
    const base = { ...fields };
    for (const c of usual) base[c.name] = c.to;
    const { result } = chooseMethod(base, peft, estimate);
    assert.equal(result.ok, true, JSON.stringify(result.issues));
    assert.equal(result.config.framework, 'ddp');
    assert.equal(result.config.recompute_granularity, 'full');
  }
  // A field the user edited, a value the user changed, a link or setup (no example), full training: nothing.
  assert.deepEqual(usualSettings(example, screen(), new Set(['framework', 'recompute_granularity']), settings, 'lora'), []);
  assert.deepEqual(usualSettings(example, { ...screen(), framework: 'fsdp2' }, new Set(), settings, 'lora').map((c) => c.name), ['recompute_granularity']);
  assert.deepEqual(usualSettings(null, screen(), new Set(), settings, 'lora'), []);
  assert.deepEqual(usualSettings(example, screen(), new Set(), settings, 'none'), []);
});

test('the fresh page is a LoRA run that already holds the usual settings; QLoRA on it changes only the weights\' dtype', () => {
  const start = restoreLink('', engine);
  const RTX4090 = engine.gpus.find((g) => g.id === start.gpu).memory_bytes;
  const onGpu = (fields) => engine.estimate(coreConfig(engine, fields, RTX4090).config);
  for (const peft of ['lora', 'qlora']) assert.deepEqual(usualSettings(start.fields, start.fields, new Set(), engine.methodSettings, peft), [], peft);
  const { fields, changes, result } = chooseMethod(start.fields, 'qlora', onGpu);
  assert.equal(result.ok, true, JSON.stringify(result.issues));
  // The setup's bf16 base conflicts with QLoRA (the core's params_dtype rules): cleared, so the
  // field spec's default for qlora (nf4) applies.
  assert.deepEqual(changes.map((c) => [c.name, c.from, c.to]), [['params_dtype', start.fields.params_dtype, undefined]]);
  assert.equal(start.fields.params_dtype, 'bf16');
  assert.equal(result.config.params_dtype, 'nf4');
  assert.equal(fields.framework, start.fields.framework);
  assert.ok(result.device_bytes < onGpu(start.fields).device_bytes, 'a 4-bit base is smaller than a bf16 one');
});

// QLoRA clears the fresh page's bf16 dtype; LoRA after it left the dtype unset, which on ddp is
// fp32 (the field's default): a figure from a dtype nobody gave. What a method change cleared
// comes back when the run leaves that method, where the core takes it under the method now.
test('LoRA after QLoRA: the dtype QLoRA cleared comes back (bf16, the fresh page\'s figure), and stays cleared under QLoRA again', () => {
  const start = restoreLink('', engine);
  const RTX4090 = engine.gpus.find((g) => g.id === start.gpu).memory_bytes;
  const onGpu = (fields) => engine.estimate(coreConfig(engine, fields, RTX4090).config);
  // The method changes as the page makes them: restored first, then the core's objections answered.
  const choose = (fields, cleared, peft) => {
    const restored = restoredSettings(cleared, fields, peft, onGpu);
    const base = { ...fields, ...Object.fromEntries(restored.map((c) => [c.name, c.to])) };
    const chosen = chooseMethod(base, peft, onGpu);
    const changes = [...restored, ...chosen.changes];
    return { ...chosen, restored, changes, cleared: clearedAfter(cleared, peft, changes) };
  };
  const qlora = choose(start.fields, {}, 'qlora');
  assert.deepEqual(qlora.cleared, { params_dtype: { value: 'bf16', by: 'qlora' } });
  // Unset under LoRA the core resolves fp32: what the page showed before this rule.
  const unset = chooseMethod(qlora.fields, 'lora', onGpu);
  assert.equal(unset.result.config.params_dtype, 'fp32');
  const lora = choose(qlora.fields, qlora.cleared, 'lora');
  assert.deepEqual(lora.restored.map((c) => [c.name, c.to, c.why]), [['params_dtype', 'bf16', 'its value before QLoRA']]);
  assert.equal(lora.result.ok, true, JSON.stringify(lora.result.issues));
  assert.equal(lora.result.device_bytes, onGpu(start.fields).device_bytes);
  assert.deepEqual(lora.cleared, {});
  // Full fine-tuning, then QLoRA, then LoRA: the same.
  const full = choose(start.fields, {}, 'none');
  const viaFull = choose(choose(full.fields, full.cleared, 'qlora').fields, choose(full.fields, full.cleared, 'qlora').cleared, 'lora');
  assert.equal(viaFull.result.config.params_dtype, 'bf16');
  // QLoRA again: the core objects to bf16 there, so it is not given back.
  assert.deepEqual(restoredSettings(qlora.cleared, qlora.fields, 'qlora', onGpu), []);
  // A field the user set since is theirs: nothing to give back.
  assert.deepEqual(restoredSettings(qlora.cleared, { ...qlora.fields, params_dtype: 'fp32' }, 'lora', onGpu), []);
});
