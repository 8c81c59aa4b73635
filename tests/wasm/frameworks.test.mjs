// The tools module's framework importer (importFramework) as the page uses it: the fixture files
// parsed by the page's own parsers (web/js/import-panel.js parseDocument: the vendored yaml and
// smol-toml), the tree handed to the core. Expected values read off the fixture files by hand;
// the same files through the native CLI must give the same config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { loadEngine } from './load.mjs';
import { detectKind, parseDocument, splitOverrides } from '../../web/js/import-panel.js';

const engine = await loadEngine();
const fixtures = new URL('../import/fixtures/', import.meta.url);
const text = (p) => readFileSync(new URL(p, fixtures), 'utf8');
const cli = new URL('../../build/core/cli/trainmem', import.meta.url).pathname;

test('detectKind tells the frameworks apart by shape', () => {
  assert.equal(detectKind(text('torchtune/llama3_2-3B_lora_single_device.yaml')), 'torchtune');
  assert.equal(detectKind(text('torchtitan/llama3_8b.toml')), 'torchtitan');
  assert.equal(detectKind(text('deepspeed/zero3_bf16.json')), 'deepspeed');
  assert.equal(detectKind(text('axolotl/llama-3-lora-8b.yml')), 'axolotl');
  assert.equal(detectKind('torchrun pretrain_gpt.py --num-layers 2'), 'megatron');
  for (const json of ['[1, 2, 3]', '42', 'null', '"hello"']) assert.equal(detectKind(json), 'hf', json); // JSON, no object: the JSON reader names what it must be
  assert.equal(detectKind('[job]\ndump_folder = "./outputs"\n[model]\nname = "llama3"'), 'torchtitan');
  assert.equal(detectKind(text('megatron/gpt3_mcore_te_tp2_pp2_resume_torch_dist.yaml')), 'megatron-args');
  assert.deepEqual(splitOverrides(' batch_size=2  lora_attn_modules="[q_proj, v_proj]"'), ['batch_size=2', 'lora_attn_modules="[q_proj, v_proj]"']);
});

test('importFramework: torchtune 3B LoRA (rank 64 on q, v, o and the MLP) over the page config', async () => {
  const { tree } = await parseDocument(text('torchtune/llama3_2-3B_lora_single_device.yaml'), 'yaml');
  assert.equal(engine.detectFramework(tree), 'torchtune');
  const r = engine.importFramework('torchtune', tree, { overrides: ['dataset.packed=True', 'tokenizer.max_seq_len=4096'] },
    { gpu_memory_bytes: 85899345920 });
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assert.equal(r.config.num_layers, 28);
  assert.equal(r.config.lora_rank, 64);
  assert.deepEqual(r.config.lora_target_modules, ['q_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
  assert.equal(r.config.seq_length, 4096);
  assert.equal(r.config.gpu_memory_bytes, 85899345920);
  assert.ok(r.assumed.some((l) => l.startsWith('version ← torchtune 0.6')));
});

test('the page and the CLI give the same config for each fixture', async () => {
  const cases = [
    ['torchtune', 'torchtune/llama3_2-3B_qlora_single_device.yaml', 'yaml', { overrides: ['batch_size=2'] }, ['batch_size=2']],
    ['torchtitan', 'torchtitan/llama3_405b.toml', 'toml', { gpus: 512, overrides: ['experimental.pipeline_parallel_degree=8', 'training.batch_size=32'] },
      ['--gpus', '512', '--experimental.pipeline_parallel_degree=8', '--training.batch_size=32']],
    ['axolotl', 'axolotl/llama-3-qlora-fsdp-70b.yaml', 'yaml', { gpus: 2 }, ['--gpus', '2']],
    ['deepspeed', 'deepspeed/zero3_bf16.json', 'json', { gpus: 8, preset: 'llama-2-70b' }, ['--gpus', '8', '--preset', 'llama-2-70b']],
    // Megatron-LM's CI configs: FP8 with its parameter gather and CP; fp16 on the local layers.
    ['megatron-args', 'megatron/gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp4_cp2_native_fp8_tp_sp_cp_tp_overlap.yaml', 'yaml', {}, []],
    ['megatron-args', 'megatron/gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp1_pp4_resume_torch_dist.yaml', 'yaml', { gpus: 4 }, ['--gpus', '4']],
  ];
  for (const [kind, file, format, options, args] of cases) {
    const { tree } = await parseDocument(text(file), format);
    const page = engine.importFramework(kind, tree, options, {});
    assert.equal(page.ok, true, `${file}: ${JSON.stringify(page.issues)}`);
    const native = spawnSync(cli, ['import', kind, new URL(file, fixtures).pathname, ...args], { encoding: 'utf8' });
    if (page.unresolved.length && kind !== 'megatron-args') {
      // A run's file that leaves a field open: the page asks for it, the CLI refuses with the same words.
      assert.equal(native.status, 2, file);
      const problems = native.stderr.split('\n').filter((l) => l && !/^(read: |key: |assumed: |ignored: |give )/.test(l));
      assert.deepEqual(problems, page.unresolved.map((u) => u.message), file);
      continue;
    }
    assert.equal(native.status, 0, native.stderr);
    assert.deepEqual(page.config, JSON.parse(native.stdout), file);
  }
});

test('a Megatron-LM test config with a custom layout imports alike in the page and the CLI, one count per stage', async () => {
  // Its "[layernorm mla_up_proj mlp moe_act]" list is read as the launcher splits it; its
  // --pipeline-model-parallel-layout Et*3|(tt|)*6tmL puts 3, 2 × 6 and 1 layers in 8 stages (PP 2, VPP 4).
  const file = 'megatron/gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental.yaml';
  const { tree } = await parseDocument(text(file), 'yaml');
  const page = engine.importFramework('megatron-args', tree, {}, {});
  assert.equal(page.ok, true, JSON.stringify(page.issues));
  const native = spawnSync(cli, ['import', 'megatron-args', new URL(file, fixtures).pathname], { encoding: 'utf8' });
  assert.equal(native.status, 0, native.stderr);
  assert.deepEqual(page.config, JSON.parse(native.stdout));
  assert.deepEqual(page.config.pipeline_stage_layers, [3, 2, 2, 2, 2, 2, 2, 1]);
  assert.equal(page.config.virtual_pipeline_model_parallel_size, 4);
  // The page's estimate of it (numbers in, numbers out) is the CLI's JSON path's.
  const config = { ...page.config, vocab_size: 50257 };
  assert.deepEqual(engine.estimate(config), engine.estimateJson(config));
});

test('syntax errors and bad options are issues, not exceptions', async () => {
  const yaml = await parseDocument('a: [1, 2\nb: 3\n', 'yaml', 'bad.yaml');
  assert.match(yaml.issues[0].message, /^bad\.yaml: line \d+, column \d+: /);
  const toml = await parseDocument('[model]\nname = "llama3\n', 'toml', 'bad.toml');
  assert.match(toml.issues[0].message, /^bad\.toml: line 2, column \d+: /);
  const r = engine.importFramework('torchtitan', { model: { name: 'llama3', flavor: '8B' } }, { gpus: 0 }, {});
  assert.equal(r.ok, false);
  assert.equal(r.issues[0].field, 'gpus');
  const k = engine.importFramework('hf', {}, {}, {});
  assert.equal(k.ok, false);
  assert.equal(k.issues[0].message, 'kind: must be "torchtune", "torchtitan", "deepspeed", "axolotl", "accelerate", "megatron-args" or "ms-swift-megatron"');
  const o = engine.importFramework('torchtitan', { model: { name: 'llama3', flavor: '8B' } }, { gpus: 8, presets: 'x' }, {});
  assert.equal(o.ok, false);
  assert.equal(o.issues[0].message, 'presets: unknown import option; did you mean "preset"?');
});

test('a note quoting a long non-ASCII value comes back as text, not an exception', () => {
  // The core cuts a shown value at 77 bytes: 60 × "é" would end in half a character there.
  const tree = { model: { _component_: 'torchtune.models.llama3_2.llama3_2_1b' }, batch_size: 2, optimizer: { _component_: 'é'.repeat(60) } };
  const r = engine.importFramework('torchtune', tree, {}, {});
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  const note = r.ignored.find((l) => l.startsWith('optimizer._component_ = '));
  assert.ok(note?.includes(`"${'é'.repeat(38)}..."`), note);
});

test('a number beyond a double is named by the core, not read as unset: DeepSpeed JSON and YAML alike', async () => {
  // JSON.parse makes 1e999 Infinity, which JSON text carries as null (unset): the run would be
  // imported with the page's micro batch and no word. The CLI's reader rejects the file.
  const json = await parseDocument('{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1e999}', 'json');
  assert.equal(json.tree.train_micro_batch_size_per_gpu, 'inf');
  const ds = engine.importFramework('deepspeed', json.tree, { gpus: 8, preset: 'llama-2-70b' }, { micro_batch_size: 4 });
  assert.equal(ds.ok, false);
  assert.match(ds.issues[0].message, /^train_micro_batch_size_per_gpu: .*"inf"/);
  const yaml = await parseDocument(text('torchtune/llama3_2-3B_lora_single_device.yaml').replace(/^batch_size: \d+/m, 'batch_size: .inf'), 'yaml');
  const tt = engine.importFramework('torchtune', yaml.tree, {}, {});
  assert.equal(tt.ok, false);
  assert.equal(tt.issues[0].message, 'batch_size: must be a positive integer, got "inf"');
  // An unfinished TOML job file is TOML (its reader names the line), not a command line.
  assert.equal(detectKind('[model]\nname ='), 'torchtitan');
  const toml = await parseDocument('[model]\nname =', 'toml');
  assert.match(toml.issues[0].message, /^JOB\.toml: line 2, column \d+: /);
});

test('a DeepSpeed config alone: its note says no model was given, not that the base\'s was kept; each field it needs is open', async () => {
  // QA at stop 46: over the page's empty base the report said "model ← the base config's" while
  // the form's model fields were empty.
  const { tree } = await parseDocument(text('deepspeed/zero3_bf16.json'), 'json');
  const alone = engine.importFramework('deepspeed', tree, {}, {});
  assert.equal(alone.ok, true);
  assert.ok(alone.assumed.some((n) => n.startsWith('model: none (the file names none')), alone.assumed.join('\n'));
  assert.ok(!alone.assumed.some((n) => n.startsWith('model ← the base config\'s')));
  assert.deepEqual(alone.unresolved.map((u) => u.field).sort(),
    ['hidden_size', 'num_attention_heads', 'num_layers', 'seq_length', 'vocab_size', 'world_size']);
  // Over a base with a model, the base's model is kept, and the note says so.
  const over = engine.importFramework('deepspeed', tree, {}, { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, seq_length: 2048 });
  assert.ok(over.assumed.some((n) => n.startsWith('model ← the base config\'s')), over.assumed.join('\n'));
  assert.equal(over.config.num_layers, 32);
});
