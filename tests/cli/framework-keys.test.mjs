// The framework key table the page labels fields with (web/js/framework-keys.js, issue 32 item 5),
// held equal to a fresh run of its generator over the real importers (tests/import/
// framework-keys.mjs), and checked against the framework files themselves: every key it names is
// written in one of that framework's config files the project holds, so the page cannot show a
// key the framework does not have. Needs the native build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { FRAMEWORK_KEYS, FRAMEWORK_VALUES } from '../../web/js/framework-keys.js';
import { KEYS_FILE, KINDS, collectKeys, moduleText } from '../import/framework-keys.mjs';
import { readSetups } from '../import/setups.mjs';
import { load_points } from '../validation/points.mjs';

const root = new URL('../../', import.meta.url).pathname;
const fresh = collectKeys();

test('web/js/framework-keys.js is what the importers give now', () => {
  assert.equal(readFileSync(KEYS_FILE, 'utf8'), moduleText(fresh.table, fresh.values),
    'the table differs from a fresh run: node tests/import/framework-keys.mjs --write');
  assert.deepEqual(Object.keys(FRAMEWORK_KEYS), KINDS);
  assert.ok(fresh.runs >= 150, `${fresh.runs} imports`);
});

test('every field in the table is a trainmem field', () => {
  const r = spawnSync(`${root}build/core/cli/trainmem`, ['fields'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const fields = new Set(JSON.parse(r.stdout).map((f) => f.name));
  for (const [kind, keys] of Object.entries(FRAMEWORK_KEYS)) {
    for (const field of Object.keys(keys)) assert.ok(fields.has(field), `${kind}: ${field} is no field`);
  }
});

// Each kind's files as text: its fixtures, fuzz seeds, data files, and the setups' and validation
// points' command-line overrides of it.
function frameworkText(kind) {
  const folder = kind === 'megatron-args' ? 'megatron' : kind;
  const dirs = [`tests/import/fixtures/${folder}`, `tests/fuzz/corpus/${folder}`];
  if (kind === 'hf') dirs.push('tests/data/hf');
  if (kind === 'megatron-args') dirs.push('tests/data/megatron');
  let text = '';
  for (const dir of dirs.filter((d) => existsSync(`${root}${d}`))) {
    for (const name of readdirSync(`${root}${dir}`)) if (!name.endsWith('.source')) text += readFileSync(`${root}${dir}/${name}`, 'utf8');
  }
  const records = [...readSetups().setups.map((s) => s.import),
    ...['points.json', 'finetune-points.json'].flatMap((t) => load_points(t).map((p) => p.framework_config))];
  for (const record of records) if (record?.kind === kind) text += (record.overrides ?? []).join(' ');
  return text;
}

// Keys the importers name for a field that no file here writes: the flag the field's value is the
// default of. Each is checked below by giving it.
const WRITTEN_ELSEWHERE = {
  // A run with --fp8-format and no --fp8-recipe takes the recipe flag's default, "delayed"
  // (megatron_args.cpp: "--fp8-format (--fp8-recipe's default: delayed)").
  'megatron-args': { fp8_recipe: '--fp8-recipe' },
};

test('a key no file writes is one the importer reads when given', () => {
  const r = spawnSync(`${root}build/core/cli/trainmem`, ['import', 'megatron-args', '-'],
    { input: '--num-layers 2 --fp8-format hybrid --fp8-recipe tensorwise', encoding: 'utf8' });
  assert.match(r.stderr, /^read: fp8_recipe ← --fp8-recipe tensorwise$/m);
});

test('every key is written in a file of its framework (no key the framework does not have)', () => {
  for (const [kind, keys] of Object.entries(FRAMEWORK_KEYS)) {
    const text = frameworkText(kind);
    for (const [field, key] of Object.entries(keys)) {
      // A dotted key is nested in YAML/TOML/JSON: its last part is what the file writes. A flag
      // is written as itself (Megatron-LM's test configs write "--num-layers:" too); a Trainer
      // argument in a JSON file without its dashes.
      const word = key.split('.').at(-1).replace(/^--/, '');
      if (WRITTEN_ELSEWHERE[kind]?.[field] === key) continue;
      assert.ok(text.includes(word), `${kind}: ${field} ← ${key}, but no ${kind} file writes ${word}`);
    }
  }
});

test('the frameworks\' own words for the batch, the sequence and the layout', () => {
  // By hand from the files: torchtune's recipe writes `batch_size: 2` and `tokenizer: max_seq_len`
  // (tests/import/fixtures/torchtune/llama3_1-8B_qlora_single_device.yaml, pytorch/torchtune @
  // 0b3e04a), torchtitan's job `[training] batch_size`, `seq_len` and `tensor_parallel_degree`
  // (llama3_8b.toml), axolotl `micro_batch_size` and `sequence_len`, the Trainer
  // --per_device_train_batch_size, DeepSpeed `zero_optimization.stage`, Megatron-LM its flags.
  assert.equal(FRAMEWORK_KEYS.torchtune.micro_batch_size, 'batch_size');
  assert.equal(FRAMEWORK_KEYS.torchtune.seq_length, 'tokenizer.max_seq_len');
  assert.equal(FRAMEWORK_KEYS.torchtitan.micro_batch_size, 'training.batch_size');
  assert.equal(FRAMEWORK_KEYS.torchtitan.seq_length, 'training.seq_len');
  assert.equal(FRAMEWORK_KEYS.torchtitan.tensor_model_parallel_size, 'training.tensor_parallel_degree');
  assert.equal(FRAMEWORK_KEYS.axolotl.micro_batch_size, 'micro_batch_size');
  assert.equal(FRAMEWORK_KEYS.axolotl.seq_length, 'sequence_len');
  assert.equal(FRAMEWORK_KEYS.accelerate.micro_batch_size, '--per_device_train_batch_size');
  assert.equal(FRAMEWORK_KEYS.deepspeed.zero_stage, 'zero_optimization.stage');
  assert.equal(FRAMEWORK_KEYS['megatron-args'].micro_batch_size, '--micro-batch-size');
  assert.equal(FRAMEWORK_KEYS['megatron-args'].tensor_model_parallel_size, '--tensor-model-parallel-size');
});

test('a count only decided by a key, and a field read from several keys, have no key', () => {
  // accelerate's vocab_size is worked out from --chat_template_format (the template's added
  // tokens): the flag decides the count and is not its name. torchtune's cross_entropy_chunks
  // from the loss class. global_batch_size is a product in every PyTorch framework.
  assert.equal(FRAMEWORK_KEYS.accelerate.vocab_size, undefined);
  assert.equal(FRAMEWORK_KEYS.torchtune.cross_entropy_chunks, undefined);
  assert.equal(FRAMEWORK_KEYS.torchtune.global_batch_size, undefined);
  assert.ok(fresh.decided.includes('accelerate vocab_size ← --chat_template_format'), fresh.decided.join('; '));
  // GPT-2's config.json says n_layer where Llama's says num_hidden_layers: no one key.
  assert.equal(FRAMEWORK_KEYS.hf.num_layers, undefined);
  assert.ok(fresh.several.some((line) => line.startsWith('hf num_layers: ')), fresh.several.join('; '));
});

test('each value spelling is written in a file of its framework, for a field the table names', () => {
  for (const [kind, fields] of Object.entries(FRAMEWORK_VALUES)) {
    const text = frameworkText(kind);
    for (const [field, spellings] of Object.entries(fields)) {
      assert.ok(FRAMEWORK_KEYS[kind][field], `${kind}: a spelling for ${field}, which has no key`);
      for (const [value, spelled] of Object.entries(spellings)) {
        assert.notEqual(String(spelled), value, `${kind} ${field}: the spelling is trainmem's own`);
        // YAML's booleans are written True as often as true (torchtune's recipes).
        const written = typeof spelled === 'boolean' ? text.toLowerCase().includes(String(spelled)) : text.includes(spelled);
        assert.ok(written, `${kind}: ${field} ${value} ← ${spelled}, but no ${kind} file writes ${spelled}`);
      }
    }
  }
});

test('the frameworks\' own spellings of a value, read by hand from their files', () => {
  // accelerate's FSDP config writes `distributed_type: FSDP` (tests/import/fixtures/accelerate/
  // peft-fsdp_config_qlora.yaml, from huggingface/peft's examples), which the importer reads as
  // framework fsdp2; torchtune's recipes write `enable_activation_checkpointing: True` for every
  // layer checkpointed (llama3_1-8B_qlora_single_device.yaml), trainmem's recompute "full".
  assert.equal(FRAMEWORK_VALUES.accelerate.framework.fsdp2, 'FSDP');
  assert.equal(FRAMEWORK_VALUES.torchtune.recompute_granularity.full, true);
  // ddp is no accelerate spelling here: no accelerate file of the project launches a plain DDP run.
  assert.equal(FRAMEWORK_VALUES.accelerate.framework.ddp, undefined);
});
