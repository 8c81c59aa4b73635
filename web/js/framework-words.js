// The framework's words for the form's fields (issue 32 item 5: "labels and messages use the
// words of the framework in use, the field name second"). Each field the framework in use reads
// from one key of its own is shown with that key first ("torchtune: batch_size ·
// micro_batch_size"); a field with no such key keeps trainmem's words alone.
//
// Where the keys come from, never from a hand-written map:
// - after an import or a setup, the key the file used for each field (the core's
//   ImportResult::keys: the importers' Mapper::read and the Megatron-LM reader's flags);
// - otherwise, and for the fields the file did not set, the framework's table
//   (framework-keys.js), generated from the same importers over every config file the project
//   holds (tests/import/framework-keys.mjs). A field read from a formula or from several keys
//   ("global_batch_size ← batch_size × gradient_accumulation_steps × …") has no one key and is
//   not in it.
// Nothing here reads a message's text: a problem line takes its field's key from the issue's
// `field`.
import { FRAMEWORK_KEYS, FRAMEWORK_VALUES } from './framework-keys.js';

export { RECIPE_WORDS } from './recipe-words.js';

/** How the form names each importer kind's framework (the import panel's kinds). */
export const FRAMEWORK_NAMES = {
  hf: 'config.json', megatron: 'Megatron-LM', 'megatron-args': 'Megatron-LM', torchtune: 'torchtune',
  torchtitan: 'torchtitan', deepspeed: 'DeepSpeed', axolotl: 'axolotl', accelerate: 'accelerate',
};

// The table of each kind (the import panel calls a Megatron-LM command line "megatron").
const TABLE_KIND = { megatron: 'megatron-args' };

/**
 * The file's key for each field an import read from exactly one key, where it differs from the
 * field's own name.
 * @param {Record<string, string>} keys an import result's `keys` (field -> the source's key)
 * @returns {Map<string, string>} field -> key
 */
export function keysRead(keys = {}) {
  return new Map(Object.entries(keys).filter(([field, key]) => key !== field));
}

/**
 * The importer kinds whose words a run uses, from what the core resolved (or the fields given, when
 * the config does not resolve: see runWords), first the one that wins a field. The rule follows
 * whose code and whose launcher the run is, which is what its config files are written for:
 * - model_implementation torchtune or torchtitan: that framework's recipe or job file (a torchtune
 *   run is configured by its recipe's YAML whatever its sharding; so is a torchtitan run by its TOML);
 * - megatron-core: Megatron-LM's command-line flags (framework megatron is the only one it runs on);
 * - hf-transformers: the Hugging Face Trainer launched by accelerate (its config YAML and the
 *   launch command's flags); with framework deepspeed, DeepSpeed's own config keys for the fields
 *   DeepSpeed's config sets (zero_optimization.stage), then the launch command's flags (the
 *   training script's arguments, which a DeepSpeed run takes alike), but not accelerate's YAML
 *   keys (fsdp_config.*, distributed_type), which a DeepSpeed run need not have, nor the
 *   DeepSpeed table's flags (--optim: the Trainer's argument, no key of DeepSpeed's config).
 * A Hugging Face config.json's keys are not used for a run built by hand: they depend on the
 * model's type (GPT-2's n_layer, Llama's num_hidden_layers), which the run does not name; they
 * show after a config.json import, from the file itself.
 * @returns {{kind: string, only?: (key: string) => boolean}[]}
 */
export function frameworksInUse(model_implementation, framework) {
  if (model_implementation === 'torchtune' || model_implementation === 'torchtitan') return [{ kind: model_implementation }];
  if (model_implementation === 'megatron-core') return [{ kind: 'megatron-args' }];
  if (model_implementation !== 'hf-transformers') return [];
  const launchFlag = (key) => key.startsWith('--');
  return framework === 'deepspeed'
    ? [{ kind: 'deepspeed', only: (key) => !launchFlag(key) }, { kind: 'accelerate', only: launchFlag }]
    : [{ kind: 'accelerate' }];
}

/**
 * Field -> {framework, key}: the words of `layers` (earlier layers win a field), each key differing
 * from the field's name (a key that is the field's name adds nothing).
 * @param {{kind: string, keys?: Record<string, string>, only?: (key: string) => boolean, file?: boolean}[]} layers
 */
function wordsOf(layers) {
  const words = new Map();
  for (const { kind, keys = FRAMEWORK_KEYS[TABLE_KIND[kind] ?? kind] ?? {}, only = () => true, file = false } of layers) {
    for (const [field, key] of Object.entries(keys)) {
      if (key === field || words.has(field) || !only(key)) continue;
      words.set(field, { framework: FRAMEWORK_NAMES[kind] ?? kind, kind: TABLE_KIND[kind] ?? kind, key, file });
    }
  }
  return words;
}

/**
 * The words of a run built by hand or from a link: the framework in use as the core resolved it
 * (`resolved`: the last valid result's config). Where the config does not resolve, a
 * model_implementation or framework the fields give says which framework the user chose; an unset
 * one is taken from the last resolved config only while the other one is as it was (the core's
 * default for model_implementation follows the framework, and the page does not work it out).
 * @param {object | null} resolved the core's resolved config, or null
 * @param {object} fields the fields on screen
 * @param {boolean} resolves whether `resolved` is these fields' resolution
 */
export function runFrameworks(resolved, fields = {}, resolves = true) {
  if (resolves && resolved) return frameworksInUse(resolved.model_implementation, resolved.framework);
  const framework = fields.framework ?? (fields.framework === undefined && resolved ? resolved.framework : undefined);
  const sameFramework = resolved && framework === resolved.framework;
  const implementation = fields.model_implementation ?? (sameFramework ? resolved.model_implementation : undefined);
  return frameworksInUse(implementation, framework);
}

/**
 * The words the form shows: an import's or a setup's (`named`: its kind and its file's keys) win,
 * the file's own key first. Its framework's table gives the fields the file did not set where the
 * run is that framework's, with the run's layering (an accelerate file whose run is DeepSpeed's
 * takes DeepSpeed's config keys and the launch flags, never accelerate's FSDP keys); an axolotl
 * file, whose run is the Trainer's, or a run moved to another framework since, keeps the file's
 * keys alone. A Hugging Face config.json names only the model's keys, so the run's framework gives
 * the rest.
 * @param {{kind: string, keys?: Record<string, string>} | null} named
 * @param {{kind: string, only?: (key: string) => boolean}[]} run runFrameworks' answer
 * @returns {Map<string, {framework: string, key: string, file: boolean}>}
 */
export function formWords(named, run) {
  if (!named?.kind) return wordsOf(run);
  const file = { kind: named.kind, keys: named.keys ?? {}, file: true };
  if (named.kind === 'hf') return wordsOf([file, ...run]);
  const kind = TABLE_KIND[named.kind] ?? named.kind;
  return wordsOf([file, ...(run.some((layer) => layer.kind === kind) ? run : [])]);
}

/**
 * How the framework whose key names a field spells one of its values, where the generated table
 * knows it (framework-keys.js FRAMEWORK_VALUES: the importers' read notes beside the value each
 * file gave the field): accelerate's distributed_type "FSDP" for framework fsdp2, torchtune's
 * enable_activation_checkpointing true for recompute_granularity full. Only under the key the
 * table's spelling belongs to; undefined elsewhere (the page then shows trainmem's value). No
 * value is worked out here: a value no file of the framework spelled has no spelling.
 * @param {{kind: string, key: string} | undefined} word the field's words (formWords)
 * @param {string} field
 * @param {unknown} value trainmem's value
 * @returns {string | undefined}
 */
export function valueSpelling(word, field, value) {
  if (!word || value === undefined || value === null || typeof value === 'object') return undefined;
  if (FRAMEWORK_KEYS[word.kind]?.[field] !== word.key) return undefined;
  const spelled = FRAMEWORK_VALUES[word.kind]?.[field]?.[String(value)];
  return spelled === undefined ? undefined : String(spelled);
}

