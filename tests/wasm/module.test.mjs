// The WebAssembly module as the page sees it: JSON in, JSON out, every problem named by field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadEngine, SINGLE_GPU } from './load.mjs';

const engine = await loadEngine();
const llama = engine.presets.find((p) => p.id === 'llama-3.1-70b');

// Reference §7 worked example (llama3_70b_tp8_pp4_vpp5_dp4), Megatron-Bridge profile.
const WORKED_EXAMPLE = {
  profile: 'megatron-bridge', ...llama?.config, vocab_size: 128256, should_pad_vocab: false, seq_length: 8192, micro_batch_size: 1,
  tensor_model_parallel_size: 8, pipeline_model_parallel_size: 4, virtual_pipeline_model_parallel_size: 5,
  data_parallel_size: 4, use_distributed_optimizer: true,
};

test('the worked example of the reference comes through the module unchanged', () => {
  const r = engine.estimate(WORKED_EXAMPLE);
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assert.equal(r.weight_and_optimizer_bytes, 20434604544);
  assert.ok(Math.abs(r.activation_bytes - 24734687231.999996) < 1e-3);
  assert.equal(r.total_bytes, r.weight_and_optimizer_bytes + r.activation_bytes);
  assert.equal(r.params.total, 70555025408);
  assert.equal(r.stages.length, 4);
});

test('state parts and activation add up to the total', () => {
  const r = engine.estimate(WORKED_EXAMPLE);
  let sum = r.activation_bytes;
  for (const cls of Object.values(r.state)) sum += cls.dense + cls.embedding + cls.expert;
  assert.ok(Math.abs(sum - r.total_bytes) / r.total_bytes < 1e-12);
});

test('verbose adds a trace of named quantities with formulas; the default leaves it out', () => {
  const quiet = engine.estimate(WORKED_EXAMPLE);
  const loud = engine.estimate(WORKED_EXAMPLE, { verbose: true });
  assert.equal(quiet.trace, undefined);
  assert.ok(loud.trace.length > 5);
  for (const t of loud.trace) {
    assert.equal(typeof t.name, 'string');
    assert.ok(Number.isFinite(t.value), t.name);
    assert.ok(t.formula.length > 0, t.name);
  }
});

test('bad values come back as issues naming their field, never as exceptions', () => {
  const r = engine.estimate({
    ...WORKED_EXAMPLE, num_layers: 30, hidden_size: 1.5, activation_func: 'Silu', profile: 'megatron',
    tensor_model_parallel_size: '8', no_such_field: 1,
  });
  assert.equal(r.ok, false);
  const fields = r.issues.map((i) => i.field);
  for (const f of ['hidden_size', 'activation_func', 'profile', 'tensor_model_parallel_size', 'no_such_field']) {
    assert.ok(fields.includes(f), `${f} missing from ${fields}`);
  }
  for (const issue of r.issues) assert.ok(issue.message.startsWith(`${issue.field}:`), issue.message);
});

test('an unknown categorical string is an error, never silently the first choice', () => {
  const r = engine.estimate({ ...WORKED_EXAMPLE, recompute_granularity: 'everything' });
  assert.equal(r.ok, false);
  assert.deepEqual(r.issues.map((i) => i.field), ['recompute_granularity']);
});

test('the profile travels in the config and is validated by the core', () => {
  const lm = engine.estimate({ ...WORKED_EXAMPLE, profile: 'megatron-lm' });
  assert.equal(lm.ok, true);
  assert.equal(lm.profile, 'megatron-lm');
  const { profile, ...unset } = WORKED_EXAMPLE;
  assert.equal(engine.estimate(unset).profile, 'trainmem', 'the default profile');
});

test('a reference profile rejects trainmem-only fields by name; the capacity it judges its total against', () => {
  const r = engine.estimate({ ...WORKED_EXAMPLE, optimizer: 'adam', gpu_memory_bytes: 80 * 2 ** 30 });
  assert.equal(r.ok, false);
  assert.deepEqual(r.issues.map((i) => i.field).sort(), ['optimizer']);
  const trainmemOnly = engine.fieldSpecs.filter((s) => s.trainmem_only).map((s) => s.name);
  assert.ok(!trainmemOnly.includes('gpu_memory_bytes') && trainmemOnly.includes('recompute_modules'));
  // Every profile's figure gets a verdict against the GPU (core fit_verdict): Bridge's total.
  const judged = engine.estimate({ ...WORKED_EXAMPLE, gpu_memory_bytes: 80 * 2 ** 30 });
  assert.deepEqual(Object.keys(judged.verdicts), ['total']);
  assert.equal(judged.verdicts.total.figure_bytes, judged.total_bytes);
});

test('the trainmem profile reports allocated <= reserved <= device and every stage', () => {
  const { profile, ...config } = WORKED_EXAMPLE;
  const r = engine.estimate({ ...config, gpu_memory_bytes: 80 * 2 ** 30 });
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assert.equal(r.allocated_bytes, r.total_bytes);
  assert.ok(r.allocated_bytes <= r.reserved_bytes && r.reserved_bytes <= r.device_bytes);
  assert.equal(r.stages.length, 4);
  for (const s of r.stages) assert.ok(s.total_bytes > 0 && s.device_bytes >= s.total_bytes);
  const peak = Math.max(...r.stages.map((s) => s.total_bytes));
  assert.equal(r.total_bytes, peak);
  assert.equal(r.stages[r.most_loaded_stage].total_bytes, peak);
  assert.ok(Number.isFinite(r.minimum_devices));
});

const HF_LLAMA = JSON.stringify({
  model_type: 'llama', hidden_size: 4096, intermediate_size: 14336, num_hidden_layers: 32,
  num_attention_heads: 32, num_key_value_heads: 8, vocab_size: 128256, tie_word_embeddings: false,
  max_position_embeddings: 131072, rms_norm_eps: 1e-5, hidden_act: 'silu', rope_theta: 500000,
});

test('importHfConfig merges a config.json over the page config and says what it read and assumed', () => {
  const base = { seq_length: 4096, micro_batch_size: 1, tensor_model_parallel_size: 2, num_layers: 99 };
  const r = engine.importHfConfig(HF_LLAMA, base);
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assert.equal(r.config.num_layers, 32);
  assert.equal(r.config.num_query_groups, 8);
  assert.equal(r.config.tensor_model_parallel_size, 2, 'training settings of the base are kept');
  assert.equal(r.input.tensor_model_parallel_size, undefined, 'the import alone has no training settings');
  assert.equal(r.whole_model, true);
  assert.ok(r.read.length > 5 && r.read.some((t) => t.startsWith('num_layers')), r.read.join('\n'));
  for (const key of ['assumed', 'ignored']) assert.ok(Array.isArray(r[key]), key);
  const e = engine.estimate(r.config);
  assert.equal(e.ok, true, JSON.stringify(e.issues));
  assert.equal(e.params.total, 8030261248);
});

test('importHfConfig names the problem: unsupported model type, missing key, not JSON', () => {
  const types = engine.hfModelTypes();
  assert.ok(types.includes('llama') && types.includes('deepseek_v3'));
  const unknown = engine.importHfConfig(JSON.stringify({ ...JSON.parse(HF_LLAMA), model_type: 'rwkv' }));
  assert.equal(unknown.ok, false);
  assert.deepEqual(unknown.issues.map((i) => i.message), [
    'model_type: "rwkv" is not supported; supported: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, ' +
    'qwen3_moe, deepseek_v2, deepseek_v3, gemma, gemma2, gemma3_text, gemma3, phi3, gpt_oss, olmo2, gpt2, ' +
    'gpt_neox, nemotron']);
  const missing = engine.importHfConfig(JSON.stringify({ ...JSON.parse(HF_LLAMA), hidden_size: undefined }));
  assert.equal(missing.ok, false);
  assert.deepEqual(missing.issues.map((i) => i.message), ['hidden_size: missing from config.json (model_type llama needs it)']);
  assert.equal(engine.importHfConfig('{ nope').ok, false);
  assert.equal(engine.importHfConfig(HF_LLAMA, { no_such_field: 1 }).ok, false, 'a bad base is an issue');
});

test('Megatron arguments import and export round trip', () => {
  const line = 'torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --num-layers 32 --hidden-size 4096 '
    + '--num-attention-heads 32 --group-query-attention --num-query-groups 8 --ffn-hidden-size 14336 '
    + '--swiglu --seq-length 8192 --micro-batch-size 1 --tensor-model-parallel-size 4 --vocab-size 128256';
  const r = engine.importMegatronArgs(line, {});
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assert.equal(r.config.tensor_model_parallel_size, 4);
  assert.equal(r.config.data_parallel_size, 4, 'world size 16 over TP 4');
  const exported = engine.exportMegatronArgs(r.config);
  assert.equal(exported.ok, true, JSON.stringify(exported.issues));
  assert.match(exported.args, /--num-layers 32/);
  const back = engine.importMegatronArgs(`WORLD_SIZE=16 ${exported.args}`, {});
  assert.equal(back.ok, true, JSON.stringify(back.issues));
  const a = engine.exportConfigJson(r.config);
  const b = engine.exportConfigJson(back.config);
  assert.equal(a.ok, true);
  assert.deepEqual(b.config, a.config);
  assert.equal(engine.exportMegatronArgs({ num_layers: 'x' }).ok, false);
  assert.deepEqual(Object.keys(engine.configInputJson({ seq_length: 8, num_layers: 2 }).config), ['num_layers', 'seq_length']);
});

test('malformed JSON text is an issue, not an exception', () => {
  for (const text of ['{', '[]', '"x"', '', '{"num_layers": }']) {
    const r = JSON.parse(engine.toolsModule.estimate(text, false));
    assert.equal(r.ok, false, text);
    assert.ok(r.issues.length > 0, text);
  }
});

test('the module keeps working after thousands of calls, valid and invalid', () => {
  for (let i = 0; i < 2000; i += 1) {
    engine.estimate(i % 2 ? WORKED_EXAMPLE : { num_layers: 'x' });
  }
  assert.equal(engine.estimate(WORKED_EXAMPLE).weight_and_optimizer_bytes, 20434604544);
});

test('every preset estimates on one GPU with a sequence length and micro-batch given', () => {
  assert.ok(engine.presets.length >= 9);
  for (const preset of engine.presets) {
    const r = engine.estimate({ ...preset.config, ...SINGLE_GPU });
    assert.equal(r.ok, true, `${preset.id}: ${JSON.stringify(r.issues)}`);
    assert.ok(r.total_bytes > 0 && Number.isFinite(r.total_bytes), preset.id);
  }
});

test('the presets and GPUs the issue names are there', () => {
  const presets = new Set(engine.presets.map((p) => p.id));
  for (const id of ['gpt-3-175b', 'llama-3.1-8b', 'llama-3.1-70b', 'llama-3.1-405b', 'mixtral-8x7b',
    'mixtral-8x22b', 'deepseek-v3', 'qwen3-30b-a3b', 'qwen3-235b-a22b']) assert.ok(presets.has(id), id);
  const gpus = new Set(engine.gpus.map((g) => g.id));
  for (const id of ['a100-40gb', 'a100-80gb', 'h100-80gb', 'h200-141gb', 'b200', 'mi300x-192gb', 'tpu-v5p']) {
    assert.ok(gpus.has(id), id);
  }
  for (const g of engine.gpus) assert.ok(g.memory_bytes > 0, g.id);
});

test('field specs describe every field the resolved config reports', () => {
  const specs = new Map(engine.fieldSpecs.map((s) => [s.name, s]));
  const r = engine.estimate(WORKED_EXAMPLE);
  for (const name of Object.keys(r.config)) assert.ok(specs.has(name), name);
  for (const s of engine.fieldSpecs) {
    if (s.type === 'choice') assert.ok(s.choices.length > 0, s.name);
    if (s.type === 'integer') assert.ok(Number.isInteger(s.min), s.name);
  }
});

test('version() is the package version', async () => {
  const { readFile } = await import('node:fs/promises');
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(engine.version, pkg.version);
});

test('every layout the planner returns re-estimates within the limit', () => {
  const mixtral = engine.presets.find((p) => p.id === 'mixtral-8x7b');
  const base = { ...mixtral.config, seq_length: 4096, micro_batch_size: 1, global_batch_size: 256 };
  const r = engine.plan(base, { gpus: 32, gpu_memory_bytes: 80 * 2 ** 30, headroom: 0.1, max_results: 30 });
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assert.ok(r.layouts.length > 0);
  for (const layout of r.layouts) {
    const config = { ...base, gpu_memory_bytes: 80 * 2 ** 30 };
    for (const [k, v] of Object.entries(layout.fields)) {
      if (v === null) delete config[k];
      else config[k] = v;
    }
    const e = engine.estimate(config);
    assert.equal(e.ok, true, `layout ${layout.rank}: ${JSON.stringify(e.issues)}`);
    assert.equal(e.device_bytes, layout.metric_bytes, `layout ${layout.rank}`);
    assert.ok(e.device_bytes <= r.limit_bytes, `layout ${layout.rank} does not fit`);
  }
});
