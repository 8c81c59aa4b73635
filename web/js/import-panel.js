// Importing a model or a whole run: a Hugging Face config.json, a Megatron-LM command line, a
// Megatron-SWIFT `megatron sft` command, or a framework's own config file (a torchtune recipe, a torchtitan job TOML, a DeepSpeed config, an
// axolotl YAML, an accelerate config with its launch command), pasted, uploaded or dropped. YAML and TOML are parsed here by the npm packages
// yaml and smol-toml (web/vendor/, loaded only when such a file is imported) into one JSON tree;
// the core maps it (engine.importFramework), says what it read, assumed and ignored, and this
// panel shows that and hands the merged config to the page (the form and the share link).

import { DEFAULT_HUB, fetchHubConfig, hubBase, rememberBase, rememberedBase } from './hub-config.js';

const DEEPSPEED_KEYS = ['zero_optimization', 'train_micro_batch_size_per_gpu', 'train_batch_size', 'bf16', 'fp16', 'gradient_clipping'];

/**
 * What the text looks like, from its shape, before anything is parsed: how to parse it, and the
 * panel's "Will be read as" hint. 'hf' for a JSON object (a config.json), 'deepspeed' for a JSON
 * object with DeepSpeed's keys, 'torchtitan' for TOML, 'torchtune', 'axolotl' or 'accelerate' for
 * YAML with their keys, 'megatron-args' for Megatron-LM's test config (MODEL_ARGS) ('yaml' for other YAML),
 * 'ms-swift-megatron' for a command that runs `megatron sft` (ms-swift's Megatron-SWIFT),
 * 'megatron' for anything else (a command line). Once the file is
 * parsed, the core's detectFramework decides what it is.
 */
export function detectKind(text) {
  const t = String(text ?? '').trim();
  // JSON: an object by its keys; any other JSON value ("[1,2,3]", "42", "null") and broken JSON
  // that opens an object go to the JSON reader, which names what is wrong (QA at stop 46: the
  // others were read as a command line without arguments). YAML, TOML and command lines are no JSON.
  let json;
  try {
    json = { value: JSON.parse(t) };
  } catch {
    if (t.startsWith('{')) return 'hf'; // broken JSON: let the JSON reader name the problem
  }
  if (json) {
    const v = json.value;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return 'hf';
    if ('distributed_type' in v) return 'accelerate';  // an accelerate config written as JSON
    return DEEPSPEED_KEYS.some((k) => k in v) && !('model_type' in v) ? 'deepspeed' : 'hf';
  }
  const lines = t.split('\n').map((l) => l.replace(/#.*$/, '').trimEnd()).filter((l) => l.trim());
  // ms-swift's launcher and subcommand, before anything a shell script's NAME=value lines resemble.
  if (lines.some((l) => /(^|\s)megatron\s+sft(\s|\\|$)/.test(l))) return 'ms-swift-megatron';
  const tomlSection = lines.some((l) => /^\s*\[{1,2}[\w.\-" ]+\]{1,2}\s*$/.test(l));
  const tomlPair = lines.some((l) => /^\s*[\w.\-"]+\s*=/.test(l)); // "key =" unfinished too: TOML's reader names the line
  const yamlPair = lines.some((l) => /^[\w.\-]+:(\s|$)/.test(l));
  if (tomlSection && tomlPair && !yamlPair) return 'torchtitan';
  if (yamlPair && !/(^|\s)--[\w-]/.test(lines[0] ?? '')) {
    if (/^\s+_component_:/m.test(t) && /^model:/m.test(t)) return 'torchtune';
    if (/^base_model:/m.test(t)) return 'axolotl';
    if (/^distributed_type:/m.test(t)) return 'accelerate';  // what `accelerate config` writes
    if (/^MODEL_ARGS:/m.test(t)) return 'megatron-args';  // Megatron-LM's functional-test model_config.yaml
    return 'yaml';
  }
  return 'megatron';
}

// The core's messages name the CLI's flags; the page has a field or a box for each (a newcomer's
// QA at stop 46: the page asked for "--gpus").
const PAGE_WORDS = [[/\(--gpus\)/g, '(GPUs in all)'], [/^--model: /, 'config.json: ']];
/** A core message about an import in the page's words. */
export const inPageWords = (text) => PAGE_WORDS.reduce((t, [pattern, words]) => t.replace(pattern, words), text);
const issuesInPageWords = (issues) => issues?.map((issue) => ({ ...issue, message: inPageWords(issue.message) }));

const KIND_NAMES = {
  hf: 'Hugging Face config.json', megatron: 'Megatron-LM arguments', torchtune: 'torchtune recipe config',
  torchtitan: 'torchtitan job config', deepspeed: 'DeepSpeed config', axolotl: 'axolotl config', yaml: 'YAML config',
  'megatron-args': 'Megatron-LM test config (MODEL_ARGS)', accelerate: 'accelerate config',
  'ms-swift-megatron': 'Megatron-SWIFT command (megatron sft)',
};
const FRAMEWORKS = new Set(['torchtune', 'torchtitan', 'deepspeed', 'axolotl', 'accelerate', 'megatron-args', 'ms-swift-megatron']);
// The kinds that name their model by its Hub id and take a config.json for one that is no preset
// (the core's options.model; the CLI's --model).
const MODEL_KINDS = new Set(['axolotl', 'accelerate', 'deepspeed', 'ms-swift-megatron']);
// The core's question when such a name is no preset (core/src/import/mapping.cpp
// model_from_hub_name): an issue with this rule id, on the source's key, and the result's
// model_asked, the repository it names. The page asks in its own words (the core's name the CLI's
// --model); it reads no message.
export const MODEL_NOT_A_PRESET = 'import/model-not-a-preset';
// The rule of a question the file cannot answer (core k_import_asked: a sharded run's GPU count):
// asked until its field is given, with no figure meanwhile, as the CLI stops on it.
export const IMPORT_ASKED = 'import/asked';

/** The repository an import that could not run asks a config.json for, or null. */
export const modelAsked = (result) =>
  (!result.ok && result.model_asked && result.issues.some((i) => i.rule === MODEL_NOT_A_PRESET) ? result.model_asked : null);
// The kinds whose override line is the launch command (sent whole, for the core to split).
const LAUNCHED = new Set(['accelerate', 'deepspeed']);
// What the override line holds, by kind: its label and an example.
const OVERRIDE_LINES = {
  accelerate: ['Launch command', 'accelerate launch --config_file config.yaml train.py --per_device_train_batch_size 2 --bf16 True ...'],
  deepspeed: ['Launch command (optional)', 'torchrun --nproc_per_node 8 train.py --deepspeed ds.json --per_device_train_batch_size 2 ...'],
  default: ['Overrides (tune run key=value, torchtitan --section.key=value)', 'batch_size=2 dataset.packed=True'],
};

/** The parsers, fetched once and only when a YAML or TOML file is imported. */
let yamlModule;
let tomlModule;
const loadYaml = () => (yamlModule ??= import('../vendor/yaml.mjs'));
const loadToml = () => (tomlModule ??= import('../vendor/smol-toml.mjs'));

/**
 * A parsed tree as JSON can carry it to the core, as the native CLI's reader makes it
 * (documents.hpp): no Infinity/NaN (a number beyond a double is the text "inf", which the core
 * names, rather than null, which would read as unset), dates as text.
 */
function treeJson(tree) {
  return JSON.parse(JSON.stringify(tree, (_key, v) => {
    if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf';
    if (typeof v === 'bigint') return Number(v);
    if (v instanceof Date) return typeof v.toISOString === 'function' ? v.toISOString() : String(v);
    return v;
  }));
}

/** Parses YAML or TOML text into a tree; a syntax error becomes {issues} naming its line and column. */
export async function parseDocument(text, format, name = { toml: 'JOB.toml', json: 'CONFIG.json' }[format] ?? 'CONFIG.yaml') {
  try {
    if (format === 'toml') {
      const { parse } = await loadToml();
      return { tree: treeJson(parse(text)) };
    }
    if (format === 'json') return { tree: treeJson(JSON.parse(text)) };
    const YAML = await loadYaml();
    const doc = YAML.parse(text, { version: '1.2', schema: 'core', uniqueKeys: true, merge: false, prettyErrors: true });
    return { tree: treeJson(doc) };
  } catch (error) {
    const pos = error.linePos?.[0] ?? (error.line ? { line: error.line, col: error.column } : null);
    const where = pos ? `line ${pos.line}, column ${pos.col}: ` : '';
    const what = String(error.message ?? error).split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
    return { issues: [{ field: name, message: `${name}: ${where}${what}` }] };
  }
}

/** "batch_size=2 compile=True", "--training.compile --parallelism.tensor_parallel_degree=2": the tokens, quotes kept together. */
export function splitOverrides(line) {
  return [...String(line ?? '').matchAll(/(?:[^\s"']+|"[^"]*"|'[^']*')+/g)].map((m) => m[0]);
}

export class ImportPanel {
  /**
   * @param {object} els {panel, text, file, run, kind, report}
   * @param {import('./engine.js').Engine} engine
   * @param {() => object} base the page's config the import is merged over
   * @param {(config: object, label: string) => void} apply loads the merged config into the page
   */
  constructor(els, engine, base, apply) {
    Object.assign(this, { els, engine, base, apply });
    // The inputs a framework file cannot fill: inside the panel (web/index.html).
    this.gpus = els.panel.querySelector('#import-gpus');
    this.overrides = els.panel.querySelector('#import-overrides');
    this.version = els.panel.querySelector('#import-version');
    this.versionPlaceholder = this.version?.placeholder ?? '';
    this.frameworkInputs = els.panel.querySelector('#import-framework-inputs');
    this.bindModel(els.panel);
    els.run.addEventListener('click', () => this.run());
    // The importers live in the tools module: fetch it when the panel opens.
    els.panel.addEventListener('toggle', () => { if (els.panel.open) engine.loadTools().catch(() => {}); });
    els.text.addEventListener('input', () => this.showKind());
    els.file.addEventListener('change', async () => {
      const file = els.file.files?.[0];
      if (!file) return;
      await this.take(file);
      els.file.value = '';
    });
    // A file dropped anywhere on the panel.
    els.panel.addEventListener('dragover', (e) => { if (e.dataTransfer?.types?.includes('Files')) e.preventDefault(); });
    els.panel.addEventListener('drop', async (e) => {
      const file = e.dataTransfer?.files?.[0];
      if (!file) return;
      e.preventDefault();
      await this.take(file);
    });
    this.showKind();
  }

  /**
   * The model's config.json for an axolotl, accelerate or DeepSpeed import (index.html
   * #import-model): pasted, uploaded, or fetched from the Hub by the button, the one request.
   */
  bindModel(panel) {
    const $ = (id) => panel.querySelector(`#${id}`);
    this.model = {
      box: $('import-model'), json: $('import-model-json'), file: $('import-model-file'), id: $('import-model-id'),
      base: $('import-hub-base'), fetch: $('import-model-fetch'), status: $('import-model-status'),
    };
    const m = this.model;
    if (!m.box) return;
    m.base.value = rememberedBase();
    m.file.addEventListener('change', async () => {
      const file = m.file.files?.[0];
      if (!file) return;
      m.json.value = await file.text();
      m.fetchedFor = null; // the user's own file: sent with whatever model the config names
      m.file.value = '';
      this.modelStatus(`${file.name} read.`);
      if (this.els.text.value.trim()) this.run();
    });
    m.fetch.addEventListener('click', () => this.fetchModel());
    m.id.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); this.fetchModel(); } });
  }

  modelStatus(text, isError = false) {
    this.model.status.textContent = text;
    this.model.status.className = isError ? 'error' : 'hint';
  }

  /** The button's request: the config.json of the model id, then the import again with it. */
  async fetchModel() {
    const m = this.model;
    const base = hubBase(m.base.value);
    if (base.error) { this.modelStatus(base.error, true); m.base.focus(); return null; }
    m.fetch.disabled = true;
    this.modelStatus(`Fetching ${m.id.value.trim() || 'the model'}'s config.json from ${base.base}…`);
    let got;
    try {
      got = await fetchHubConfig(base.base, m.id.value);
    } finally {
      m.fetch.disabled = false;
    }
    if (!got.ok) {
      // A config.json fetched earlier for another model is not kept for this one.
      if (m.fetchedFor && m.fetchedFor !== m.id.value.trim()) { m.json.value = ''; m.fetchedFor = null; }
      this.modelStatus(got.message, true);
      return got;
    }
    rememberBase(base.base === DEFAULT_HUB ? '' : base.base);
    m.json.value = got.text;
    m.fetchedFor = m.id.value.trim();
    this.modelStatus(`Fetched ${got.url}${got.modelType ? ` (model_type ${got.modelType})` : ''}.`);
    if (this.els.text.value.trim()) await this.run();
    return got;
  }

  async take(file) {
    this.els.text.value = await file.text();
    this.fileName = file.name;
    this.showKind();
    // A framework file waits for what it cannot say unless the panel already has it: the GPU
    // count, or for an accelerate config (whose num_processes is the count) the launch command.
    const kind = this.kindOf(this.els.text.value);
    const waitFor = kind === 'accelerate' ? this.overrides : this.gpus;
    // A Megatron-SWIFT command says its own world (NPROC_PER_NODE × NNODES).
    if (FRAMEWORKS.has(kind) && kind !== 'ms-swift-megatron' && waitFor && !waitFor.value.trim()) {
      waitFor.focus();
      return;
    }
    this.run();
  }

  kindOf(text) {
    const kind = detectKind(text);
    if (kind === 'yaml' && /\.(ya?ml)$/i.test(this.fileName ?? '')) return 'yaml';
    if (kind === 'megatron' && /\.toml$/i.test(this.fileName ?? '')) return 'torchtitan';
    return kind;
  }

  showKind() {
    const t = this.els.text.value.trim();
    const kind = t ? this.kindOf(t) : null;
    this.els.kind.textContent = t ? `Will be read as ${KIND_NAMES[kind]}.` : 'Paste, upload or drop a config.json, a launch command (Megatron-LM or Megatron-SWIFT\'s megatron sft), a Megatron-LM test config (model_config.yaml), or a torchtune, torchtitan, DeepSpeed, axolotl or accelerate config.';
    if (this.frameworkInputs) this.frameworkInputs.hidden = !(kind && (FRAMEWORKS.has(kind) || kind === 'yaml'));
    if (this.model?.box) this.model.box.hidden = !MODEL_KINDS.has(kind) && !this.model.json.value.trim();
    // Overrides and versions are torchtune's and torchtitan's; Megatron-LM's test launcher runs
    // 8 GPUs per node unless told.
    // An accelerate or DeepSpeed config takes its launch command there, and has no versions.
    const launched = LAUNCHED.has(kind);
    const overridable = kind === 'torchtune' || kind === 'torchtitan' || kind === 'yaml' || launched;
    // A Megatron-SWIFT command is the whole run; its version is the date of the ms-swift commit.
    const swift = kind === 'ms-swift-megatron';
    for (const [input, shown] of [[this.overrides, overridable], [this.version, (overridable && !launched) || swift]]) {
      const field = input?.closest('.field');
      if (field) field.hidden = !shown;
    }
    const [label, example] = OVERRIDE_LINES[kind] ?? OVERRIDE_LINES.default;
    const overridesLabel = this.overrides?.id ? this.els.panel.querySelector(`label[for="${this.overrides.id}"]`) : null;
    if (overridesLabel) overridesLabel.textContent = label;
    if (this.overrides) this.overrides.placeholder = example;
    // Where the file leaves a sharded run's count to the launcher, the core asks for it (import/asked).
    if (this.version) this.version.placeholder = swift ? 'ms-swift commit date, 2025-07-31' : this.versionPlaceholder;
    if (this.gpus) this.gpus.placeholder = kind === 'megatron-args' ? '8' : kind === 'accelerate' ? 'num_processes' : swift ? 'the command\'s'
      : kind === 'deepspeed' ? 'the launcher\'s (asked under ZeRO)' : kind === 'axolotl' ? '1 (asked if sharded)' : '1';
  }

  /** {gpus, overrides or launch, version} from the panel's inputs, for a file of `kind`. */
  options(kind, tree = null) {
    const options = {};
    // What was typed goes to the core, which names a bad count ("gpus: must be a positive integer").
    const typed = this.gpus?.value.trim();
    if (typed) options.gpus = /^-?\d+(\.\d+)?$/.test(typed) ? Number(typed) : typed;
    // Hidden inputs (a kind that reads no overrides or versions) send nothing. An accelerate
    // config's launch command goes whole, for the core to split as the shell does (quotes with
    // blanks in them, line continuations).
    const shown = !this.overrides?.closest('.field')?.hidden;
    if (shown && LAUNCHED.has(kind)) {
      if (this.overrides.value.trim()) options.launch = this.overrides.value;
    } else {
      const overrides = shown ? splitOverrides(this.overrides?.value) : [];
      if (overrides.length) options.overrides = overrides;
    }
    if (this.version?.value.trim() && !this.version.closest('.field')?.hidden) options.version = this.version.value.trim();
    // The model's config.json, as text: the core reads it as `trainmem import ... --model` does.
    const model = this.model?.json?.value.trim();
    if (model && MODEL_KINDS.has(kind)) {
      // A config.json fetched for one model is not the model of an axolotl file that names
      // another: nothing of an earlier import fills this one.
      const named = kind === 'axolotl' && typeof tree?.base_model === 'string' ? tree.base_model : null;
      const fetchedFor = this.model.fetchedFor;
      if (named && fetchedFor && named.toLowerCase() !== fetchedFor.toLowerCase()) {
        this.modelStatus(`The config.json fetched for ${fetchedFor} was not used: this file's base_model is ${named}.`, true);
      } else options.model = model;
    }
    return options;
  }

  async run() {
    const text = this.els.text.value;
    if (!text.trim()) {
      this.report({ ok: false, issues: [{ field: '', message: 'Nothing to import: paste a config file or a Megatron-LM command line first.' }] });
      return null;
    }
    let kind = this.kindOf(text);
    this.els.run.disabled = true;
    try {
      await this.engine.loadTools();
    } catch (error) { // offline, or the tools module is missing: say so rather than nothing
      this.report({ ok: false, issues: [{ field: '', message: `The importers could not be loaded: ${error.message}` }] });
      return null;
    } finally {
      this.els.run.disabled = false;
    }
    // A model's config.json is imported into the run on screen (its training and layout stay, as
    // `trainmem import hf --base` keeps the base's). A run's own file starts from the framework's
    // defaults, as the CLI's `import` without --base does: nothing of the screen's previous state
    // fills what the file leaves out; what the estimate still needs comes back as `unresolved`
    // and is asked for in the form.
    const base = kind === 'hf' ? this.base() : {};
    let result;
    // The text's shape says how to parse it; the core says what the parsed file is (detectFramework).
    let parsed = null;
    if (kind === 'hf' || kind === 'deepspeed') {
      parsed = await parseDocument(text, 'json');
      if (parsed.issues) { // broken JSON: the HF reader names the problem with its line and column
        parsed = null;
        kind = 'hf';
      }
    } else if (kind !== 'megatron' && kind !== 'ms-swift-megatron') {
      parsed = await parseDocument(text, kind === 'torchtitan' ? 'toml' : 'yaml', this.fileName ?? undefined);
    }
    if (parsed?.tree) kind = this.engine.detectFramework(parsed.tree) || kind;
    let label = KIND_NAMES[kind];
    if (kind === 'hf' || kind === 'megatron') {
      result = kind === 'hf' ? this.engine.importHfConfig(text, base) : this.engine.importMegatronArgs(text, base);
      if (kind === 'hf' && parsed?.tree?.model_type) label = `${parsed.tree.model_type} config.json`;
    } else if (kind === 'ms-swift-megatron') {
      // The command as text: the core splits it as the shell does.
      result = this.engine.importCommand(kind, text, this.options(kind), base);
    } else {
      if (parsed.issues) {
        result = { ok: false, issues: parsed.issues };
      } else {
        if (!FRAMEWORKS.has(kind)) {
          result = { ok: false, issues: [{ field: '', message: 'This YAML is neither a torchtune recipe (model._component_), an axolotl config (base_model), an accelerate config (distributed_type) nor a Megatron-LM test config (MODEL_ARGS).' }] };
        } else {
          result = this.engine.importFramework(kind, parsed.tree, this.options(kind, parsed.tree), base);
        }
      }
    }
    result = { ...result, issues: issuesInPageWords(result.issues), unresolved: issuesInPageWords(result.unresolved) };
    if (this.fileName) label = `${label} (${this.fileName})`;
    this.fileName = null;
    this.report(result, label);
    if (!result.ok) this.askForModel(result);
    if (result.ok) this.apply(result.config, label, result.unresolved ?? [], { kind, keys: result.keys });
    return result;
  }

  /**
   * A model that is no preset: the model box opens with the name filled in as the Hub id, and the
   * question says what to do in the page's words (the core's names the CLI's --model).
   */
  askForModel(result) {
    const m = this.model;
    const name = modelAsked(result);
    if (!name || !m?.box) return;
    m.box.hidden = false;
    if (!m.id.value.trim() || m.asked !== name) m.id.value = name;
    m.asked = name;
    this.modelStatus(`${name} is not one of the presets: paste or upload its config.json, or fetch it from the Hub.`, true);
    m.box.scrollIntoView?.({ block: 'nearest' });
    m.fetch.focus({ preventScroll: true });
  }

  /**
   * After an import that replaced a run with a result: "Compare with your run before" under the
   * report's first line pins that run (as the setup notice does), so the compare view lists what
   * the file changed and what each change does.
   * @param {() => void} pinBefore pins the run that was on screen before the import
   */
  offerCompare(pinBefore) {
    const button = Object.assign(document.createElement('button'), { type: 'button', className: 'link-button compare-before', textContent: 'Compare with your run before' });
    const line = Object.assign(document.createElement('p'), { className: 'import-compare' });
    line.append(button);
    button.addEventListener('click', () => {
      line.hidden = true;
      pinBefore();
    });
    this.els.report.firstElementChild?.after(line);
  }

  /** Lists what the form still needs, what was read, assumed and ignored, or the problems. */
  report(result, label = '') {
    const { report } = this.els;
    const parts = [];
    const p = (text, cls) => Object.assign(document.createElement('p'), { textContent: text, className: cls ?? '' });
    if (!result.ok) {
      parts.push(p('Nothing was imported:', 'error'));
      const ul = document.createElement('ul');
      ul.className = 'import-issues';
      for (const issue of result.issues) {
        const text = issue.rule === MODEL_NOT_A_PRESET && result.model_asked
          ? `${issue.field}: "${result.model_asked}" is not the Hugging Face repository of a trainmem preset; give its config.json below (paste, upload or fetch it from the Hub)`
          : issue.message;
        ul.append(Object.assign(document.createElement('li'), { textContent: text }));
      }
      parts.push(ul);
      report.className = 'import-report notice error-box';
    } else {
      const needs = (result.unresolved ?? []).map((u) => u.message);
      parts.push(p(`Imported ${label}: ${result.read.length} read, ${result.assumed.length} assumed, ${result.ignored.length} ignored` +
        (needs.length ? `; ${needs.length === 1 ? 'one value' : `${needs.length} values`} to give in the form.` : '.'),
      needs.length ? 'import-needs-summary' : ''));
      const lists = [['needs', 'Still needed (marked in the form)', needs], ['read', 'Read', result.read],
        ['assumed', 'Assumed', result.assumed], ['ignored', 'Ignored', result.ignored]];
      for (const [key, title, items] of lists) {
        if (!items.length) continue;
        const details = document.createElement('details');
        details.className = `import-${key}`;
        if (key !== 'read') details.open = true;
        const summary = Object.assign(document.createElement('summary'), { textContent: `${title} (${items.length})` });
        const ul = document.createElement('ul');
        // The core names the model's file by the CLI's flag (--model): here it is the box's.
        for (const line of items) ul.append(Object.assign(document.createElement('li'), { textContent: inPageWords(line) }));
        details.append(summary, ul);
        parts.push(details);
      }
      report.className = 'import-report notice';
    }
    report.replaceChildren(...parts);
    report.hidden = false;
  }
}
