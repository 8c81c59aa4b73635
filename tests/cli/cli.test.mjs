// The native CLI as a user runs it: exit codes, stdout/stderr discipline, formats, and the
// field documentation staying complete. Needs the native build (build/core/cli/trainmem).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url).pathname;
const cli = `${root}build/core/cli/trainmem`;
const run = (args, input) => spawnSync(cli, args, { input, encoding: 'utf8' });

// The reference's worked example (megatron-formulas.md §7): 45,169,291,776 B in total.
const llama70b = JSON.stringify({
  profile: 'megatron-bridge',
  num_layers: 80, hidden_size: 8192, num_attention_heads: 64, num_query_groups: 8,
  kv_channels: 128, ffn_hidden_size: 28672, vocab_size: 128256,
  share_embeddings_and_output_weights: false, swiglu: true, seq_length: 8192,
  micro_batch_size: 1, tensor_model_parallel_size: 8, pipeline_model_parallel_size: 4,
  virtual_pipeline_model_parallel_size: 5, data_parallel_size: 4,
  use_distributed_optimizer: true, sequence_parallel: true, recompute_granularity: 'selective',
});

test('estimate prints JSON with the contract fields', () => {
  const r = run(['estimate', '-'], llama70b);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  const out = JSON.parse(r.stdout);
  assert.equal(out.weight_and_optimizer_bytes, 20434604544);
  assert.equal(out.total_bytes, 45169291776);
  assert.equal(out.params.total, 70555025408);
  assert.ok(Array.isArray(out.components) && out.components.length === 2);
});

test('--format text ends with the reference log line', () => {
  const r = run(['estimate', '-', '--format', 'text'], llama70b);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.at(-1),
    'Theoretical memory footprints: weight and optimizer=19487.96 MB, activation=23588.84 MB, total=43076.79 MB');
  assert.match(r.stdout, /total: 42\.07 GiB \(45\.17 GB, 45169291776 B\)/);
});

// The text report of the trainmem profile: lines "  + label  ... (…, N B)" add up to the next
// "  = label ... (…, N B)", which equal the JSON's figures (rounded to whole bytes).
function sums(text) {
  const rows = [...text.matchAll(/^  ([+=]) (.+?)\s{2,}.*?, (\d+) B\)/gm)].map((m) => ({ op: m[1], label: m[2], bytes: BigInt(m[3]) }));
  const totals = {};
  let running = 0n;
  for (const r of rows) {
    if (r.op === '+') running += r.bytes;
    else { assert.equal(running, r.bytes, `the lines above "${r.label}" add up to it`); totals[r.label] = r.bytes; }
  }
  return totals;
}

for (const [name, extra] of [
  ['Llama 3.1 8B, TP 2, distributed optimizer', { tensor_model_parallel_size: 2, sequence_parallel: true, data_parallel_size: 4, use_distributed_optimizer: true }],
  ['the same on FSDP2 with PP 2 and full recompute', { framework: 'fsdp2', pipeline_model_parallel_size: 2, data_parallel_size: 4, recompute_granularity: 'full' }],
  ['DeepSpeed ZeRO-3 with offload', { framework: 'deepspeed', zero_stage: 3, data_parallel_size: 8, offload_params: true, optimizer_offload_fraction: 1 }],
]) {
  test(`--format text (trainmem profile) adds up to the JSON's figures: ${name}`, () => {
    const config = JSON.stringify({ num_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_query_groups: 8,
      ffn_hidden_size: 14336, swiglu: true, vocab_size: 128256, normalization: 'RMSNorm', add_bias_linear: false,
      share_embeddings_and_output_weights: false, seq_length: 8192, micro_batch_size: 1, ...extra });
    const text = run(['estimate', '-', '--format', 'text'], config);
    const json = JSON.parse(run(['estimate', '-'], config).stdout);
    assert.equal(text.status, 0, text.stderr);
    const totals = sums(text.stdout);
    assert.deepEqual(Object.keys(totals), ['allocated', 'reserved', 'device']);
    assert.equal(totals.allocated, BigInt(Math.round(json.allocated_bytes)));
    assert.equal(totals.reserved, BigInt(Math.round(json.reserved_bytes)));
    assert.equal(totals.device, BigInt(Math.round(json.device_bytes)));
    // Bridge's log line is another formula's figure: not printed under this breakdown.
    assert.doesNotMatch(text.stdout, /Theoretical memory footprints/);
  });
}

test('--profile takes the profile field\'s own rule and message', () => {
  const r = run(['estimate', '-', '--profile', 'deepspeed'], llama70b);
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^trainmem: --profile: must be one of "megatron-bridge", "megatron-lm", "trainmem", got the string "deepspeed"\n/);
});

test('--version is package.json\'s version', () => {
  const version = JSON.parse(readFileSync(`${root}package.json`, 'utf8')).version;
  assert.equal(run(['--version']).stdout, `trainmem ${version}\n`);
});

test('--verbose adds every intermediate with its formula', () => {
  const r = run(['estimate', '-', '--verbose'], llama70b);
  const trace = JSON.parse(r.stdout).trace;
  const attention = trace.find((e) => e.name === 'bridge.attention_per_layer');
  assert.equal(attention.value, 150994944);
  assert.match(attention.formula, /2·h·h/);
});

test('--profile overrides the config', () => {
  const r = run(['estimate', '-', '--profile', 'megatron-lm'], llama70b);
  assert.equal(JSON.parse(r.stdout).profile, 'megatron-lm');
});

test('bad input: exit 2, one message per problem on stderr, nothing on stdout', () => {
  const bad = JSON.stringify({ ...JSON.parse(llama70b), num_layers: 30, hidden_sise: 1 });
  const r = run(['estimate', '-'], bad);
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.deepEqual(r.stderr.trimEnd().split('\n'), [
    'hidden_sise: unknown field; did you mean "hidden_size"?',
    'num_layers: must be divisible by pipeline_model_parallel_size × virtual_pipeline_model_parallel_size (4 × 5), got 30',
  ]);
});

test('malformed JSON and usage errors exit 2', () => {
  assert.equal(run(['estimate', '-'], '{').status, 2);
  assert.equal(run(['estimate', '-', '--format', 'xml'], llama70b).status, 2);
  assert.equal(run(['estimate', '/nonexistent.json']).status, 2);
  assert.equal(run(['frobnicate']).status, 2);
});

test('docs/fields.md is the current field table', () => {
  const fields = JSON.parse(run(['fields']).stdout);
  const doc = readFileSync(`${root}docs/fields.md`, 'utf8');
  for (const f of fields) assert.ok(doc.includes(`| \`${f.name}\` |`), `${f.name} missing from docs/fields.md`);
  assert.equal(doc, run(['fields', '--format', 'markdown']).stdout,
    'regenerate with: build/core/cli/trainmem fields --format markdown > docs/fields.md');
});

// Llama 3.2 1B with LoRA r = 8 on q_proj and v_proj (PEFT's default targets): 16 layers ×
// (2048·8 + 8·2048 + 2048·8 + 8·512) = 851,968 adapter parameters; ddp is Hugging Face PEFT, so
// the adapters are fp32 with fp32 gradients and AdamW: 851,968 × 16 B = 13,631,488 B.
const llama1bLora = JSON.stringify({
  num_layers: 16, hidden_size: 2048, num_attention_heads: 32, num_query_groups: 8, kv_channels: 64,
  ffn_hidden_size: 8192, vocab_size: 128256, normalization: 'RMSNorm', swiglu: true,
  add_bias_linear: false, seq_length: 2048, micro_batch_size: 1, framework: 'ddp',
  params_dtype: 'bf16', peft: 'lora',
});

test('peft: the adapters are a component and the frozen base and adapters rows of their own', () => {
  const r = run(['estimate', '-'], llama1bLora);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  const adapters = out.components.find((c) => c.kind === 'adapters');
  assert.equal(adapters.parameter_count, 851968);
  assert.equal(adapters.memory_bytes, 13631488);
  assert.equal(out.state.adapter_weights.dense, 851968 * 4);
  assert.equal(out.state.frozen_weights.dense + out.state.frozen_weights.embedding, 1235814400 * 2);
  assert.equal(out.state.gradients.dense, 0);
  const text = run(['estimate', '-', '--format', 'text'], llama1bLora);
  assert.equal(text.status, 0, text.stderr);
  for (const row of ['frozen weights', 'adapter weights', 'adapter gradients', 'adapter optimizer states'])
    assert.match(text.stdout, new RegExp(`\\+ ${row} +\\d`), row);
});

test('fine-tuning fields out of their framework: exit 2 with the named rule', () => {
  const r = run(['estimate', '-'], JSON.stringify({ ...JSON.parse(llama1bLora), framework: 'megatron', peft: 'qlora', params_dtype: 'nf4' }));
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /peft: "qlora" needs framework ddp, fsdp2 or deepspeed/);
});
