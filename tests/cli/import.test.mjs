// trainmem import / export as a user runs them: stdout carries only the config (or the argument
// line), stderr the read/assumed/ignored notes or the problems; bad input exits 2 with nothing on
// stdout. Needs the native build (build/core/cli/trainmem).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const cli = `${root}build/core/cli/trainmem`;
const data = `${root}tests/data`;
const run = (args, input) => spawnSync(cli, args, { input, encoding: 'utf8' });
const notes = (stderr, prefix) => stderr.split('\n').filter((l) => l.startsWith(prefix));

const dir = mkdtempSync(join(tmpdir(), 'trainmem-import-'));
const training = join(dir, 'training.json');
writeFileSync(training, JSON.stringify({
  seq_length: 8192, micro_batch_size: 1, tensor_model_parallel_size: 2,
  data_parallel_size: 4, use_distributed_optimizer: true, num_moe_experts: 8,
}));

test('import hf prints the model over the training settings and the notes on stderr', () => {
  const r = run(['import', 'hf', `${data}/hf/llama-3.1-8b.json`, '--base', training]);
  assert.equal(r.status, 0, r.stderr);
  const config = JSON.parse(r.stdout);
  assert.equal(config.num_layers, 32);
  assert.equal(config.num_query_groups, 8);
  assert.equal(config.seq_length, 8192);
  assert.equal(config.tensor_model_parallel_size, 2);
  assert.equal(config.num_moe_experts, undefined, "the base's model fields are replaced");
  assert.ok(notes(r.stderr, 'read: ').includes('read: num_query_groups ← num_key_value_heads = 8'));
  assert.ok(notes(r.stderr, 'assumed: ').includes(
    'assumed: kv_channels ← hidden_size / num_attention_heads = 128 (no head_dim)'));
  assert.equal(notes(r.stderr, 'ignored: ').length, 1);
  assert.equal(r.stderr.split('\n').filter(Boolean).length,
    ['read: ', 'key: ', 'assumed: ', 'ignored: '].reduce((n, p) => n + notes(r.stderr, p).length, 0),
    'every stderr line is a note');
  assert.ok(notes(r.stderr, 'key: ').includes('key: num_query_groups ← num_key_value_heads'), r.stderr);
});

test('import hf output pipes into estimate', () => {
  const imported = run(['import', 'hf', `${data}/hf/mixtral-8x7b.json`, '--base', training]);
  assert.equal(imported.status, 0, imported.stderr);
  const r = run(['estimate', '-', '--profile', 'megatron-lm'], imported.stdout);
  assert.equal(r.status, 0, r.stderr);
  const preset = JSON.parse(run(['presets']).stdout).presets.find((p) => p.id === 'mixtral-8x7b');
  assert.ok(Math.abs(JSON.parse(r.stdout).params.total / preset.published_params.total - 1) < 0.005);
});

test('import hf reads stdin and the nested text_config of gemma3', () => {
  const r = run(['import', 'hf', '-'], readFileSync(`${data}/hf/gemma-3-27b.json`, 'utf8'));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).vocab_size, 262208);
  assert.ok(notes(r.stderr, 'read: ')[0].startsWith('read: model ← text_config'));
});

test('import hf: bad input exits 2 with the message on stderr and nothing on stdout', () => {
  const bad = run(['import', 'hf', '-'], JSON.stringify({ model_type: 'bert' }));
  assert.equal(bad.status, 2);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^model_type: "bert" is not supported; supported: llama, mistral, /);
  const missing = run(['import', 'hf', '-'], JSON.stringify({ model_type: 'llama', num_hidden_layers: 2 }));
  assert.equal(missing.status, 2);
  assert.equal(missing.stdout, '');
  assert.deepEqual(missing.stderr.trimEnd().split('\n'), [
    'hidden_size: missing from config.json (model_type llama needs it)',
    'num_attention_heads: missing from config.json (model_type llama needs it)',
    'intermediate_size: missing from config.json (model_type llama needs it)',
    'vocab_size: missing from config.json (model_type llama needs it)',
  ]);
  assert.equal(run(['import', 'hf', '-'], '{').status, 2);
  assert.equal(run(['import', 'hf']).status, 2);
  assert.equal(run(['import', 'safetensors', 'x']).status, 2);
  assert.equal(run(['import', 'hf', '/nonexistent.json']).status, 2);
  const badBase = run(['import', 'hf', `${data}/hf/gpt2.json`, '--base', '-'], '{"num_layer": 2}');
  assert.equal(badBase.status, 2);
  assert.equal(badBase.stdout, '');
  assert.equal(badBase.stderr, '--base: num_layer: unknown field; did you mean "num_layers"?\n');
});

const bridgeBase = join(dir, 'bridge.json');
writeFileSync(bridgeBase, JSON.stringify({ profile: 'megatron-bridge' }));

test('import megatron-args reads a launch script and estimates the reference example to the byte', () => {
  // Over a reference profile's base the trainmem profile's fields the line sets (--bf16, the
  // framework) are left out and named; the config estimates as Megatron-Bridge does.
  const imported = run(['import', 'megatron-args', `${data}/megatron/llama3-70b.txt`, '--base', bridgeBase]);
  assert.equal(imported.status, 0, imported.stderr);
  assert.ok(notes(imported.stderr, 'ignored: ').includes('ignored: --lr 1.5e-4: not used by the estimate'));
  assert.ok(notes(imported.stderr, 'ignored: ').includes(
    'ignored: params_dtype = "bf16": the megatron-bridge profile does not read it (trainmem profile only)'));
  const r = run(['estimate', '-'], imported.stdout);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).total_bytes, 45169291776);
  // Over the default base the same config is the trainmem profile's: it rejects nothing.
  const trainmem = run(['import', 'megatron-args', `${data}/megatron/llama3-70b.txt`]);
  assert.equal(JSON.parse(trainmem.stdout).params_dtype, 'bf16');
  assert.equal(run(['estimate', '-'], trainmem.stdout).status, 0);
});

test('import megatron-args reads stdin by default and reports bad values', () => {
  const ok = run(['import', 'megatron-args'], '--tensor-model-parallel-size 4 --sequence-parallel');
  assert.equal(ok.status, 0, ok.stderr);
  // A line without the model's shape overlays the base: only what it says, and that it is Megatron's.
  assert.deepEqual(JSON.parse(ok.stdout), { sequence_parallel: true, tensor_model_parallel_size: 4, framework: 'megatron' });
  const bad = run(['import', 'megatron-args', '-'], '--num-layers 32 --moe-layer-freq "[0]*2+1"');
  assert.equal(bad.status, 2);
  assert.equal(bad.stdout, '');
  assert.equal(bad.stderr, '--moe-layer-freq: cannot add a list and an integer in "[0]*2+1"\n');
});

test('import megatron-args sets an MoE model without a dispatcher to allgather, Megatron-LM\'s default, and says so', () => {
  const dispatcher = (stderr) => notes(stderr, 'assumed: ').filter((l) => l.includes('moe_token_dispatcher_type'));
  // Megatron-LM's default dispatcher is allgather (arguments.py @ 020d85e5): set and named.
  const plain = run(['import', 'megatron-args'], '--num-experts 4 --moe-router-topk 1');
  assert.equal(plain.status, 0, plain.stderr);
  assert.equal(JSON.parse(plain.stdout).moe_token_dispatcher_type, 'allgather');
  assert.deepEqual(dispatcher(plain.stderr), ["assumed: moe_token_dispatcher_type ← allgather (no " +
    "--moe-token-dispatcher-type: Megatron-LM's default)"]);
  // Given, the flag is read (alltoall) or reported as not modelled (allgather): no assumption.
  const given = run(['import', 'megatron-args'], '--num-experts 4 --moe-token-dispatcher-type alltoall');
  assert.equal(given.status, 0, given.stderr);
  assert.deepEqual(dispatcher(given.stderr), []);
  // A dense model has no dispatcher to speak of.
  const dense = run(['import', 'megatron-args'], '--num-layers 2 --hidden-size 64');
  assert.deepEqual(dispatcher(dense.stderr), []);
});

test('import megatron-args reads Megatron-LM\'s functional-test config (YAML) with --gpus', () => {
  const file = join(dir, 'model_config.yaml');
  writeFileSync(file, [
    'ENV_VARS:', '  NVTE_FUSED_ATTN: 0', 'MODEL_ARGS:', '  --num-layers: 12', '  --hidden-size: 512',
    '  --num-attention-heads: 8', '  --seq-length: 1024', '  --micro-batch-size: 4', '  --vocab-size: 50257',
    '  --tensor-model-parallel-size: 2', '  --bf16: true', '  --save: ${CHECKPOINT_SAVE_PATH}', 'TEST_TYPE: regular', '',
  ].join('\n'));
  const r = run(['import', 'megatron-args', file, '--gpus', '4']);
  assert.equal(r.status, 0, r.stderr);
  const config = JSON.parse(r.stdout);
  assert.equal(config.data_parallel_size, 2);  // 4 GPUs / TP 2
  assert.equal(config.attention_backend, 'flash');  // NVTE_FUSED_ATTN=0
  assert.equal(config.params_dtype, 'bf16');
  assert.ok(notes(r.stderr, 'read: ').includes('read: GPUS_PER_NODE ← --gpus 4'));
  assert.equal(run(['estimate', '-'], r.stdout).status, 0);
  const bad = run(['import', 'megatron-args', file.replace('model_config', 'missing')]);
  assert.equal(bad.status, 2);
});

test('export writes Megatron-LM arguments that import back to the same estimate', () => {
  // A Megatron run, compared in Megatron-Bridge's profile (trainmem's own fields add notes).
  const imported = run(['import', 'megatron-args', `${data}/megatron/deepseek-v3.txt`, '--base', bridgeBase]).stdout;
  const exported = run(['export', '-'], imported);
  assert.equal(exported.status, 0, exported.stderr);
  assert.match(exported.stdout, /--moe-layer-freq '\(\[0\]\*3\+\[1\]\*58\)'/);
  assert.deepEqual(notes(exported.stderr, 'note: '), [
    'note: data_parallel_size = 64: not a Megatron-LM argument (Megatron derives it from the ' +
      'launcher); launch on WORLD_SIZE = DP × TP × PP × CP = 64 × 2 × 16 × 1 = 2048 GPUs',
  ]);
  const back = run(['import', 'megatron-args', '-', '--base', bridgeBase], `WORLD_SIZE=2048 ${exported.stdout}`);
  assert.equal(back.status, 0, back.stderr);
  const before = JSON.parse(run(['estimate', '-'], imported).stdout);
  const after = JSON.parse(run(['estimate', '-'], back.stdout).stdout);
  assert.equal(after.total_bytes, before.total_bytes);
  assert.deepEqual(after.config, before.config);
});

test('export --format json writes every resolved field, which estimates the same', () => {
  const config = run(['import', 'hf', `${data}/hf/qwen3-8b.json`, '--base', training]).stdout;
  const exported = run(['export', '-', '--format', 'json'], config);
  assert.equal(exported.status, 0, exported.stderr);
  const resolved = JSON.parse(exported.stdout);
  assert.equal(resolved.kv_channels, 128);
  assert.equal(resolved.make_vocab_size_divisible_by, 128);
  const a = JSON.parse(run(['estimate', '-'], config).stdout);
  const b = JSON.parse(run(['estimate', '-'], exported.stdout).stdout);
  assert.equal(b.total_bytes, a.total_bytes);
});

test('export: bad config or usage exits 2 with nothing on stdout', () => {
  const bad = run(['export', '-'], JSON.stringify({ num_layers: 2 }));
  assert.equal(bad.status, 2);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^hidden_size: is required/);
  assert.equal(run(['export', '-', '--format', 'yaml'], '{}').status, 2);
  assert.equal(run(['export']).status, 2);
});
