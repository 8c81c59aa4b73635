// The page's path (numbers in, numbers out: web/js/slots.js, core slots.hpp) must give the object
// the JSON path gives (the tools module's estimate, as the CLI writes it), for every preset and
// layout, for random configs (valid or not: issues included, in the config's order), for values
// no slot carries, and with the trace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadEngine } from './load.mjs';
import { fuzz, seedOf, validValue } from './fragments.mjs';

const engine = await loadEngine();
const specs = engine.fieldSpecs;

/** Both paths, after checking that the slots carried every value. */
function bothPaths(config) {
  assert.deepEqual(engine.codec.encode(config).others, [], `slots carry ${JSON.stringify(config)}`);
  return [engine.estimate(config), engine.estimateJson(config)];
}

const LAYOUTS = [
  {},
  { tensor_model_parallel_size: 2, sequence_parallel: true, data_parallel_size: 4, use_distributed_optimizer: true, recompute_granularity: 'selective' },
  { pipeline_model_parallel_size: 2, data_parallel_size: 2, global_batch_size: 16 },
  { framework: 'fsdp2', data_parallel_size: 8, recompute_granularity: 'full', gpu_memory_bytes: 85899345920 },
  { framework: 'deepspeed', zero_stage: 3, data_parallel_size: 16, offload_params: true, optimizer_offload_fraction: 1, gpus_per_node: 4 },
  { framework: 'ddp', recompute_granularity: 'selective', recompute_modules: ['core_attn', 'mlp'], fp8_recipe: 'delayed' },
];

test('every preset, layout and profile: the fast path gives the JSON path\'s object', () => {
  let compared = 0;
  for (const preset of engine.presets) {
    for (const layout of LAYOUTS) {
      for (const profile of ['trainmem', 'megatron-bridge', 'megatron-lm']) {
        const config = { ...preset.config, seq_length: 4096, micro_batch_size: 1, ...layout, profile };
        let fast;
    let json;
    try {
      [fast, json] = bothPaths(config);
    } catch (error) {
      throw new Error(`seed ${seed}: ${error} for ${JSON.stringify(config)}`);  // the config that threw, to reproduce
    }
        assert.deepEqual(fast, json, `${preset.id} ${profile} ${JSON.stringify(layout)}`);
        compared += 1;
      }
    }
  }
  assert.ok(compared >= 28 * LAYOUTS.length * 3);
});

test('MoE layer lists and choice lists travel as numbers and come back as the JSON path writes them', () => {
  const moe = engine.presets.find((p) => p.config.num_moe_experts > 0);
  const layers = moe.config.num_layers;
  const config = { ...moe.config, seq_length: 2048, micro_batch_size: 1,
    moe_layer_freq: Array.from({ length: layers }, (_, i) => (i < 2 ? 0 : 1)),
    recompute_granularity: 'selective', recompute_modules: ['moe_act', 'layernorm'] };
  const [fast, json] = bothPaths(config);
  assert.equal(fast.ok, true, JSON.stringify(fast.issues));
  assert.deepEqual(fast, json);
  assert.deepEqual(fast.config.moe_layer_freq, config.moe_layer_freq);
  assert.deepEqual(fast.config.recompute_modules, ['moe_act', 'layernorm']);
});

test('two lists travel in one channel: a per-stage list beside an MoE layer list, in either key order', () => {
  const moe = engine.presets.find((p) => p.config.num_moe_experts > 0 && p.config.num_layers % 2 === 1) ??
    engine.presets.find((p) => p.config.num_moe_experts > 0);
  const layers = moe.config.num_layers;
  // Two pipeline ranks, 2 chunks each: the first stage one layer short of the rest's share.
  const first = Math.floor(layers / 4) - 1;
  const rest = layers - first;
  const stages = [first, Math.floor(rest / 3), Math.floor(rest / 3), rest - 2 * Math.floor(rest / 3)];
  const freq = Array.from({ length: layers }, (_, i) => (i < 3 ? 0 : 1));
  const base = { ...moe.config, seq_length: 2048, micro_batch_size: 1, pipeline_model_parallel_size: 2,
    virtual_pipeline_model_parallel_size: 2, num_microbatches: 8 };
  for (const config of [{ ...base, moe_layer_freq: freq, pipeline_stage_layers: stages },
    { ...base, pipeline_stage_layers: stages, moe_layer_freq: freq }]) {
    const [fast, json] = bothPaths(config);
    assert.equal(fast.ok, true, JSON.stringify(fast.issues));
    assert.deepEqual(fast, json);
    assert.deepEqual(fast.config.pipeline_stage_layers, stages);
    assert.deepEqual(fast.config.moe_layer_freq, freq);
    assert.deepEqual(fast.stages.map((s) => s.num_layers), [stages[0] + stages[2], stages[1] + stages[3]]);
  }
  // A plain -1 in a list field is no list in the channel: named as the JSON path names it, even
  // beside a list field that has one.
  for (const odd of [{ ...base, moe_layer_freq: -1 }, { ...base, moe_layer_freq: -1, pipeline_stage_layers: stages },
    { ...base, pipeline_stage_layers: -1 }]) {
    const fast = engine.estimate(odd);
    assert.equal(fast.ok, false);
    assert.deepEqual(fast, engine.estimateJson(odd));
  }
  // A long list crosses as it is (no argument spreading: 200,000 entries overflowed it).
  const long = { ...base, num_layers: 200000, pipeline_model_parallel_size: 1, virtual_pipeline_model_parallel_size: undefined,
    moe_layer_freq: new Array(200000).fill(1) };
  const longFast = engine.estimate(long);
  assert.deepEqual(longFast.ok, engine.estimateJson(long).ok);
  // A list that is not one: named as the JSON path names it.
  const [fast, json] = [engine.estimate({ ...base, pipeline_stage_layers: [] }), engine.estimateJson({ ...base, pipeline_stage_layers: [] })];
  assert.deepEqual(fast, json);
  assert.equal(fast.ok, false);
});

test('random configs, valid or not: the same result or the same issues', () => {
  const seed = seedOf('SLOTS_FUZZ_SEED', 20261124);
  console.log(`slots seed ${seed} (reproduce with SLOTS_FUZZ_SEED=${seed})`);
  let results = 0;
  let rejected = 0;
  fuzz({ seed, budgetMs: Number(process.env.SLOTS_FUZZ_MS ?? 0), longRun: Boolean(process.env.SLOTS_FUZZ_MS), name: 'slots' }, 'configs', 400, (r) => {
    const preset = r.pick(engine.presets);
    const config = { ...preset.config, seq_length: 2048, micro_batch_size: 1 };
    // About four fields at random (the table has grown past 110: at 8 % each, 9 of them, nearly
    // every config had a conflict and too few results were compared).
    for (const spec of specs) if (r.chance(0.035)) config[spec.name] = validValue(r, spec);
    if (r.chance(0.1)) config.num_layers = r.pick([0, -3, 2.5, 1e7]);  // out of range: read issues
    const [fast, json] = bothPaths(config);
    assert.deepEqual(fast, json, `seed ${seed}: ${JSON.stringify(config)}`);
    if (fast.ok) results += 1; else rejected += 1;
  });
  assert.ok(results > 10 && rejected > 10, `${results} results, ${rejected} rejections: both kinds must be compared`);
});

test('values no slot carries get the JSON path\'s messages, in the config\'s order', () => {
  const base = { ...engine.presets[0].config, seq_length: 2048, micro_batch_size: 1 };
  const odd = [{ num_layer: 3 }, { seq_length: '4096' }, { sequence_parallel: 1 }, { normalization: 'rmsnorm' },
    { recompute_modules: ['everything'] }, { hidden_size: NaN }, { data_parallel_size: Infinity }, { moe_layer_freq: [1, 'x'] },
    { moe_layer_freq: { every: 2 } }, { tensor_model_parallel_size: [2] }, { zz_unknown: null }, { profile: 3 },
    { num_layers: undefined }, { optimizer: ['adam'] }, { recompute_modules: [] }, { moe_layer_freq: [] },
    // A message quotes the value: a tab or a newline in it (a hand-edited link) must not split the issue.
    { recompute_granularity: 'x\ny' }, { recompute_granularity: 'a\tb\nc' }, { 'bad\tkey': 1 }, { 'bad\nkey\\n': 1 },
    { recompute_granularity: 'back\\slash\\n' }];
  for (const extra of odd) {
    const config = { ...base, ...extra };
    assert.deepEqual(engine.estimate(config), engine.estimateJson(config), JSON.stringify(extra));
  }
  // Several problems at once come in the config's order, whatever the field table's order is.
  const many = { zz_first: 1, seq_length: 'long', ...base, num_layers: 0, hidden_sise: 8, tensor_model_parallel_size: -1 };
  const fast = engine.estimate(many);
  assert.equal(fast.ok, false);
  assert.deepEqual(fast, engine.estimateJson(many));
  assert.equal(fast.issues[0].field, 'zz_first');
});

test('with verbose, the trace comes back as the JSON path writes it', () => {
  for (const preset of engine.presets.slice(0, 6)) {
    const config = { ...preset.config, seq_length: 4096, micro_batch_size: 1, pipeline_model_parallel_size: 2, data_parallel_size: 2 };
    const fast = engine.estimate(config, { verbose: true });
    assert.ok(fast.trace.length > 0, preset.id);
    assert.deepEqual(fast, engine.estimateJson(config, { verbose: true }), preset.id);
  }
});

test('the field specs, read as text, are the JSON field specs', () => {
  assert.deepEqual(engine.fieldSpecs, JSON.parse(engine.tools.fieldSpecs()));
});

test('the fast path is much cheaper than the JSON path (figures printed, not asserted)', () => {
  const config = { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, seq_length: 8192, micro_batch_size: 1,
    tensor_model_parallel_size: 2, sequence_parallel: true, data_parallel_size: 4, use_distributed_optimizer: true,
    recompute_granularity: 'selective', gpu_memory_bytes: 85520809984 };
  const time = (f) => { for (let i = 0; i < 50; i++) f(); const t = performance.now(); for (let i = 0; i < 300; i++) f(); return (performance.now() - t) / 300 * 1000; };
  const fast = time(() => engine.estimate(config));
  const json = time(() => engine.estimateJson(config));
  const verbose = time(() => engine.estimate(config, { verbose: true }));
  console.log(`# estimate call in Node: numbers ${fast.toFixed(1)} µs, with the trace ${verbose.toFixed(1)} µs, ` +
              `JSON path ${json.toFixed(1)} µs (target ≤ 20 µs)`);
  assert.ok(Number.isFinite(fast) && Number.isFinite(json));
});

test('the closest validation group (confidence) travels on the numeric path as the JSON path writes it', () => {
  const llama = engine.presets.find((p) => p.id === 'llama-3.1-8b');
  const base = { ...llama.config, seq_length: 4096, micro_batch_size: 1 };
  const runs = [
    {},  // megatron, no recompute
    { recompute_granularity: 'selective', tensor_model_parallel_size: 2, sequence_parallel: true },
    { framework: 'fsdp2', data_parallel_size: 8, recompute_granularity: 'selective_op' },
    { framework: 'fsdp2', data_parallel_size: 8, recompute_granularity: 'full', peft: 'lora', lora_rank: 16 },
    { framework: 'ddp', peft: 'qlora', params_dtype: 'nf4', lora_rank: 8 },
    { framework: 'deepspeed', zero_stage: 3, data_parallel_size: 4 },
  ];
  const matches = new Set();
  for (const run of runs) {
    const config = { ...base, ...run };
    const [fast, json] = bothPaths(config);
    assert.equal(json.ok, true, JSON.stringify(json.issues));
    assert.deepEqual(fast, json, JSON.stringify(run));
    const c = fast.confidence;
    assert.ok(c && c.points >= 3 && c.median_abs_error <= c.p90_abs_error && c.source === 'npm run validate', JSON.stringify(c));
    assert.equal(c.match === 'exact', c.group === c.run_group, JSON.stringify(c));
    // Issue 29, item 8: the signed bias travels too, and leans_low is its -3 % threshold.
    assert.ok(Number.isFinite(c.median_signed_error), JSON.stringify(c));
    assert.equal(c.leans_low, c.median_signed_error < -0.03, JSON.stringify(c));
    matches.add(c.match);
    // With the trace after it, the text lines still line up.
    assert.deepEqual(engine.estimate(config, { verbose: true }), engine.estimateJson(config, { verbose: true }));
  }
  assert.ok(matches.has('exact') && matches.size > 1, `exact and fallback groups both compared: ${[...matches]}`);
  for (const profile of ['megatron-bridge', 'megatron-lm']) {
    const [fast, json] = bothPaths({ ...base, profile });
    assert.deepEqual(fast, json);
    assert.equal('confidence' in fast, false, `${profile}: the reference profiles name no group`);
  }
});

test('suggestions travel on the numeric path as the JSON path writes them, field values of every kind', () => {
  const llama = engine.presets.find((p) => p.id === 'llama-3.1-8b');
  const base = { ...llama.config, seq_length: 4096, micro_batch_size: 2, data_parallel_size: 8 };
  const kinds = new Set();
  let suggested = 0;
  for (const run of [{}, { framework: 'fsdp2' }, { framework: 'deepspeed', zero_stage: 1 }]) {
    for (const gib of [40, 60, 80]) {
      const config = { ...base, ...run, gpu_memory_bytes: gib * 2 ** 30 };
      const [fast, json] = bothPaths(config);
      assert.deepEqual(fast, json, JSON.stringify(run));
      for (const s of fast.suggestions) {
        suggested += 1;
        for (const v of Object.values(s.fields)) kinds.add(v === null ? 'null' : typeof v);
      }
    }
  }
  assert.ok(suggested > 10, `only ${suggested} suggestions compared`);
  for (const kind of ['null', 'boolean', 'number', 'string']) assert.ok(kinds.has(kind), `a suggestion with a ${kind} value: ${[...kinds]}`);
});

test('every text line is unescaped and every figure slot that is NaN decodes as null', () => {
  const config = { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, seq_length: 4096, micro_batch_size: 1, profile: 'megatron-bridge' };
  const m = engine.module;
  const { slots, order, lists, others } = engine.codec.encode(config);
  const input = m.slotInput(slots.length + order.length + lists.length);
  input.set(slots);
  input.set(order, slots.length);
  input.set(lists, slots.length + order.length);
  m.estimateSlots(slots.length, order.length, others, false);
  const text = m.resultText();
  const numbers = m.resultNumbers().slice();
  const json = engine.estimateJson(config);
  assert.deepEqual(engine.codec.decode(numbers, text), json);
  // The summary with a tab, a newline and a backslash in it, as the core's escaped() writes them.
  const lines = text.split('\n');
  const summaryLine = lines.indexOf(json.summary);
  assert.ok(summaryLine >= 0);
  lines[summaryLine] = 'a\\tb\\nc\\\\n';
  assert.deepEqual(engine.codec.decode(numbers, lines.join('\n')), { ...json, summary: 'a\tb\nc\\n' });
  // Slot 3 is weight_and_optimizer_bytes (after the leading 1 and the profile): NaN is JSON's null.
  numbers[2] = NaN;
  assert.equal(engine.codec.decode(numbers, text).weight_and_optimizer_bytes, null);
});

test('-0 and other edge numbers in a config come back as the JSON path writes them', () => {
  const base = { ...engine.presets[0].config, seq_length: 2048, micro_batch_size: 1 };
  for (const extra of [{ optimizer_offload_fraction: -0 }, { lora_dropout: -0, peft: 'lora', profile: 'trainmem' }, { gpu_memory_bytes: 1e300 }]) {
    const config = { ...base, ...extra };
    const [fast, json] = bothPaths(config);
    assert.deepEqual(fast, json, JSON.stringify(extra));
  }
});
