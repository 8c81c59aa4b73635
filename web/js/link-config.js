// A share link read the same way by every view: the page (main.js), the embed page (embed.js) and
// the <trainmem-calculator> element all turn a fragment into one resolved state with
// restoreLink, so the same link shows the same bytes everywhere. The views differ only in how
// they show it (the page fills its form and names what was rejected in a notice).
//
// No state at all (a fresh page; an embed or an element given none) is START: a fine-tuning
// setup (core/data/setups.json), the whole run as choosing it on the page sets it.
//
// What a link means: the fields it carries. A field it lacks is unset and the core resolves it,
// as the CLI does for a config without it; so "#v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1"
// means Megatron's defaults for everything else (no sequence parallelism, no distributed
// optimizer, no recompute). Only what the core cannot resolve is filled in, so that every link
// shows a result: the model's shapes from the link's preset (else LINK_FALLBACK's preset) and the
// required training fields from the preset, else from LINK_FALLBACK. A link that names a fine-tuning
// setup ("#su=<id>", core/data/setups.json) takes what it leaves out from the setup instead: the
// setup's fields, model and GPU. A value the core rejects is dropped and falls back the same way.
//
// LINK_FALLBACK is what the fresh page opened on until links of format 1 had been made for years
// (a Megatron run of Llama 3.1 8B on H100s, sequence 8192, micro batch 1): a link made then that
// lacks a required field was read against it, and still is, so it keeps its bytes. It is no longer
// what a fresh page shows (START is).
import { FORMAT_VERSION, NO_VERSION_NOTE, PAGE_KEYS, decodeState, escapeText, keyOf, withChecksum } from './url-state.js';
import { CAPACITY_RULE, parseCapacity } from './format.js';
import { DEFAULT_FIGURE, headlineOf } from './results.js';
import { MODEL_GROUPS, fieldsInPageOrder } from './layout.js';

export const THEMES = ['light', 'dark', 'auto'];
export const CUSTOM_GPU = 'custom';

/**
 * What a view shows when it is given no state (a fresh page; an embed or an element without
 * one): an everyday fine-tuning run a newcomer recognises, LoRA of Llama 3.1 8B on one RTX 4090
 * as torchtune's recipe runs it (the setup cites its recipe and settings). Ids are tried in order,
 * so a renamed setup still finds one; with none of them, LINK_FALLBACK's run.
 */
export const START = Object.freeze({
  setup: ['llama-3.1-8b-lora-torchtune-1x4090', 'llama-3.1-8b-qlora-torchtune-1x4090'],
  unit: 'GiB',
});

/**
 * What fills a link's gaps (see the top): frozen, since a link of format 1 made before START
 * became a fine-tuning run was read against these values. Only the model preset, the GPU and the
 * fields the core requires are used from it.
 */
export const LINK_FALLBACK = Object.freeze({
  preset: ['llama-3.1-8b', 'llama3.1-8b', 'llama-3-8b'],
  gpu: ['h100-80gb', 'h100'],
  fields: Object.freeze({
    seq_length: 8192, micro_batch_size: 1, tensor_model_parallel_size: 2,
    pipeline_model_parallel_size: 1, data_parallel_size: 4, use_distributed_optimizer: true,
    sequence_parallel: true, recompute_granularity: 'selective',
  }),
});

const CHECKSUM_NOTE = 'The link looks edited or cut short (its checksum does not match); the values the calculator accepts were kept.';
// A link the page wrote, cut short (url-state.js decodeState: no checksum, the page's shape). One
// written by hand (the documentation's short forms) gets no note: its values are read as given,
// and any that is not used is named.
const UNCHECKED_NOTE = 'The link has every value the page writes but not the checksum at its end: the values were read as given.';
const cutNote = (lastPair) => `The link was cut short: it ends at "${lastPair}", without the checksum the page writes at its end. `
  + 'What followed is not in it: those values come from the preset or the defaults, so this may not be the run that was shared.';

/**
 * Splits the view's own options (theme) from the state: "#v=1&...&ck=x&theme=dark".
 * @returns {{state: string, theme: string}}
 */
export function splitViewOptions(fragment) {
  let theme = 'auto';
  const state = String(fragment ?? '').replace(/^#/, '').split('&').filter((pair) => {
    const m = /^theme=(.*)$/.exec(pair);
    if (m && THEMES.includes(m[1])) theme = m[1];
    return !m;
  }).join('&');
  return { state, theme };
}

/** The first of `ids` that `list` holds, else the list's first entry. */
function pickFirst(ids, list) {
  for (const id of ids) {
    const found = list.find((x) => x.id === id);
    if (found) return found;
  }
  return list[0];
}

/** The core's field specs by name (the engine builds the map once). */
const fieldSpecs = (engine) => engine.fieldSpecsByName;

export const presetById = (engine, id) => engine.presets.find((p) => p.id === id) ?? null;
// An id a setup had before (its aliases, core/data/setups.json) finds it too: old links keep working.
export const setupById = (engine, id) => engine.setups?.find((s) => s.id === id || s.aliases?.includes(id)) ?? null;
const gpuById = (engine, id) => engine.gpus.find((g) => g.id === id) ?? null;

/** The memory of a GPU by id, or of the custom capacity text; null when unknown. */
export function gpuCapacity(engine, gpu, capacityText, unit) {
  if (gpu === CUSTOM_GPU) return parseCapacity(capacityText, unit);
  return gpuById(engine, gpu)?.memory_bytes ?? null;
}

/** The GPU's name for people. */
export function gpuLabel(engine, gpu) {
  if (gpu === CUSTOM_GPU) return 'custom GPU';
  return gpuById(engine, gpu)?.name ?? 'no GPU';
}

/**
 * The config with the GPU's capacity, which every profile's verdict reads (and the trainmem
 * profile's minimum devices and paged optimizer states).
 */
export function withCapacity(config, capacity) {
  return Number.isFinite(capacity) ? { ...config, gpu_memory_bytes: capacity } : config;
}

/**
 * The fields in effect (page order) and the config the core gets: those of them that are set, and
 * the capacity. Which fields mean something is the core's answer for these very fields (a change
 * of framework shows its fields at once), so a field set earlier that no longer applies is kept
 * in `fields` (the form remembers it) but not sent. `inEffect`: the core's set when the caller
 * has it (a view's result carries it), else one module call asks.
 * @param {import('./engine.js').Engine} engine
 */
export function coreConfig(engine, fields, capacity, inEffect = engine.fieldsInEffect(withCapacity(fields, capacity))) {
  const specs = fieldSpecs(engine);
  const names = fieldsInPageOrder(specs, inEffect);
  const config = {};
  for (const name of names) {
    if (fields[name] !== undefined) config[name] = fields[name];
  }
  return { names, config: withCapacity(config, capacity) };
}

/**
 * The one path from a view's state to what it shows, which the page (on every input), the embed
 * view and the element all take: one module call (engine.view) gives the fields in effect and
 * the core's result; `compare` capacities (bytes) add the run at each (result.capacity_fits).
 * @param {import('./engine.js').Engine} engine
 * @param {{fields: Record<string, unknown>, gpu: string, capacityText: string, unit: string, figure: string}} state
 * @param {{verbose?: boolean, compare?: number[]}} [options]
 */
export function estimateView(engine, { fields, gpu, capacityText, unit, figure }, { verbose = false, compare = [] } = {}) {
  const capacity = gpuCapacity(engine, gpu, capacityText, unit);
  const { inEffect, result } = engine.view(withCapacity(fields, capacity), compare, { verbose });
  const { names, config } = coreConfig(engine, fields, capacity, inEffect);
  return { capacity, names, config, result, headline: headlineOf(result, figure) };
}

/** The part of a restored link the page keeps as its editable state (a preset and a setup by id). */
export function editableState(link) {
  return {
    fields: link.fields, preset: link.preset?.id ?? null, setup: link.setup?.id ?? null, gpu: link.gpu,
    capacityText: link.capacityText, unit: link.unit, figure: link.figure,
  };
}

// ---- the element's attributes ----

/** The element's own attributes, which are no link keys. */
const ELEMENT_OWN = new Set(['theme', 'class', 'id', 'style', 'hidden', 'lang', 'dir', 'title', 'slot']);
// HTML lowercases attribute names ("L" arrives as "l"): a lowercase name finds its link key. "v"
// stays the link format version, so vocab_size ("V") is written by its Megatron name.
const attributeKeys = new WeakMap();
function keyOfAttribute(specs, name) {
  if (!attributeKeys.has(specs)) {
    const keys = [...[...specs.values()].map((s) => s.link_key || s.name), ...Object.values(PAGE_KEYS)];
    attributeKeys.set(specs, new Map(keys.filter((key) => key.toLowerCase() !== 'v').map((key) => [key.toLowerCase(), key])));
  }
  return attributeKeys.get(specs).get(name);
}

/** The attribute a field is written as: its link key where HTML keeps its spelling, else its Megatron name. */
export function attributeOf(specs, name) {
  const key = keyOf(specs, name);
  return key === key.toLowerCase() ? key : name;
}

/**
 * An element's link (linkOfAttributes) as the page's: its format version first and its checksum
 * last, so that "Open in trainmem" opens it without notes on either (QA at stop 46).
 */
export const pageLinkOf = (state) => withChecksum(`v=${FORMAT_VERSION}${state ? `&${state}` : ''}`);

/**
 * An element's attributes ({name, value} in document order) as a link state, "m=llama-3.1-70b&tp=8&...":
 * `preset` is the link's `m`, the element's own attributes (theme, class, data-*, aria-*, ...) are left out.
 * @param {Iterable<{name: string, value: string}>} attributes
 * @param {Map<string, object>} specs the core's field specs by name (their link keys)
 */
export function linkOfAttributes(attributes, specs) {
  const pairs = [];
  for (const { name, value } of attributes) {
    if (ELEMENT_OWN.has(name) || name.startsWith('data-') || name.startsWith('aria-')) continue;
    const key = name === 'preset' ? PAGE_KEYS.preset : keyOfAttribute(specs, name) ?? name;
    pairs.push(`${escapeText(key)}=${escapeText(value)}`);
  }
  return pairs.join('&');
}

/**
 * @typedef {object} LinkState
 * @property {Record<string, unknown>} fields the values set (unset fields absent): what a form shows
 * @property {object|null} preset the model preset
 * @property {object|null} setup the fine-tuning setup the link started from (its fields fill what the link leaves out)
 * @property {string} name the model's name for people
 * @property {string} gpu a GPU id, or "custom"
 * @property {string} gpuLabel
 * @property {number|null} capacity bytes
 * @property {string} capacityText the custom capacity as written ("96GB")
 * @property {string} unit GiB or GB
 * @property {string} figure allocated, reserved or device
 * @property {string|null} pin the pinned configuration's state, as the link writes it
 * @property {{key: string, value?: unknown, reason: string}[]} rejected values that were not used
 * @property {string[]} notes what else the reader should know about the link
 * @property {string[]} warnings the notes that say the figure may not be the shared run's (an edited or cut link): the embed and the element show them too
 */

/**
 * What restoreLink adds to a LinkState once the core has checked it.
 * @typedef {object} RestoredState
 * @property {Record<string, unknown>} config what the core gets (applicable fields and capacity)
 * @property {string[]} names the fields that apply, in page order
 * @property {{config: object, preset: string|null, label: string}|null} pin a configuration to compare with
 */

/**
 * What a fragment (without view options) says, read without the core: its fields over the
 * fallbacks (see the top), the GPU and its capacity, and what the reader itself rejected. An
 * empty fragment is START. Never throws. restoreLink checks it with the core.
 * @param {string} fragment
 * @param {import('./engine.js').Engine} engine
 * @returns {LinkState}
 */
export function configFromLink(fragment, engine) {
  return readLink(fragment, engine).state;
}

/**
 * The state every view shows for a fragment: configFromLink's, with what the core rejects dropped
 * (and named in `rejected`), the pin checked, and the config the core gets. That config is valid
 * unless the core rejects something the link did not carry.
 * @param {string} fragment
 * @param {import('./engine.js').Engine} engine
 * @returns {LinkState & RestoredState}
 */
export function restoreLink(fragment, engine) {
  const { state, link, fallback } = readLink(fragment, engine);
  const specs = fieldSpecs(engine);
  if (!link) return { ...state, ...coreConfig(engine, state.fields, state.capacity) }; // START is valid as it is (tests/wasm/link-config.test.mjs)
  const rejected = [...state.rejected];
  const pin = link.pin ? pinnedFromLink(engine, specs, link.pin, rejected) : null;
  const fields = { ...state.fields };
  const { pinned: kept, dropped } = keepWhatTheCoreAccepts({ engine, link, fields, fallback, capacity: state.capacity, rejected });
  const notes = [...state.notes];
  // A value resolved otherwise now: because a value of the link was not used (it gave the rest),
  // or because the defaults changed since (a newcomer's QA at stop 46: "world=0" read as the
  // second).
  if (kept.length && dropped) notes.push(`The values this link's unset fields had when it was made were kept for: ${kept.join(', ')} (the values not used above would have changed them).`);
  else if (kept.length) notes.push(`Defaults changed since this link was made; the link's values were kept for: ${kept.join(', ')}.`);
  return { ...state, ...coreConfig(engine, fields, state.capacity), fields, pin, rejected, notes };
}

/** configFromLink's state, with the decoded link and the fallbacks for restoreLink (link: null for START). */
function readLink(fragment, engine) {
  const specs = fieldSpecs(engine);
  if (!String(fragment ?? '').replace(/^#/, '')) return { state: startState(engine), link: null };
  const link = decodeState(fragment, specs);
  const rejected = [...link.rejected];
  // A setup's short link ("#su=<id>", as the documentation and the setup's own link write it)
  // carries no value to keep or to check: no note on its missing version and checksum.
  const pairs = String(fragment).replace(/^#/, '').split('&').filter(Boolean);
  const setupAlone = pairs.length === 1 && pairs[0].startsWith(`${PAGE_KEYS.setup}=`);
  const notes = setupAlone ? link.notes.filter((n) => n !== NO_VERSION_NOTE) : [...link.notes];
  // What says the figure may not be the shared run's: the embed and the element show it too.
  const warnings = link.integrity === 'mismatch' ? [CHECKSUM_NOTE] : link.integrity === 'cut' ? [cutNote(link.lastPair)] : [];
  notes.push(...warnings);
  if (link.integrity === 'unchecked') notes.push(UNCHECKED_NOTE);
  const setup = setupById(engine, link.setup);
  if (link.setup && !setup) {
    const known = (engine.setups ?? []).map((s) => s.id).join(', ');
    rejected.push({ key: PAGE_KEYS.setup, reason: `unknown fine-tuning setup "${link.setup}"; the setups are ${known}` });
  }
  // The link's preset, else its setup's: the model whose shapes fill what the link leaves out.
  const named = presetById(engine, link.preset);
  const preset = named ?? (link.preset ? null : presetById(engine, setup?.preset));
  if (link.preset && !named) rejected.push({ key: PAGE_KEYS.preset, reason: `unknown model preset "${link.preset}"` });
  // The link's GPU, else its setup's (also in place of an unknown one), else LINK_FALLBACK's.
  const known = (id) => id === CUSTOM_GPU || Boolean(gpuById(engine, id));
  const gpu = [link.gpu, setup?.gpu].find(known) ?? pickFirst(LINK_FALLBACK.gpu, engine.gpus).id;
  if (link.gpu && gpu !== link.gpu) rejected.push({ key: PAGE_KEYS.gpu, reason: `unknown GPU "${link.gpu}"` });
  // A capacity is the custom GPU's: beside a catalogue GPU it is not used, and one that is no size
  // is named here as well as at its box (a newcomer's QA at stop 46: both were silent).
  if (link.capacity !== null) {
    if (gpu !== CUSTOM_GPU) rejected.push({ key: PAGE_KEYS.capacity, reason: `is read only with ${PAGE_KEYS.gpu}=${CUSTOM_GPU}: the ${gpuLabel(engine, gpu)}'s capacity was used`, replaced: true });
    else if (parseCapacity(link.capacity, link.unit ?? START.unit) === null) rejected.push({ key: PAGE_KEYS.capacity, reason: `must be ${CAPACITY_RULE}, got "${link.capacity}"` });
  }

  // What the link leaves out: a setup's fields (the whole run, as choosing it on the page sets
  // them; a preset the link names beside it keeps its model, as choosing a preset does), else
  // the preset's. A link that describes its own model (model fields, and no preset named, known
  // or not) keeps it as the CLI reads it: what it leaves out resolves by the core's rules (an FFN size of 4h, as many
  // query groups as heads), never from another model. Only a link with no model at all gets
  // LINK_FALLBACK's, and says so; the training fields the core requires come from it, said too.
  const ownModel = !link.preset && !setup && Object.keys({ ...link.fields, ...link.auto }).some((name) => MODEL_GROUPS.has(specs.get(name)?.group));
  const startPreset = pickFirst(LINK_FALLBACK.preset, engine.presets);
  const modelless = !preset && !setup && !ownModel;
  const fallback = setup
    ? Object.assign(fallbackFields(specs, null), setup.config, named && modelFields(specs, named.config))
    : fallbackFields(specs, ownModel ? null : preset ?? startPreset);
  const fields = {};
  const filled = [];
  for (const [name, value] of Object.entries(fallback)) {
    if (!(name in link.fields) && !(name in link.auto)) {
      fields[name] = value;
      if (!setup && specs.get(name)?.required && !MODEL_GROUPS.has(specs.get(name)?.group)) filled.push(`${name} ${value}`);
    }
  }
  Object.assign(fields, link.fields);
  if (modelless && !link.preset) notes.push(`The link names no model: ${startPreset?.name ?? 'the links\' default model'} was used.`);
  if (filled.length) notes.push(`The link does not give ${filled.map((f) => f.split(' ')[0]).join(', ')}: the links' defaults were used (${filled.join(', ')}).`);
  // A link without a model of its own runs the links' default preset: it is the state's preset,
  // named as the model (an unknown preset's link read "Custom model" over Llama 3.1 8B's figure:
  // a second QA pass at stop 46).
  const state = viewState(engine, {
    fields, preset: preset ?? (modelless ? startPreset : null), setup, gpu, capacityText: link.capacity ?? '', unit: link.unit ?? START.unit,
    figure: link.figure ?? DEFAULT_FIGURE, pin: link.pin, rejected, notes, warnings,
  });
  return { state, link, fallback };
}

/**
 * START's state: the first of its setups the engine holds (its fields, its model and GPU, as
 * "#su=<id>" gives them: a setup fixes the accumulation, not the global batch, so a GPU count typed
 * on it keeps the accumulation, core/src/import/), else LINK_FALLBACK's run.
 */
function startState(engine) {
  const setup = START.setup.map((id) => setupById(engine, id)).find(Boolean);
  const preset = setup ? presetById(engine, setup.preset) : pickFirst(LINK_FALLBACK.preset, engine.presets) ?? null;
  const fields = setup ? { ...setup.config } : { ...LINK_FALLBACK.fields, ...preset?.config };
  const gpu = setup && gpuById(engine, setup.gpu) ? setup.gpu : pickFirst(LINK_FALLBACK.gpu, engine.gpus).id;
  return viewState(engine, {
    fields, preset, setup: setup ?? null, gpu, capacityText: '', unit: START.unit, figure: DEFAULT_FIGURE,
    pin: null, rejected: [], notes: [],
  });
}

/** A LinkState: the given parts, with the model's name and the GPU's label and capacity. */
function viewState(engine, parts) {
  const { preset, gpu, capacityText, unit } = parts;
  return { ...parts, name: preset?.name ?? 'Custom model', gpuLabel: gpuLabel(engine, gpu), capacity: gpuCapacity(engine, gpu, capacityText, unit) };
}

/** Why a value was not used, without the field name core messages start with. */
export function reasonText({ key, reason }) {
  return reason.startsWith(`${key}: `) ? reason.slice(key.length + 2) : reason;
}

const FALLBACK_NOTE = 'The figure uses the preset\'s or the default values in their place.';

/**
 * What a view without a form lists under the result: the values the link could not use, then
 * (when the rest is still not valid) the core's issues.
 */
export function linkProblems(link, result) {
  // The embed and the element have no form to show what took a rejected value's place: they say
  // it, and what the page's notice says of a link edited or cut short (a newcomer's QA at stop 46:
  // both showed such a link's figure without a word).
  // (A value the link gives again later, or a capacity beside a catalogue GPU, was replaced by
  // what its reason names: no fallback took its place.)
  const fallbacks = link.rejected.some((r) => !r.replaced) && result.ok ? [FALLBACK_NOTE] : [];
  return [...link.rejected.map((r) => `${r.key}: ${reasonText(r)}`), ...fallbacks, ...(link.warnings ?? []),
    ...(result.ok ? [] : result.issues.map((i) => i.message))];
}

/** The fields of `config` that describe the model (layout.js MODEL_GROUPS). */
const modelFields = (specs, config) => Object.fromEntries(Object.entries(config).filter(([name]) => MODEL_GROUPS.has(specs.get(name)?.group)));

/** What a field the link lacks, or whose value the core rejects, becomes (see the top). */
function fallbackFields(specs, preset) {
  const required = Object.entries(LINK_FALLBACK.fields).filter(([name]) => specs.get(name)?.required);
  return Object.assign(Object.fromEntries(required), preset?.config);
}

/**
 * Drops the link's values the core rejects, from one check of the whole state (engine.check:
 * resolve() alone, no estimate), then pins unset fields whose default changed since the link was
 * made (their `~value`). A rule between fields is reported on one of them and names the others
 * (each issue's `related` fields, from the core), so for each issue the link field that the most
 * issues involve goes: one bad tp=3 must not cost the heads and the sequence. A link field that
 * does not apply where the link lands ("#mom=0.9" with adamw) is rejected by the same check.
 * Changes `fields` and `rejected`; returns { pinned: the names pinned, dropped: whether a value
 * of the link itself was rejected (then a pinned value is the link's own, not a changed default) }.
 */
function keepWhatTheCoreAccepts({ engine, link, fields, fallback, capacity, rejected }) {
  const fromLink = new Set([...Object.keys(link.fields), ...Object.keys(link.auto)]);
  const check = engine.check(withCapacity(fields, capacity));
  if (!check.ok) {
    const involved = new Map(); // link field -> the messages of the issues that involve it
    const inLink = (issue) => [issue.field, ...issue.related].filter((name) => fromLink.has(name));
    for (const issue of check.issues) {
      for (const name of inLink(issue)) involved.set(name, [...(involved.get(name) ?? []), issue.message]);
    }
    const culprits = new Set();
    for (const issue of check.issues) {
      const candidates = inLink(issue); // none: the issue is about what fills the link's gaps, and shows as it is
      if (candidates.length) culprits.add(candidates.reduce((a, b) => (involved.get(b).length > involved.get(a).length ? b : a)));
    }
    for (const name of culprits) {
      const value = name in link.fields ? link.fields[name] : `~${link.auto[name]}`;
      rejected.push({ key: name, value, reason: involved.get(name).join('; ') });
      fromLink.delete(name);
      if (name in fallback) fields[name] = fallback[name];
      else delete fields[name];
    }
  }
  const dropped = !check.ok && rejected.some((r) => !fromLink.has(r.key) && (r.key in link.fields || r.key in link.auto));
  const autos = Object.keys(link.auto).filter((name) => fromLink.has(name));
  if (!autos.length) return { pinned: [], dropped };
  const now = check.ok ? check : engine.check(withCapacity(fields, capacity));
  if (!now.config) return { pinned: [], dropped };
  const pinned = autos.filter((name) => JSON.stringify(now.config[name]) !== JSON.stringify(link.auto[name]));
  for (const name of pinned) fields[name] = link.auto[name];
  return { pinned, dropped };
}

/**
 * The link's pinned configuration (itself an encoded state), if the core accepts it whole. It is
 * read exactly, without fallbacks: the page writes a pin with every field it sets (an unset one
 * must stay unset, even where the preset has a value).
 */
function pinnedFromLink(engine, specs, text, rejected) {
  const inner = decodeState(text, specs);
  const preset = presetById(engine, inner.preset);
  const config = { ...inner.auto, ...inner.fields };
  const check = engine.check(config);
  if (!check.ok) {
    rejected.push({ key: PAGE_KEYS.pin, reason: `the pinned configuration is not valid: ${check.issues.map((i) => i.message).join('; ')}` });
    return null;
  }
  return { config, preset: preset?.id ?? null, label: preset?.name ?? 'Custom model' };
}
