// trainmem import torchtune | torchtitan | deepspeed | axolotl | accelerate as a user runs them, on the real
// config files of tests/import/fixtures/ (each beside a .source naming repository, path and
// commit). Expected values are read off the fixture files by hand. Needs the native build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const cli = `${root}build/core/cli/trainmem`;
const fixtures = `${root}tests/import/fixtures`;
const run = (args) => spawnSync(cli, args, { encoding: 'utf8' });
const notes = (stderr, prefix) => stderr.split('\n').filter((l) => l.startsWith(prefix));
const dir = mkdtempSync(join(tmpdir(), 'trainmem-frameworks-'));

test('import torchtune: the 3B LoRA recipe with tune run overrides', () => {
  // 3B_lora_single_device.yaml: rank 64 on q_proj, v_proj, output_proj + MLP; overrides as the README's table.
  const r = run(['import', 'torchtune', `${fixtures}/torchtune/llama3_2-3B_lora_single_device.yaml`,
    'batch_size=2', 'dataset.packed=True', 'tokenizer.max_seq_len=4096', 'gradient_accumulation_steps=1',
    'loss=torchtune.modules.loss.CEWithChunkedOutputLoss']);
  assert.equal(r.status, 0, r.stderr);
  const c = JSON.parse(r.stdout);
  assert.equal(c.num_layers, 28);
  assert.equal(c.peft, 'lora');
  assert.equal(c.lora_rank, 64);
  assert.deepEqual(c.lora_target_modules, ['q_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
  assert.equal(c.seq_length, 4096);
  assert.equal(c.micro_batch_size, 2);
  // The accumulation, torchtune's knob, not the global batch (batch × accumulation × ranks), which
  // follows the GPU count.
  assert.equal(c.num_microbatches, 1);
  assert.equal(c.global_batch_size, undefined);
  assert.equal(c.cross_entropy_chunks, 8);
  assert.equal(c.framework, 'ddp');
  assert.ok(notes(r.stderr, 'read: ').includes('read: override dataset.packed = true'));
  assert.ok(notes(r.stderr, 'assumed: ').some((l) => l.startsWith('assumed: version ← torchtune 0.6')));
  assert.equal(r.stderr.split('\n').filter(Boolean).length,
    ['read: ', 'key: ', 'assumed: ', 'ignored: '].reduce((n, p) => n + notes(r.stderr, p).length, 0), 'every stderr line is a note');
  // The recipe's own words for the fields it sets from one key.
  assert.ok(notes(r.stderr, 'key: ').includes('key: micro_batch_size ← batch_size'), r.stderr);
});

test('import torchtitan: the 405B job on 512 GPUs with PP 8, overrides as --section.key', () => {
  const r = run(['import', 'torchtitan', `${fixtures}/torchtitan/llama3_405b.toml`, '--gpus', '512',
    '--experimental.pipeline_parallel_degree', '8', '--training.batch_size=32', '--float8.enable_float8_linear']);
  assert.equal(r.status, 0, r.stderr);
  const c = JSON.parse(r.stdout);
  assert.equal(c.num_layers, 126);
  assert.equal(c.tensor_model_parallel_size, 8);
  assert.equal(c.pipeline_model_parallel_size, 8);
  assert.equal(c.data_parallel_size, 8);
  assert.equal(c.micro_batch_size, 4);
  assert.equal(c.num_layers_in_first_pipeline_stage, 15);
  assert.equal(c.num_layers_in_last_pipeline_stage, 15);
  assert.equal(c.fp8_recipe, 'tensorwise');
});

test('import deepspeed: "auto" values from --hf-args, the model from --preset', () => {
  const args = join(dir, 'args.json');
  writeFileSync(args, JSON.stringify({ per_device_train_batch_size: 2, gradient_accumulation_steps: 8, bf16: true }));
  // The config and the flags do not say the sequence length: the import asks for it, then takes it from a base.
  const open = run(['import', 'deepspeed', `${fixtures}/deepspeed/zero3_bf16.json`, '--hf-args', args, '--preset', 'llama-3.1-8b', '--gpus', '4']);
  assert.equal(open.status, 2);
  assert.equal(open.stdout, '');
  assert.match(open.stderr, /^seq_length: is required \(a positive integer\): a DeepSpeed config does not say it: give it, or max_length in --hf-args$/m);
  const base = join(dir, 'base.json');
  writeFileSync(base, JSON.stringify({ seq_length: 4096 }));
  const r = run(['import', 'deepspeed', `${fixtures}/deepspeed/zero3_bf16.json`, '--hf-args', args, '--preset', 'llama-3.1-8b', '--gpus', '4', '--base', base]);
  assert.equal(r.status, 0, r.stderr);
  const c = JSON.parse(r.stdout);
  assert.equal(c.framework, 'deepspeed');
  assert.equal(c.zero_stage, 3);
  assert.equal(c.micro_batch_size, 2);
  assert.equal(c.num_microbatches, 8);  // train_batch_size "auto": the Trainer's accumulation (64 = 2 × 8 × 4 follows the GPUs)
  assert.equal(c.global_batch_size, undefined);
  assert.equal(c.num_layers, 32);
  const missing = run(['import', 'deepspeed', `${fixtures}/deepspeed/zero3_bf16.json`]);
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /needs the model: --model CONFIG\.json or --preset ID/);
});

test('import accelerate: the PEFT docs\' QLoRA ZeRO-3 run, config file and launch command after --', () => {
  const base = join(dir, 'base-seq.json');
  writeFileSync(base, JSON.stringify({ seq_length: 2048 }));
  // peft-deepspeed_config_z3_qlora.yaml: DEEPSPEED, zero_stage 3, 2 processes, no accumulation
  // (so "auto" from the Trainer's 2). The command as the doc prints it, quotes and all.
  const launch = ['accelerate', 'launch', '--config_file', 'configs/deepspeed_config_z3_qlora.yaml', 'train.py',
    '--model_name_or_path', 'meta-llama/Llama-2-70b-hf', '--chat_template_format', 'chatml', '--max_seq_len', '2048',
    '--bf16', 'True', '--packing', 'True', '--per_device_train_batch_size', '2', '--gradient_accumulation_steps', '2',
    '--gradient_checkpointing', 'True', '--use_flash_attn', 'True', '--use_peft_lora', 'True', '--lora_r', '8',
    '--lora_target_modules', 'all-linear', '--use_4bit_quantization', 'True', '--bnb_4bit_quant_storage_dtype', 'bfloat16',
    '--learning_rate', '1e-4', '--report_to', 'wandb', '--my_own_flag', '3'];
  const r = run(['import', 'accelerate', `${fixtures}/accelerate/peft-deepspeed_config_z3_qlora.yaml`, '--', ...launch]);
  assert.equal(r.status, 0, r.stderr);
  const c = JSON.parse(r.stdout);
  assert.equal(c.framework, 'deepspeed');
  assert.equal(c.zero_stage, 3);
  assert.equal(c.data_parallel_size, 2);
  assert.equal(c.num_microbatches, 2);  // --gradient_accumulation_steps 2 (global 2 × 2 × 2 follows the GPUs)
  assert.equal(c.global_batch_size, undefined);
  assert.equal(c.peft, 'qlora');
  assert.equal(c.params_dtype, 'nf4');
  assert.equal(c.vocab_size, 32008);     // 32000 + 5 chatml tokens, to a multiple of 8
  assert.equal(c.lora_dropout, 0.1);     // examples/sft/train.py's default
  assert.ok(notes(r.stderr, 'ignored: ').some((l) => l.includes('--learning_rate') && l.endsWith('do not change memory')));
  assert.ok(notes(r.stderr, 'ignored: ').includes('ignored: --my_own_flag: not an argument trainmem reads (TrainingArguments, TRL\'s SFTConfig/ModelConfig, PEFT\'s examples/sft)'));
  // --gpus wins over num_processes; a stray word is a second value of the flag before it
  // (HfArgumentParser's lists), which a one-value flag names.
  const eight = run(['import', 'accelerate', `${fixtures}/accelerate/peft-deepspeed_config_z3_qlora.yaml`, '--gpus', '8', '--', ...launch]);
  assert.equal(JSON.parse(eight.stdout).data_parallel_size, 8);
  const bad = run(['import', 'accelerate', `${fixtures}/accelerate/peft-deepspeed_config_z3_qlora.yaml`, '--', 'train.py', '--bf16', 'True', 'stray']);
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr, '--bf16: must be true or false, got ["True", "stray"]\n');
  // --launch RUN.sh: the script as the PEFT docs print it, continuations and quotes as the shell reads them.
  const script = join(dir, 'run_peft_qlora_deepspeed_stage3.sh');
  writeFileSync(script, `accelerate launch --config_file "configs/deepspeed_config_z3_qlora.yaml"  train.py \\
--model_name_or_path "meta-llama/Llama-2-70b-hf" \\
--per_device_train_batch_size 2 \\
--gradient_accumulation_steps 2 \\
--use_peft_lora True \\
--use_4bit_quantization True
`);
  const file = run(['import', 'accelerate', `${fixtures}/accelerate/peft-deepspeed_config_z3_qlora.yaml`, '--launch', script, '--base', base]);
  assert.equal(file.status, 0, file.stderr);
  const f = JSON.parse(file.stdout);
  assert.equal(f.num_microbatches, 2);
  assert.equal(f.global_batch_size, undefined);
  assert.equal(f.peft, 'qlora');
});

test('import deepspeed with the torchrun command that launches it: the world, the model and the Trainer\'s flags from the command', () => {
  const r = run(['import', 'deepspeed', `${fixtures}/deepspeed/zero3_bf16.json`, '--', 'torchrun', '--nproc_per_node', '4',
    'train.py', '--model_name_or_path', 'meta-llama/Llama-3.1-8B', '--deepspeed', 'zero3_bf16.json',
    '--per_device_train_batch_size', '2', '--gradient_accumulation_steps', '8', '--bf16', 'True', '--max_length', '4096']);
  assert.equal(r.status, 0, r.stderr);
  const c = JSON.parse(r.stdout);
  assert.equal(c.data_parallel_size, 4);
  assert.equal(c.num_microbatches, 8);  // --gradient_accumulation_steps 8 (global 2 × 8 × 4 follows the GPUs)
  assert.equal(c.global_batch_size, undefined);
  assert.equal(c.num_layers, 32);
  assert.equal(c.zero_stage, 3);
  assert.ok(notes(r.stderr, 'read: ').includes('read: gpus ← torchrun\'s processes = 4'));
});

test('import axolotl: QLoRA with FSDP offload on 2 GPUs', () => {
  const r = run(['import', 'axolotl', `${fixtures}/axolotl/llama-3-qlora-fsdp-70b.yaml`, '--gpus', '2']);
  assert.equal(r.status, 0, r.stderr);
  const c = JSON.parse(r.stdout);
  assert.equal(c.peft, 'qlora');
  assert.equal(c.lora_rank, 8);
  assert.equal(c.seq_length, 512);
  assert.equal(c.framework, 'fsdp2');
  assert.equal(c.offload_params, true);
});

test('a sharded run\'s GPU count is asked, not assumed, when neither the file nor a command says it (issue 32 item 1)', () => {
  // axolotl's fsdp: and a ZeRO-3 config shard over every GPU the launcher starts: without --gpus
  // the import stops on world_size, as the page marks that field; a DDP run still assumes one GPU.
  const fsdp = run(['import', 'axolotl', `${fixtures}/axolotl/llama-3-qlora-fsdp-70b.yaml`]);
  assert.equal(fsdp.status, 2);
  assert.equal(fsdp.stdout, '');
  assert.match(fsdp.stderr, /^world_size: axolotl's fsdp: shards over every GPU the launcher starts, and the file does not say how many: give the GPU count \(--gpus\)$/m);
  assert.ok(!/^(assumed|key): data_parallel_size/m.test(fsdp.stderr), 'no data-parallel size is said for a GPU count asked');
  const base = join(dir, 'base-seq-4096.json');
  writeFileSync(base, JSON.stringify({ seq_length: 4096 }));
  const zero3 = run(['import', 'deepspeed', `${fixtures}/deepspeed/zero3_bf16.json`, '--preset', 'llama-3.1-8b', '--base', base]);
  assert.equal(zero3.status, 2);
  assert.match(zero3.stderr, /^world_size: a ZeRO stage 3 config shards over every GPU the launcher starts, and neither it nor a launch command says how many: give the GPU count \(--gpus\)$/m);
  const yaml = join(dir, 'fsdp-no-processes.yaml');
  writeFileSync(yaml, 'distributed_type: FSDP\nmixed_precision: bf16\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n');
  const acc = run(['import', 'accelerate', yaml, '--preset', 'llama-3.1-8b', '--base', base]);
  assert.equal(acc.status, 2);
  assert.match(acc.stderr, /^world_size: distributed_type FSDP shards over every GPU the launcher starts, and neither num_processes nor a launch command says how many: give the GPU count \(--gpus\)$/m);
  assert.equal(run(['import', 'accelerate', yaml, '--preset', 'llama-3.1-8b', '--base', base, '--gpus', '8']).status, 0);
  const ddp = run(['import', 'axolotl', `${fixtures}/axolotl/llama-3-qlora.yml`]);
  assert.equal(ddp.status, 0, ddp.stderr);
  assert.ok(notes(ddp.stderr, 'assumed: ').includes('assumed: gpus ← 1 (no --gpus)'));
});

test('bad input: exit 2, one message per problem naming the key; syntax errors with line and column', () => {
  const yaml = join(dir, 'bad.yaml');
  writeFileSync(yaml, 'model:\n  _component_: [torchtune\n');
  let r = run(['import', 'torchtune', yaml]);
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^.*bad\.yaml: line \d+, column \d+: /);
  const toml = join(dir, 'bad.toml');
  writeFileSync(toml, '[model]\nname = "llama3\n');
  r = run(['import', 'torchtitan', toml, '--gpus', '8']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /bad\.toml: line 2, column \d+: /);
  r = run(['import', 'torchtune', `${fixtures}/torchtune/llama3_2-3B_full_single_device.yaml`, 'batchsize=2']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, "batchsize: the override names no key of the config or of torchtune's recipes\n");
  r = run(['import', 'torchtitan', `${fixtures}/torchtitan/llama3_8b.toml`, '--gpus', '8', '--model.flavor=9B']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^model\.flavor: "llama3" "9B" has no trainmem preset/);
  r = run(['import', 'torchtune', `${fixtures}/axolotl/llama-3-lora-8b.yml`]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /not a torchtune recipe config \(it looks like an axolotl config: use import axolotl\)/);
});

test('bad values: --gpus, huge counts, wrong types, empty and binary files give exit 2 and a message naming the key', () => {
  const full = `${fixtures}/torchtune/llama3_2-3B_full_single_device.yaml`;
  for (const gpus of ['0', '-3', 'abc', '1e400', '99999999999999999999']) {
    const r = run(['import', 'torchtune', full, '--gpus', gpus]);
    assert.equal(r.status, 2, gpus);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^gpus: must be a positive integer, got /, gpus);
  }
  // Huge counts: each is named by its key with its field's range (the import multiplies them no
  // more: the accumulation is the microbatch count; it was once a product that overflowed and a
  // wrong value under the wrong key).
  let r = run(['import', 'torchtune', full, 'batch_size=9000000000000000', 'gradient_accumulation_steps=9000000000000000']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^batch_size: must be at most 1000000000000, got 9000000000000000$/m);
  assert.match(r.stderr, /^gradient_accumulation_steps: must be at most 1000000000000, got 9000000000000000$/m);
  const write = (name, text) => { const p = join(dir, name); writeFileSync(p, text); return p; };
  const compile = write('compile.yaml', 'model:\n  _component_: torchtune.models.llama3_2.llama3_2_1b\nbatch_size: 2\ncompile: {model: 3}\n');
  r = run(['import', 'torchtune', compile]);
  assert.equal(r.status, 2, r.stderr);  // was an uncaught exception (abort)
  assert.equal(r.stderr, 'compile.model: must be true or false, got 3\n');
  const args = write('zero-ga.json', '{"gradient_accumulation_steps": 0}');
  const ds = write('tb.json', '{"train_batch_size": 8, "zero_optimization": {"stage": 2}}');
  r = run(['import', 'deepspeed', ds, '--hf-args', args, '--preset', 'llama-2-7b']);
  assert.equal(r.status, 2, r.stderr);  // was a division by zero (SIGFPE)
  assert.equal(r.stderr, '--hf-args gradient_accumulation_steps: must be a positive integer, got 0\n');
  for (const [kind, name, text] of [['torchtune', 'empty.yaml', ''], ['torchtitan', 'empty.toml', ''], ['deepspeed', 'empty.json', ''],
    ['axolotl', 'binary.yaml', '\u0000\u0001\uffff'], ['torchtitan', 'binary.toml', '\u0000\u0001\uffff']]) {
    r = run(['import', kind, write(name, text), '--gpus', '8', '--preset', 'llama-2-7b'].slice(0, kind === 'deepspeed' ? 7 : 5));
    assert.equal(r.status, 2, `${kind} ${name}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.ok(r.stderr.length > 0 && !/terminate|Aborted/.test(r.stderr), r.stderr);
  }
});
