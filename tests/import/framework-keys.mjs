// The framework's key for each trainmem field (web/js/framework-keys.js), taken from the real
// importers, never written by hand: every config file the project holds for an importer is run
// through `trainmem import KIND`, and each "key: field ← key" line it prints on stderr (the core's
// ImportResult::keys: Mapper::read's note_key, the Megatron-LM reader's flags) is a field the
// framework names with that key. The files:
//   - the setups' imports (core/data/setups.json) and the validation points' framework_config
//     (tests/validation/points.json, finetune-points.json), with their own arguments;
//   - the import fixtures (tests/import/fixtures/KIND/), the fuzz seeds and regressions
//     (tests/fuzz/corpus/KIND/, tests/fuzz/regressions/KIND/), read as their harness reads them
//     (a "#!overrides" first line gives the overrides or the launch command, a "#!hf-args" line
//     the Trainer's arguments), on 8 GPUs with the preset llama-3.1-8b where the importer needs a
//     model (framework_harness.hpp, fuzz_deepspeed.cpp);
//   - the Hugging Face config.json files (tests/data/hf/) and Megatron-LM command lines
//     (tests/data/megatron/).
// A field read from a formula or from several keys has no key line (mapping.hpp note_key is only
// called for a field read from one key), so it is not in the table. When files of one framework
// read a field from different keys (a Trainer's max_length or max_seq_length), the field is left
// out for that framework too: no one key is the framework's word for it.
//
//   node tests/import/framework-keys.mjs --write
//
// rewrites web/js/framework-keys.js; without --write it prints whether the file equals a fresh
// run (tests/cli/framework-keys.test.mjs holds it equal). Needs the native CLI.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, ensure_cli, load_points } from '../validation/points.mjs';
import { import_args } from '../validation/importer.mjs';
import { readSetups } from './setups.mjs';

const root = new URL('../../', import.meta.url).pathname;
export const KEYS_FILE = `${root}web/js/framework-keys.js`;

// The importer kinds (trainmem import KIND), in the order the table lists them.
export const KINDS = ['torchtune', 'torchtitan', 'axolotl', 'accelerate', 'deepspeed', 'hf', 'megatron-args', 'ms-swift-megatron'];
// The folders of each kind's files: fixtures and fuzz corpora name Megatron-LM's "megatron".
const FOLDER = { 'megatron-args': 'megatron' };
// The model an importer needs besides its file when the file names none it knows (as the fuzz
// harness gives it: fuzz_deepspeed.cpp options.preset).
const NEEDS_MODEL = new Set(['deepspeed', 'accelerate']);
const HARNESS_PRESET = 'llama-3.1-8b';
const HARNESS_GPUS = '8';

/** The keys one import names: [field, key] pairs from its "key: field ← key" lines. */
function keyLines(stderr) {
  return stderr.split('\n').map((l) => /^key: (\w+) ← (.+)$/.exec(l)).filter(Boolean).map((m) => [m[1], m[2]]);
}

// Field types whose value is a count or a size.
const NUMERIC = new Set(['integer', 'number', 'integer_or_list', 'integer_list']);

/**
 * Whether `key` names the field or only decides it. A numeric field is named by a key whose
 * number it takes (the read note "micro_batch_size ← batch_size = 2", Megatron-LM's
 * "num_layers ← --num-layers 61"); a count the importer works out from a key's text is not the
 * key's (vocab_size from --chat_template_format "chatml": the template's added tokens;
 * cross_entropy_chunks from the loss class loss._component_; virtual pipeline stages from a
 * schedule's name; a stage layout string), and showing that key as the count's word would say the
 * framework calls the count so. A choice or a switch is named by the key that picks it
 * (enable_activation_checkpointing for recompute_granularity, --swiglu for activation_func).
 */
function namesField(stderr, field, key, type) {
  if (!NUMERIC.has(type)) return true;
  // "field ← key = value" or "field ← --switch --flag value" (Megatron-LM's GQA flag before its
  // count); a note whose key follows a formula ("(num_layers / ...) / --flag") is no such note.
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const note = new RegExp(`^read: ${field} ← (?:--[\\w-]+ )*${escaped} (?:= )?(.*)$`);
  // The value the field took: a number, a list ([…] or Megatron-LM's ([0]*3+[1]*58)), or
  // DeepSpeed's "auto" (the Trainer fills that very key in).
  return stderr.split('\n').some((l) => /^(-?\d|\[|\(|"auto")/.test(note.exec(l)?.[1] ?? ''));
}

/**
 * The value a read note shows the key took, as the file spells it ("read: framework ←
 * distributed_type = FSDP" gives "FSDP"; "= true (every decoder layer)" gives true), or
 * undefined when the note words no literal ("= a qlora_ builder (...)", a formula).
 */
function readValue(stderr, field, key) {
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const line of stderr.split('\n')) {
    // A JSON literal, or a bare word (accelerate's enums: "distributed_type = FSDP").
    const m = new RegExp(`^read: ${field} ← ${escaped} = ("(?:[^"\\\\]|\\\\.)*"|true|false|-?\\d+(?:\\.\\d+)?|[A-Za-z_][\\w.-]*)(?: \\(|$)`).exec(line);
    if (m) return /^[A-Za-z_]/.test(m[1]) && !['true', 'false'].includes(m[1]) ? m[1] : JSON.parse(m[1]);
  }
  return undefined;
}

/**
 * A Trainer argument's key as the framework names it: the importers prefix the argument with
 * where it came from ("--hf-args per_device_train_batch_size": the TrainingArguments JSON given
 * with --hf-args; "--per_device_train_batch_size": a launch command's flag). Both are the same
 * argument of transformers' TrainingArguments, which HfArgumentParser takes as the flag, so the
 * table names it as the flag.
 */
export function frameworkKey(key) {
  return key.startsWith('--hf-args ') ? `--${key.slice('--hf-args '.length)}` : key;
}

/**
 * Each import to run: {kind, args, input?, source} (source: how the report names the file); the
 * parts of the fuzz seeds are written under `scratch`.
 */
function imports(scratch) {
  const runs = [];
  // The setups' and the validation points' own imports, with their arguments.
  for (const setup of readSetups().setups) {
    if (setup.import) runs.push({ kind: setup.import.kind, args: import_args(setup.import), source: `setup ${setup.id}` });
  }
  for (const table of ['points.json', 'finetune-points.json']) {
    for (const point of load_points(table)) {
      const record = point.framework_config;
      if (!record) continue;
      const base = record.tokenizer ? JSON.stringify(record.tokenizer) : undefined;
      runs.push({ kind: record.kind, args: import_args(record, { base: Boolean(base) }), input: base, source: `${table} ${point.id}` });
    }
  }
  // Every file of each kind, as its fuzz harness reads it.
  for (const kind of KINDS) {
    const folder = FOLDER[kind] ?? kind;
    const dirs = [`tests/import/fixtures/${folder}`, `tests/fuzz/corpus/${folder}`, `tests/fuzz/regressions/${folder}`];
    if (kind === 'hf') dirs.push('tests/data/hf');
    if (kind === 'megatron-args') dirs.push('tests/data/megatron');
    for (const dir of dirs) {
      if (!existsSync(`${root}${dir}`)) continue;
      for (const name of readdirSync(`${root}${dir}`).sort()) {
        if (name.endsWith('.source') || name.endsWith('.md')) continue;
        const path = `${root}${dir}/${name}`;
        const run = harnessRun(kind, path, `${scratch}/${runs.length}`);
        if (run) runs.push({ ...run, source: `${dir}/${name}` });
      }
    }
  }
  return runs;
}

/** `trainmem import` arguments for one file as its fuzz harness reads it (`stem`: where its parts are written). */
function harnessRun(kind, path, stem) {
  let text = readFileSync(path, 'utf8');
  if (kind === 'hf') return { kind, args: ['import', 'hf', path] };
  if (kind === 'megatron-args') return { kind, args: ['import', 'megatron-args', path] };
  const args = ['import', kind];
  const extra = [];
  let overrides = [];
  // framework_harness.hpp: a leading "#!overrides a b c" line, words split at spaces.
  if (text.startsWith('#!overrides ')) {
    const end = text.indexOf('\n');
    overrides = text.slice(12, end < 0 ? undefined : end).split(' ').filter(Boolean);
    text = end < 0 ? '' : text.slice(end + 1);
  }
  // fuzz_deepspeed.cpp: a line "#!hf-args" splits the DeepSpeed config from the Trainer's arguments.
  const split = text.indexOf('\n#!hf-args\n');
  if (kind === 'deepspeed' && split >= 0) {
    writeFileSync(`${stem}.hf-args.json`, text.slice(split + 11));
    extra.push('--hf-args', `${stem}.hf-args.json`);
    text = text.slice(0, split);
  }
  const extension = path.slice(path.lastIndexOf('.'));
  const file = `${stem}${extension}`;
  writeFileSync(file, text);
  args.push(file, '--gpus', HARNESS_GPUS, ...extra);
  if (NEEDS_MODEL.has(kind)) args.push('--preset', HARNESS_PRESET);
  if (overrides.length) {
    if (kind === 'accelerate') args.push('--');
    args.push(...overrides.map((o) => (kind === 'torchtitan' && !o.startsWith('--') ? `--${o}` : o)));
  }
  return { kind, args };
}

/**
 * The table: kind -> field -> key, for the fields every file of the kind that read them read from
 * the same one key; and what was left out, for the report. Sorted by field.
 */
export function collectKeys() {
  ensure_cli();
  const fieldsRun = spawnSync(cli, ['fields'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (fieldsRun.status !== 0) throw new Error(`trainmem fields failed: ${fieldsRun.stderr}`);
  const types = new Map(JSON.parse(fieldsRun.stdout).map((f) => [f.name, f.type]));
  const decided = new Set(); // "kind field ← key": the one key of a count, which decides it without naming it
  const seen = new Map(KINDS.map((k) => [k, new Map()])); // kind -> field -> key -> {sources, names: a run shows the key names the field}
  // kind -> field -> trainmem value (JSON) -> the file's spellings (JSON) of the key that set it
  const spellings = new Map(KINDS.map((k) => [k, new Map()]));
  let runs = 0;
  const scratch = mkdtempSync(join(tmpdir(), 'framework-keys-'));
  try {
    for (const run of imports(scratch)) {
      const r = spawnSync(cli, run.args, { input: run.input ?? '', encoding: 'utf8', maxBuffer: 1 << 26 });
      if (r.error) throw r.error;
      runs += 1;
      const fields = seen.get(run.kind);
      if (!fields) throw new Error(`${run.source}: ${run.kind} is not an importer kind the table lists`);
      for (const [field, raw] of keyLines(r.stderr)) {
        const key = frameworkKey(raw);
        if (!fields.has(field)) fields.set(field, new Map());
        const keys = fields.get(field);
        if (!keys.has(key)) keys.set(key, { sources: [], names: false });
        keys.get(key).sources.push(run.source);
        // One run that shows the key's value taken as is is enough: another may have left the
        // value to the framework ("auto") or given it in a form the note words otherwise.
        if (namesField(r.stderr, field, raw, types.get(field))) keys.get(key).names = true;
        // A choice or a switch: how the file spelled the value the field took (the config on stdout).
        if (NUMERIC.has(types.get(field)) || r.status !== 0) continue;
        const spelled = readValue(r.stderr, field, raw);
        const value = JSON.parse(r.stdout)[field];
        if (spelled === undefined || value === undefined) continue;
        const values = spellings.get(run.kind);
        if (!values.has(field)) values.set(field, new Map());
        const byValue = values.get(field);
        const at = JSON.stringify(value);
        if (!byValue.has(at)) byValue.set(at, new Set());
        byValue.get(at).add(JSON.stringify(spelled));
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const table = {};
  const several = [];
  for (const [kind, fields] of seen) {
    table[kind] = {};
    for (const field of [...fields.keys()].sort()) {
      const keys = fields.get(field);
      if (keys.size > 1) several.push(`${kind} ${field}: ${[...keys.keys()].join(', ')}`);
      else if (![...keys.values()][0].names) decided.add(`${kind} ${field} ← ${[...keys.keys()][0]}`);
      else table[kind][field] = [...keys.keys()][0];
    }
  }
  // The values: for a field in the table, each value every file that set it spelled one way,
  // and not as trainmem spells it (a spelling that is the value itself adds nothing).
  const values = {};
  for (const [kind, fields] of spellings) {
    values[kind] = {};
    for (const field of [...fields.keys()].sort()) {
      if (!table[kind][field]) continue;
      const entries = [...fields.get(field)].filter(([value, spelled]) => spelled.size === 1 && [...spelled][0] !== value)
        .map(([value, spelled]) => [JSON.parse(value), JSON.parse([...spelled][0])]).filter(([value]) => typeof value !== 'object')
        .sort(([a], [b]) => String(a).localeCompare(String(b)));
      if (entries.length) values[kind][field] = Object.fromEntries(entries.map(([value, spelled]) => [String(value), spelled]));
    }
    if (!Object.keys(values[kind]).length) delete values[kind];
  }
  return { table, values, several, decided: [...decided].sort(), runs };
}

/** The module's text: the table as an ES module the page imports. */
export function moduleText(table, values) {
  return `// Generated by tests/import/framework-keys.mjs --write from the importers' own key notes over the
// project's config files (see that script): do not edit by hand. Each framework's key for each
// trainmem field its importer reads from one key; a field read from a formula, from several keys,
// or from different keys in different files of one framework is not listed.
export const FRAMEWORK_KEYS = ${JSON.stringify(table, null, 2)};

// How each framework's files spell a value of such a field (a choice or a switch), from the same
// imports: the read note's literal ("read: framework ← distributed_type = FSDP") beside the
// value the field took. A value spelled two ways in the files, or spelled as trainmem spells it,
// is not listed.
export const FRAMEWORK_VALUES = ${JSON.stringify(values, null, 2)};
`;
}

function main() {
  const write = process.argv.includes('--write');
  const { table, values, several, decided, runs } = collectKeys();
  const text = moduleText(table, values);
  const counts = KINDS.map((k) => `${k} ${Object.keys(table[k]).length}`).join(', ');
  console.log(`${runs} imports; fields with one key: ${counts}`);
  for (const line of several) console.log(`left out (several keys): ${line}`);
  for (const line of decided) console.log(`left out (the key decides the count, names it not): ${line}`);
  const same = existsSync(KEYS_FILE) && readFileSync(KEYS_FILE, 'utf8') === text;
  if (same) console.log('web/js/framework-keys.js equals a fresh run');
  else if (write) {
    writeFileSync(KEYS_FILE, text);
    console.log('web/js/framework-keys.js rewritten');
  } else {
    console.log('web/js/framework-keys.js differs from a fresh run: run node tests/import/framework-keys.mjs --write');
    process.exitCode = 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
