// `trainmem plan` as a user runs it: JSON and text output, sizes, solvers, exit codes and
// messages. Needs the native build (build/core/cli/trainmem).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const root = new URL('../../', import.meta.url).pathname;
const cli = `${root}build/core/cli/trainmem`;
const run = (args, input) => spawnSync(cli, args, { input, encoding: 'utf8' });

// A 4-layer model; runtime overheads zeroed so that memory is model state and activations.
const tiny = {
  num_layers: 4, hidden_size: 256, num_attention_heads: 8, num_query_groups: 4,
  ffn_hidden_size: 1024, vocab_size: 1000, swiglu: true, normalization: 'RMSNorm',
  add_bias_linear: false, seq_length: 256, micro_batch_size: 1, global_batch_size: 16,
  cuda_context_bytes: 0, nccl_bytes_per_communicator: 0, workspace_bytes: 0,
};
const tinyJson = JSON.stringify(tiny);

test('plan prints the fitting layouts as JSON, best first, each within the limit', () => {
  const r = run(['plan', '-', '--gpus', '8', '--gpu-memory', '40MB', '--max-results', '5'], tinyJson);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  const out = JSON.parse(r.stdout);
  assert.equal(out.ok, true);
  assert.equal(out.gpus, 8);
  assert.equal(out.limit_bytes, 36000000);  // 40 MB × (1 − 0.10)
  assert.equal(out.metric, 'device');
  assert.equal(out.layouts.length, 5);
  assert.deepEqual(out.layouts.map((l) => l.rank), [1, 2, 3, 4, 5]);
  for (const l of out.layouts) assert.ok(l.metric_bytes <= out.limit_bytes);
});

test("a layout's fields written over the config give its memory in trainmem estimate", () => {
  const out = JSON.parse(run(['plan', '-', '--gpus', '8', '--gpu-memory', '40MB', '--uneven'], tinyJson).stdout);
  for (const layout of out.layouts) {
    const r = run(['estimate', '-'], JSON.stringify({ ...tiny, ...layout.fields }));
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).device_bytes, layout.device_bytes);
  }
});

test('--format text prints a table', () => {
  const r = run(['plan', '-', '--gpus', '8', '--gpu-memory', '40MB', '--max-results', '3', '--format', 'text'], tinyJson);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines[0], 'Plan for 8 GPUs (8 per node) of 38.15 MiB, headroom 10.0%: a layout may use 34.33 MiB '
    + '(device bytes, trainmem profile)');
  assert.match(lines[1], /^rank +TP +PP stages +VPP +CP +EP ETP +DP sharding recompute +MBS +seq +memory headroom$/);
  // 32.00 MiB: the default reserved figure takes the simulated caching allocator where it is
  // larger, as its whole segments are on a model this small (Megatron's gradient buffer, 1-10 MB
  // here, takes a 20 MiB segment of its own; micro batch 2 needs 34 MiB).
  assert.match(lines[2], /^ +1 +2 +1 even +- +1 +- +- +4 dist-opt none +1 +256 +32\.00 MiB +16\.1%$/);
  assert.match(lines.at(-1), /^Search complete: /);
});

test('sizes are read as bytes, GB (10^9) or GiB (2^30)', () => {
  const limit = (size) => JSON.parse(run(['plan', '-', '--gpus', '8', '--gpu-memory', size, '--max-results', '1'],
    tinyJson).stdout).gpu_memory_bytes;
  assert.equal(limit('80GiB'), 85899345920);
  assert.equal(limit('85899345920'), 85899345920);
  assert.equal(limit('80GB'), 80000000000);
  assert.equal(limit('80 gib'), 85899345920);
});

test('--solve answers with the layout that achieves the answer', () => {
  const mbs = JSON.parse(run(['plan', '-', '--gpus', '8', '--gpu-memory', '40MB', '--solve', 'max-micro-batch'],
    tinyJson).stdout);
  assert.equal(mbs.solution.found, true);
  assert.equal(mbs.solution.layout.fields.micro_batch_size, mbs.solution.value);
  // 28 MB GPUs: below 20 MiB nothing of this model's Megatron runs fits at any count (its gradient
  // buffer, 1-10 MB however it is split, takes a 20 MiB segment).
  const gpus = JSON.parse(run(['plan', '-', '--gpu-memory', '28MB', '--gpus-per-node', '4', '--solve', 'min-gpus'],
    JSON.stringify({ ...tiny, global_batch_size: 64 })).stdout);
  assert.equal(gpus.solution.found, true);
  assert.equal(gpus.gpus, gpus.solution.value);
  const f = gpus.solution.layout.fields;
  assert.equal(f.tensor_model_parallel_size * f.pipeline_model_parallel_size * f.context_parallel_size
    * f.data_parallel_size, gpus.solution.value);
});

test('a search cut by --max-evaluations says that it stopped', () => {
  const r = run(['plan', '-', '--gpus', '8', '--gpu-memory', '40MB', '--max-evaluations', '3'], tinyJson);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.complete, false);
  assert.equal(out.stopped, 'max_evaluations: stopped after 3 estimates; the layouts listed are the best of those '
    + 'evaluated, not necessarily the best overall');
});

test('bad input: exit 2, one message per problem on stderr, nothing on stdout', () => {
  const r = run(['plan', '-', '--gpus', '0', '--gpu-memory', '80 parsecs', '--search', 'tp,dp', '--headroom', '1'],
    JSON.stringify({ ...tiny, num_layers: 0 }));
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.deepEqual(r.stderr.trimEnd().split('\n'), [
    'gpus: must be a positive integer, got 0',
    'gpu_memory_bytes: must be a size such as 80GiB, 80GB or 85899345920 (bytes), got the string "80 parsecs"',
    'search: unknown knob "dp"; knobs are "tp", "pp", "vpp", "cp", "ep", "etp", "sharding", "recompute" or "micro_batch_size"',
    'headroom: must be at least 0 and less than 1 (a share of the GPU), got 1',
    'num_layers: must be at least 1, got 0',
  ]);
  const missing = run(['plan', '-', '--gpus', '8'], tinyJson);
  assert.equal(missing.status, 2);
  assert.equal(missing.stderr.trimEnd(),
    'gpu_memory_bytes: is required: the capacity of one GPU (e.g. 80GiB), in the options or in the config');
});

test('usage errors exit 2', () => {
  assert.equal(run(['plan', '-', '--gpus'], tinyJson).status, 2);
  assert.equal(run(['plan', '-', '--gpu-memory', '1GiB', '--format', 'xml'], tinyJson).status, 2);
  assert.equal(run(['plan', '-', '--frobnicate'], tinyJson).status, 2);
  assert.equal(run(['plan'], tinyJson).status, 2);
  assert.equal(run(['plan', '/nonexistent.json', '--gpu-memory', '1GiB']).status, 2);
});
