// The input form, built from the core's field specs and layout.js. It turns what people type into
// field values without judging them (the core validates), shows each issue next to its field, and
// shows what unset fields resolved to.
import { choiceLabel, sectionFields } from './layout.js';
import { INTEGER_TEXT, NUMBER_TEXT, listToText, numberOrText, textToList } from './url-state.js';
import { formatInteger } from './format.js';
import { termElements } from './dom.js';
import { RECIPE_WORDS, formWords, runFrameworks, valueSpelling } from './framework-words.js';

/**
 * A label in the middle of a sentence: each word in lower case, except a word with a capital
 * after its first letter, an acronym or a name (GPUs, FSDP, LoRA, DeepSpeed, cuDNN keep theirs).
 */
export function midSentence(label) {
  return label.replace(/\S+/g, (word) => (/[A-Z]/.test(word.slice(1)) ? word : word.toLowerCase()));
}

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  node.append(...children);
  return node;
};

/** Megatron's list syntax, e.g. "[0]*3+[1]*58", for showing a 0/1 layer pattern. */
export function listToMegatron(list) {
  return listToText(list).split(',').map((run) => {
    const [x, n] = run.split('*');
    return n ? `[${x}]*${n}` : `[${x}]`;
  }).join('+');
}

// A number typed with thousands separators: one kind of separator (a comma, an underscore, a
// space, a no-break space), only between groups of three digits, before any decimal point
// ("8,192", "1 000 000", "1,234.5"). A separator anywhere else is no separator: "1,5" and "0,1"
// (a decimal comma), "4,09,6" and "1,,2" once read as 15, 1, 4096 and 12 without a word.
const GROUPED = /^([+-]?)(\d{1,3})([,_ \u00a0\u202f])\d{3}(?:\3\d{3})*(\.\d*)?$/;

/**
 * `raw` without its thousands separators, or null when a separator is not one (GROUPED). In a
 * field of decimals a comma before three digits alone is a decimal comma as often ("1,250",
 * "0,125": a second QA pass at stop 46 found them read as 1250 and 125): there grouping needs two
 * groups or a decimal point after it, and never starts with 0.
 */
function withoutSeparators(raw, separators = /[,_ \u00a0\u202f]/, decimals = false) {
  if (!separators.test(raw)) return raw;
  const m = GROUPED.exec(raw);
  if (!m || !separators.test(m[3])) return null;
  if (m[2] === '0' || (decimals && !m[4] && raw.split(m[3]).length < 3)) return null;
  return raw.replace(/[,_ \u00a0\u202f]/g, '');
}

/**
 * What the text of an input means. Numbers may be typed with thousands separators ("8,192",
 * "8_192": GROUPED). Text that is not a number, a separator out of place included ("1,5"), is
 * passed on as text, so the core names the field and what it must be. Empty means unset.
 */
export function parseInput(text, type) {
  const raw = String(text).trim();
  if (raw === '') return undefined;
  if (type === 'integer' || type === 'number') {
    const compact = withoutSeparators(raw, undefined, type === 'number');
    if (compact === null) return raw;
    return typeof numberOrText(compact, type === 'integer' ? INTEGER_TEXT : NUMBER_TEXT) === 'number' ? Number(compact) + 0 : raw;
  }
  if (type === 'choice_list') return raw.split(/[\s,]+/).filter(Boolean);
  if (type === 'integer_or_list') {
    // A comma separates the list's entries here: only the other separators group thousands.
    const compact = withoutSeparators(raw, /[_ \u00a0\u202f]/);
    if (compact !== null && /^-?\d+$/.test(compact) && Number.isFinite(Number(compact))) return Number(compact) + 0;
    return textToList(raw) ?? raw;
  }
  // A list of counts: "7, 8*14, 7", "[7]+[8]*14+[7]" or JSON; a single number is a one-entry list.
  if (type === 'integer_list') return textToList(raw) ?? raw;
  return raw;
}

function displayValue(value, type) {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) {
    if (value.some((x) => typeof x === 'string')) return value.join(', ');
    return type === 'integer_list' ? listToText(value).replaceAll(',', ', ') : listToMegatron(value);
  }
  return String(value);
}

function rangeText(spec) {
  if (!['integer', 'number', 'integer_or_list', 'integer_list'].includes(spec.type)) return '';
  // Limits like 10^6 or 10^12 only guard against absurd input; they are not worth showing.
  const hasMax = Number.isFinite(spec.max) && spec.max < 1e6;
  if (Number.isFinite(spec.min) && hasMax) return `${spec.min}–${formatInteger(spec.max)}`;
  if (Number.isFinite(spec.min)) return `≥ ${spec.min}`;
  return '';
}

/**
 * The value an arrow key steps a numeric field to, from `current` (its value, or what the core
 * resolved it to), by the field's natural unit: parallel sizes and the sequence length double and
 * halve (they are powers of two in practice), fractions move by 0.05, other counts by 1 (10 with
 * Shift); kept within the field's range. null when there is nothing to step from.
 */
export function steppedValue(spec, current, up, big = false) {
  if (!Number.isFinite(current)) return null;
  const doubling = spec.unit === 'GPUs' || spec.unit === 'stages' || spec.name === 'seq_length';
  let next;
  if (doubling) next = up ? Math.max(1, current * 2) : Math.max(1, Math.floor(current / 2));
  else if (spec.type === 'number' && spec.max <= 1) next = Math.round((current + (up ? 0.05 : -0.05)) * 100) / 100;
  else next = current + (up ? 1 : -1) * (big ? 10 : 1);
  if (Number.isFinite(spec.min)) next = Math.max(spec.min, next);
  if (Number.isFinite(spec.max)) next = Math.min(spec.max, next);
  return next;
}

/**
 * Fields the planner can vary, each with a hold toggle (planner.hpp's knobs, the framework and DP):
 * the layout, the sharding, the recompute policy and the micro batch.
 */
export const HOLDABLE = new Set([
  'tensor_model_parallel_size', 'pipeline_model_parallel_size', 'virtual_pipeline_model_parallel_size',
  'context_parallel_size', 'expert_model_parallel_size', 'expert_tensor_parallel_size', 'data_parallel_size',
  'use_distributed_optimizer', 'zero_stage', 'recompute_granularity', 'micro_batch_size', 'framework',
]);

export class Form {
  /**
   * @param {HTMLElement} root where the sections go
   * @param {object[]} specs the core's field specs
   * @param {(name: string, value: unknown) => void} onChange every edit (each key typed)
   * @param {() => void} [onCommit] an edit is finished (a field left, a box ticked, a choice made,
   *   an arrow-key step): the page makes it a history entry
   */
  constructor(root, specs, onChange, onCommit = () => {}) {
    this.specs = new Map(specs.map((s) => [s.name, s]));
    this.onChange = (name, value) => {
      this.touched.add(name);
      onChange(name, value);
    };
    this.onCommit = onCommit;
    /** the values the core resolved, for stepping an unset field from what it shows */
    this.resolved = {};
    /** hold toggles the user pressed: field -> held (otherwise a field is held when it is set) */
    this.holdChoices = new Map();
    /** @type {Map<string, {wrap: HTMLElement, input: HTMLInputElement|HTMLSelectElement, error: HTMLElement, spec: object}>} */
    this.fields = new Map();
    /** fieldsets and "More" lists, hidden when none of their fields applies */
    this.sections = [];
    /** the topics behind "More options": section id -> {details, count, names, shown (set count), pointed (suggested fields)} */
    this.topics = new Map();
    /** fields the user edited since the state was loaded (they count as set in their topic) */
    this.touched = new Set();
    this.topicsReset = true;
    this.build(root);
  }

  build(root) {
    this.root = root;
    root.replaceChildren(); // dist/'s prerendered form (web/scripts/prerender.mjs) gives way to the live one
    for (const { section, fields, more } of sectionFields(this.specs)) {
      // A section of the page's own (index.html: "Your run", with the GPU select) takes its
      // fields in its grid, after the page's inputs; fields built there before (dist/'s
      // prerendered page) give way to the live ones.
      const mount = section.mount && document.getElementById(section.mount);
      if (mount) {
        for (const old of mount.querySelectorAll(':scope > [data-field]')) old.remove();
        for (const name of fields) this.addField(mount, name);
        this.sections.push(mount.closest('fieldset') ?? mount);
        continue;
      }
      // Every other section is a topic behind "More options", closed until it holds something
      // (showTopics): the first screen is "Your run" and the answer.
      const count = el('span', { class: 'topic-count' });
      const topic = el('details', { class: 'section topic', id: `section-${section.id}`, 'data-topic': section.id },
        el('summary', {}, el('span', { class: 'topic-title', text: section.title }), count));
      const grid = el('div', { class: 'grid' });
      for (const name of fields) this.addField(grid, name);
      topic.append(grid);
      if (more.length) {
        const moreGrid = el('div', { class: 'grid' });
        for (const name of more) this.addField(moreGrid, name);
        const details = el('details', { class: 'more' }, el('summary', { text: `More ${section.title.toLowerCase()} options` }), moreGrid);
        topic.append(details);
        this.sections.push(details);
      }
      if (!this.topics.size) root.append(el('h3', { class: 'topics-title', id: 'more-options', text: 'More options' }));
      root.append(topic);
      this.sections.push(topic);
      this.topics.set(section.id, { details: topic, count, names: [...fields, ...more].filter((n) => this.fields.has(n)), shown: 0, pointed: '' });
    }
  }

  /** Opens every closed topic and "More" list around a field (a problem, an import's question, a test's fill). */
  reveal(name) {
    for (let box = this.fields.get(name)?.wrap.closest('details'); box; box = box.parentElement?.closest('details')) {
      if (!box.open) box.open = true;
    }
  }

  /** Moves focus to a field, its topic opened first (a closed topic's inputs cannot take focus). */
  focusField(name, options) {
    const f = this.fields.get(name);
    if (!f) return;
    this.reveal(name);
    f.input.focus(options);
  }

  /**
   * The framework's words first (framework-words.js): each field's hint starts with the key the
   * framework in use reads it from ("torchtune: batch_size · micro_batch_size"), and so do its
   * line in the problems list and its error line. An import's or a setup's words win (`named`:
   * its kind and its file's keys); null (a new state) leaves the run's framework to say.
   * @param {{kind: string, keys?: Record<string, string>} | null} named
   */
  showFrameworkKeys(named) {
    this.namedWords = named?.kind ? named : null;
    this.showWords();
  }

  /**
   * Follows the framework the run is in (framework-words.js runFrameworks): `resolved`, the core's
   * resolved config, is these `fields`' resolution when `resolves`, else the last valid one's.
   */
  followFramework(resolved, fields, resolves) {
    const run = runFrameworks(resolved, fields, resolves);
    // Recipe words that hold on one GPU only (RECIPE_WORDS: torchtune's single-device recipe).
    const oneGpu = resolved ? resolved.world_size === 1 : true;
    // A keystroke that leaves the framework as it was costs no more than this comparison.
    const signature = `${run.map((layer) => layer.kind).join(' ')} ${oneGpu}`;
    if (signature === this.runSignature) return;
    this.runSignature = signature;
    this.runFrameworks = run;
    this.oneGpu = oneGpu;
    this.showWords(false); // the page shows this result's issues next
  }

  /** Writes the words into the hints, only when they changed (a keystroke's frame lays out what changed). */
  showWords(refreshIssues = true) {
    const words = formWords(this.namedWords, this.runFrameworks ?? []);
    const signature = JSON.stringify([this.recipeKind(), this.oneGpu, ...words]);
    if (signature === this.wordsSignature) return;
    this.wordsSignature = signature;
    this.frameworkWords = words;
    this.spellChoices();
    for (const [name, f] of this.fields) {
      const hint = f.wrap.querySelector(`#h-${name}`);
      hint?.querySelector(':scope > .framework-key')?.remove();
      const word = words.get(name);
      if (!hint || !word) continue;
      const title = word.file ? `What the ${word.framework} file you started from calls it` : `What ${word.framework} calls it`;
      hint.prepend(el('span', { class: 'framework-key', title }, `${word.framework}: `, keyCode(word.key), ' · '));
    }
    // The error lines carry the words too: written again with the new ones.
    for (const f of this.fields.values()) f.errorText = null;
    if (refreshIssues && this.lastIssues) this.showIssues(this.lastIssues.issues, this.lastIssues.edited);
  }

  /**
   * "torchtune: batch_size · " before a message on `field` (`before`; `key` without the framework's
   * name; the core's text follows as it is), and
   * after it the framework's keys of the other fields its rule involves (the issue's `related`,
   * where the core gives them): " (torchtitan: training.tensor_parallel_degree ·
   * tensor_model_parallel_size)". '' for a field the framework has no key for.
   */
  wordsAround(field, related = []) {
    const word = this.frameworkWords?.get(field);
    const others = related.map((name) => [name, this.frameworkWords?.get(name)]).filter(([, w]) => w);
    const before = word ? `${word.framework}: ${word.key} · ` : '';
    const key = word ? `${word.key} · ` : '';
    const after = others.length
      ? ` (${others.map(([name, w]) => `${w.framework === word?.framework ? '' : `${w.framework}: `}${w.key} · ${name}`).join(', ')})`
      : '';
    return { before, key, after };
  }

  /**
   * A field in a line that names it (a problem, a notice, the compare view's row): its label, then
   * the framework in use's key and the field's name ("Micro-batch size torchtune: batch_size ·
   * micro_batch_size"), as the field's hint names it; its label and name alone where the framework
   * has no key of its own for it. Nodes, the key as code that breaks after its separators.
   */
  nameNodes(field) {
    const word = this.frameworkWords?.get(field);
    return [this.specs.get(field)?.label || field, ' ',
      el('span', { class: 'field-words' }, ...(word ? [`${word.framework}: `, keyCode(word.key), ' · '] : []), el('code', { text: field }))];
  }

  /**
   * A field in a one-line notice, as text: the framework's key first, the field's name second
   * ("torchtune: enable_activation_checkpointing · recompute_granularity"); where the framework has
   * no key for it, the form's words and its name ("tensor parallel (tensor_model_parallel_size)").
   */
  nameText(field) {
    const { before } = this.wordsAround(field);
    if (before) return `${before}${field}`;
    const words = midSentence((this.specs.get(field)?.label ?? '').replace(/\s*\(.*\)$/, ''));
    return !words || words === field || words.toLowerCase() === field.replaceAll('_', ' ') ? field : `${words} (${field})`;
  }

  /**
   * A value of `field` in a notice, as the framework in use spells it first and trainmem's words
   * second ("FSDP (fsdp2)", "true (full)"), where the generated table knows the spelling
   * (framework-words.js valueSpelling); `text`, trainmem's words for it, elsewhere.
   */
  valueText(field, value, text = String(value)) {
    const spelled = this.spelling(field, value);
    return spelled === undefined || spelled === text ? text : `${spelled} (${text})`;
  }

  /**
   * The framework in use's spelling of a value of `field`: its key's value where the generated
   * table has it (framework-words.js valueSpelling: the field's label and hint name the key), else
   * for `framework` the words of a framework that picks it by its recipe (RECIPE_WORDS); undefined
   * where the framework has no words for it.
   */
  spelling(field, value) {
    const spelled = valueSpelling(this.frameworkWords?.get(field), field, value);
    if (spelled !== undefined) return spelled;
    if (field !== 'framework') return undefined;
    const words = RECIPE_WORDS[this.recipeKind()]?.[value];
    return words?.oneGpu && this.oneGpu === false ? undefined : words?.text;
  }

  /** The importer kind whose code the run is (framework-words.js runFrameworks), or undefined. */
  recipeKind() {
    return this.runFrameworks?.[0]?.kind;
  }

  /**
   * The choice selects' options in the framework in use's words, trainmem's value in the option's
   * title ("single device", title "trainmem: ddp", under torchtune; "FSDP" under accelerate; the
   * field's hint names trainmem's field); trainmem's words where the framework has none. A select
   * shows its option's text in one line, cut at the field's width, so the framework's words stand
   * alone there rather than first of a longer text.
   */
  spellChoices() {
    for (const [name, f] of this.fields) {
      if (f.spec.type !== 'choice' || f.input.tagName !== 'SELECT') continue;
      for (const option of f.input.options) {
        if (!option.value) continue;
        const own = choiceLabel(f.spec, option.value);
        const spelled = this.spelling(name, option.value);
        const text = spelled ?? own;
        if (option.textContent !== text) option.textContent = text;
        option.title = `${spelled === undefined || own === option.value ? '' : `${own} · `}trainmem: ${option.value}`;
      }
    }
  }

  /** The next showTopics is a whole new state's (a link, an import, a setup): its topics start closed. */
  resetTopics() {
    this.topicsReset = true;
    this.touched.clear();
  }

  /**
   * Each topic's summary says how many of its fields in effect are set ("Parallelism · 3 set"),
   * and a topic opens itself when that count grows, one of its fields has a problem, or the
   * verdict's suggestions come to point at one of its fields ("· suggested"). Set: a field the
   * user edited, or one a link, import or setup gave a value other than its default (the core's
   * spec) and other than `baseline`'s (the preset's model, the fresh page's start). A topic the
   * user closed stays closed until its count or its suggested fields grow (a problem keeps it open).
   * @param {Set<string>} [suggested] the fields the suggestion chips would change
   */
  showTopics(values, baseline = {}, suggested = new Set()) {
    const same = (a, b) => a === b || JSON.stringify(a) === JSON.stringify(b);
    const inEffect = (name) => !this.fields.get(name).wrap.hidden;
    const isSet = (name) => {
      const value = values[name];
      if (value === undefined || !inEffect(name)) return false;
      if (this.touched.has(name)) return true;
      const spec = this.specs.get(name);
      const byDefault = typeof value === 'object' ? JSON.stringify(value) === spec.default : String(value) === spec.default;
      return !byDefault && !(name in baseline && same(baseline[name], value));
    };
    const reset = this.topicsReset;
    this.topicsReset = false;
    for (const topic of this.topics.values()) {
      const set = topic.names.filter(isSet).length;
      const invalid = topic.names.some((n) => this.fields.get(n).wrap.classList.contains('invalid'));
      const pointed = topic.names.filter((n) => suggested.has(n) && inEffect(n)).join(' ');
      const newlyPointed = pointed !== '' && pointed !== topic.pointed;
      const text = `${set ? ` · ${set} set` : ''}${pointed ? ' · suggested' : ''}`;
      if (topic.count.textContent !== text) topic.count.textContent = text;
      if (reset) topic.details.open = set > 0 || invalid || pointed !== '';
      else if ((set > topic.shown || invalid || newlyPointed) && !topic.details.open) topic.details.open = true;
      topic.shown = set;
      topic.pointed = pointed;
    }
  }

  addField(grid, name) {
    const spec = this.specs.get(name);
    if (!spec) return; // the core does not know this field (any more): nothing to show
    const id = `f-${name}`;
    const hintId = `h-${name}`;
    const errorId = `e-${name}`;
    const label = spec.label || name.replaceAll('_', ' ');
    let input;
    if (spec.type === 'choice_list') {
      this.addChoiceList(grid, spec, label);
      return;
    }
    if (spec.type === 'boolean') {
      input = el('input', { type: 'checkbox', id, name, 'aria-describedby': `${hintId} ${errorId}` });
    } else if (spec.type === 'choice') {
      input = el('select', { id, name, 'aria-describedby': `${hintId} ${errorId}` });
      if (!spec.required) input.append(el('option', { value: '', text: 'default' }));
      for (const choice of spec.choices ?? []) input.append(el('option', { value: choice, text: choiceLabel(spec, choice) }));
    } else {
      input = el('input', {
        type: 'text', id, name, inputmode: { integer: 'numeric', number: 'decimal' }[spec.type] ?? 'text',
        autocomplete: 'off', spellcheck: 'false', 'aria-describedby': `${hintId} ${errorId}`,
      });
    }
    const range = rangeText(spec);
    const [hint, about] = this.hintOf(spec, hintId, range);
    if (about) input.setAttribute('aria-describedby', `${hintId} ${about.id} ${errorId}`);
    const error = el('p', { class: 'error one-line', id: errorId, hidden: true });
    let wrap;
    if (spec.type === 'boolean') {
      wrap = el('div', { class: 'field check', 'data-field': name, title: spec.description },
        el('div', { class: 'check-row' }, input, el('label', { for: id, text: label }),
          ...(HOLDABLE.has(name) ? [this.holdToggle(name, label)] : [])), hint, ...(about ? [about] : []), error);
    } else {
      const row = el('div', { class: 'input-row' }, input);
      if (spec.unit) row.append(el('span', { class: 'unit', text: spec.unit }));
      if (HOLDABLE.has(name)) row.append(this.holdToggle(name, label));
      wrap = el('div', { class: 'field', 'data-field': name, title: spec.description },
        el('label', { for: id, text: label }), row, hint, ...(about ? [about] : []), error);
    }
    if (spec.type === 'boolean' || spec.type === 'choice') {
      input.addEventListener('change', () => {
        this.onChange(name, this.read(name));
        this.onCommit();
      });
    } else {
      input.addEventListener('input', () => this.onChange(name, this.read(name)));
      input.addEventListener('change', () => this.onCommit()); // the field is left after an edit
      // Tabbing into a field selects its text: typing replaces it.
      input.addEventListener('focus', () => input.select());
      if (spec.type === 'integer' || spec.type === 'number') {
        input.addEventListener('keydown', (event) => {
          if (event.key !== 'ArrowUp' && event.key !== 'ArrowDown') return;
          const typed = parseInput(input.value, spec.type);
          const from = typeof typed === 'number' ? typed : this.resolved[name];
          const next = steppedValue(spec, from, event.key === 'ArrowUp', event.shiftKey);
          if (next === null) return;
          event.preventDefault();
          input.value = String(next);
          this.onChange(name, next);
          this.onCommit();
        });
      }
    }
    grid.append(wrap);
    this.fields.set(name, { wrap, input, error, spec });
  }

  /**
   * A field's hint: its name (what config files and the link call it) and range; with a
   * description, the name is a term whose line explains the field (click, tap or keyboard; the
   * wrap's title says it on hover). [hint, the line or null]
   */
  hintOf(spec, hintId, range = '') {
    const code = el('code', { text: spec.name });
    if (!spec.description) return [el('p', { class: 'hint', id: hintId }, code, range ? ` · ${range}` : ''), null];
    const [button, line] = termElements(`d-${spec.name}`, code, spec.description);
    line.classList.add('field-about');
    return [el('p', { class: 'hint', id: hintId }, button, range ? ` · ${range}` : ''), line];
  }

  /**
   * The planner's hold toggle of a field: pressed, the planner keeps the field's value in every
   * layout it lists ("Find layouts that fit" varies only what is released). Until pressed, a field
   * is held when it is set (what the user typed).
   */
  holdToggle(name, label) {
    const button = el('button', { type: 'button', class: 'hold', 'data-hold': name, 'aria-pressed': 'false',
      title: `Held: the planner keeps ${label}. Press to let it vary.`, text: 'hold' });
    button.setAttribute('aria-label', `Hold ${label} in the planner`);
    button.setAttribute('aria-describedby', 'hold-note'); // index.html: what held and free mean
    button.addEventListener('click', () => {
      this.holdChoices.set(name, button.getAttribute('aria-pressed') !== 'true');
      this.showHolds(this.lastValues ?? {});
    });
    return button;
  }

  /** The fields whose hold toggle the user pressed to held (a set field is held too, unpressed). */
  pressedHolds() {
    return new Set([...this.holdChoices].filter(([, on]) => on).map(([name]) => name));
  }

  /** The fields the planner holds for these values: pressed toggles, else the set fields. */
  held(values) {
    return [...HOLDABLE].filter((name) => this.fields.has(name) && !this.fields.get(name).wrap.hidden
      && (this.holdChoices.get(name) ?? values[name] !== undefined));
  }

  showHolds(values) {
    this.lastValues = values;
    const held = new Set(this.held(values));
    // Every field's toggle, those of a section of the page's own ("Your run") too, written only
    // when they change: a keystroke's frame lays out what changed, and a text written again is a
    // change to lay out.
    for (const button of [...this.fields.values()].map((f) => f.wrap.querySelector('button.hold')).filter(Boolean)) {
      const on = String(held.has(button.dataset.hold));
      const text = on === 'true' ? 'held' : 'free';
      if (button.getAttribute('aria-pressed') !== on) button.setAttribute('aria-pressed', on);
      if (button.textContent !== text) button.textContent = text;
    }
  }

  /**
   * A choice_list field as a group of checkboxes. Until one is clicked the field is unset and the
   * boxes show what the core resolved it to (dimmed, like an unset boolean).
   */
  addChoiceList(grid, spec, label) {
    const { name } = spec;
    const hintId = `h-${name}`;
    const errorId = `e-${name}`;
    const boxes = (spec.choices ?? []).map((choice) => {
      const id = `f-${name}-${choice}`;
      const box = el('input', { type: 'checkbox', id, name, value: choice, class: 'auto' });
      box.addEventListener('change', () => {
        for (const b of boxes) b.input.classList.remove('auto');
        wrap.dataset.set = '1';
        this.onChange(name, this.read(name));
        this.onCommit();
      });
      return { input: box, row: el('div', { class: 'check-row' }, box, el('label', { for: id, text: choice })) };
    });
    const [hint, about] = this.hintOf(spec, hintId);
    const error = el('p', { class: 'error one-line', id: errorId, hidden: true });
    const group = el('fieldset', { class: 'choice-list', 'aria-describedby': `${hintId} ${about ? `${about.id} ` : ''}${errorId}` },
      el('legend', { text: label }), ...boxes.map((b) => b.row));
    const wrap = el('div', { class: 'field wide', 'data-field': name, title: spec.description }, group, hint, ...(about ? [about] : []), error);
    grid.append(wrap);
    // `input` is the first box: focus and aria-invalid go there.
    this.fields.set(name, { wrap, input: boxes[0]?.input ?? group, boxes, error, spec });
  }

  /** The value the user gave a field, or undefined when it is left to the core's default. */
  read(name) {
    const f = this.fields.get(name);
    if (!f) return undefined;
    if (f.spec.type === 'choice_list') {
      return f.wrap.dataset.set ? f.boxes.filter((b) => b.input.checked).map((b) => b.input.value) : undefined;
    }
    if (f.spec.type === 'boolean') {
      f.input.classList.remove('auto');
      return f.input.checked;
    }
    if (f.spec.type === 'choice') return f.input.value === '' ? undefined : f.input.value;
    return parseInput(f.input.value, f.spec.type);
  }

  /** Puts values into the inputs (unset fields are cleared). */
  setValues(values) {
    for (const [name, f] of this.fields) {
      const value = values[name];
      if (f.spec.type === 'choice_list') {
        const set = Array.isArray(value);
        if (set) f.wrap.dataset.set = '1';
        else delete f.wrap.dataset.set;
        for (const b of f.boxes) {
          b.input.checked = set && value.includes(b.input.value);
          b.input.classList.toggle('auto', !set);
        }
      } else if (f.spec.type === 'boolean') {
        f.input.checked = value === true;
        f.input.classList.toggle('auto', value === undefined);
      } else {
        f.input.value = displayValue(value, f.spec.type);
      }
    }
  }

  /** Shows what unset fields resolved to: placeholders, default options, auto checkboxes. */
  showResolved(values, resolved) {
    this.resolved = resolved ?? {};
    for (const [name, f] of this.fields) {
      const r = resolved?.[name];
      if (f.spec.type === 'choice_list') {
        if (values[name] === undefined && Array.isArray(r)) {
          for (const b of f.boxes) b.input.checked = r.includes(b.input.value);
        }
      } else if (f.spec.type === 'boolean') {
        if (values[name] === undefined && typeof r === 'boolean') f.input.checked = r;
      } else if (f.spec.type === 'choice') {
        const first = f.input.options[0];
        // A field that is set resolves to its own value: what "default" would resolve to is not
        // known without asking the core for the config without it, so it says "default" alone
        // (a setup's LoRA showed "default (LoRA)").
        if (values[name] !== undefined) {
          if (first && first.value === '' && first.textContent !== 'default') first.textContent = 'default';
          continue;
        }
        // In the words its own choice shows ("default (full fine-tuning)", not the core's "none";
        // "default: none (no checkpointing)" where those words have their own parentheses).
        const words = choiceLabel(f.spec, r);
        const text = r === undefined || r === null ? 'default' : String(words).includes('(') ? `default: ${words}` : `default (${words})`;
        if (first && first.value === '' && first.textContent !== text) first.textContent = text; // only a change is laid out
      } else {
        const shown = r === undefined || r === null || r === 0 && f.spec.min > 0 ? '' : displayValue(r, f.spec.type);
        const placeholder = shown ? `auto: ${shown}` : 'unset';
        if (f.input.placeholder !== placeholder) f.input.placeholder = placeholder;
      }
    }
  }

  /** Shows the fields in effect (the core's, in page order: link-config.js coreConfig), hides the others. */
  showApplicable(names) {
    const applicable = new Set(names);
    for (const [name, f] of this.fields) {
      const hidden = !applicable.has(name);
      if (f.wrap.hidden !== hidden) f.wrap.hidden = hidden;
    }
    // A section (or its "More" list) with nothing that applies is hidden as a whole.
    for (const box of this.sections) {
      const hidden = !box.querySelector('.field:not([hidden])');
      if (box.hidden !== hidden) box.hidden = hidden;
    }
  }

  /** Marks fields with the core's messages; returns the issues no visible field could show. */
  showIssues(issues, edited = null) {
    this.lastIssues = issues.length ? { issues, edited } : null;
    const byField = new Map();
    const unplaced = [];
    const add = (name, message) => {
      if (!byField.has(name)) byField.set(name, []);
      if (!byField.get(name).includes(message)) byField.get(name).push(message);
    };
    // The field just edited carries every message whose rule involves it: typing TP 3 breaks a rule
    // the core reports on the heads ("num_attention_heads: must be divisible by
    // tensor_model_parallel_size (3)"), and the hand is on TP. The core's rule declares the fields
    // it involves (Issue::related); the message's words are not read.
    const editedField = edited && this.fields.get(edited);
    for (const issue of issues) {
      const f = this.fields.get(issue.field);
      // The message in the framework's words. On the field's own line the rule comes first, the
      // field's names after it ("must be at least 1, got -1 (seq_length · tokenizer.max_seq_len)"):
      // a phone's one line shows its start, and a key before the rule left "tokenizer.ma…" and
      // no rule (a newcomer's QA at stop 46). On the field just edited, another field's rule keeps
      // that field's name first: it says which field the rule is about.
      const { key, after } = this.wordsAround(issue.field, issue.related);
      const prefix = `${issue.field}: `;
      const rule = issue.message.startsWith(prefix) ? issue.message.slice(prefix.length) : null;
      const names = [issue.field, ...(key ? [key.replace(/ · $/, '')] : [])].join(' · ');
      const own = rule === null ? `${key}${issue.message}${after}` : `${rule} (${names})${after}`;
      if (editedField && !editedField.wrap.hidden && issue.field !== edited && (issue.related ?? []).includes(edited)) add(edited, `${key}${issue.message}${after}`);
      if (f && !f.wrap.hidden) add(issue.field, own);
      else unplaced.push(issue);
    }
    for (const [name, f] of this.fields) {
      const messages = byField.get(name);
      const text = messages ? messages.join(' ') : '';
      if (f.errorText !== text) {
        f.errorText = text;
        f.error.replaceChildren(...(messages ? oneLine(text, `Show the whole rule for ${name}`) : []));
        f.error.classList.remove('open');
      }
      // Written only when it changes: a keystroke's frame restyles what was written.
      if (f.error.hidden !== !messages) f.error.hidden = !messages;
      f.wrap.classList.toggle('invalid', Boolean(messages));
      if (messages) f.input.setAttribute('aria-invalid', 'true');
      else f.input.removeAttribute('aria-invalid');
    }
    // Open the topic and the "More" list that hide an invalid field.
    for (const name of byField.keys()) this.reveal(name);
    this.showProblems(issues);
    // A "more" button only where the one line cuts the rule (a phone's width; the desktop wraps).
    for (const line of this.root.parentElement.querySelectorAll('.one-line')) fitOneLine(line);
    return unplaced;
  }

  /**
   * Every problem at the top of the form, each naming its field: a field's name moves focus to
   * it (a problem may sit on a field scrolled far away, or in a closed "More" list).
   */
  showProblems(issues) {
    // A prerendered page (dist/) may hold the box already: take it rather than add a second.
    this.problems ??= document.getElementById('form-problems');
    if (!this.problems) {
      this.problems = el('div', { class: 'notice error-box form-problems', id: 'form-problems', role: 'alert', hidden: true });
      this.root.before(this.problems);
    }
    if (this.problems.hidden !== (issues.length === 0)) this.problems.hidden = issues.length === 0;
    if (!issues.length) {
      if (this.problems.firstChild) this.problems.replaceChildren();
      return;
    }
    // One line per field (a field the core names twice, once), its rules after its name.
    const lines = new Map();
    for (const issue of issues) {
      const f = this.fields.get(issue.field);
      const key = f && !f.wrap.hidden ? issue.field : `\u0000${issue.message}`;
      const rule = (issue.message.startsWith(`${issue.field}: `) ? issue.message.slice(issue.field.length + 2) : issue.message)
        + this.wordsAround(issue.field, issue.related).after;
      if (!lines.has(key)) lines.set(key, { f: f && !f.wrap.hidden ? f : null, field: issue.field, rules: [] });
      if (!lines.get(key).rules.includes(rule)) lines.get(key).rules.push(rule);
    }
    const items = [...lines.values()].map(({ f, field, rules }) => {
      const li = el('li', { class: 'one-line' });
      if (f) {
        // The field's words first (its label, as the form shows it, and the framework's key),
        // its name second (what links and the core's rules call it).
        const go = el('button', { type: 'button', class: 'link-button' }, ...this.nameNodes(field));
        go.addEventListener('click', () => this.focusField(field));
        li.append(go, ...oneLine(`: ${rules.join(' ')}`, `Show the whole rule for ${field}`));
      } else {
        // A problem no field on screen shows: the core's message, after its field's key.
        li.append(...oneLine(`${this.wordsAround(field).before}${rules.join(' ')}`, 'Show the whole problem'));
      }
      return li;
    });
    this.problems.replaceChildren(el('p', { text: issues.length === 1 ? 'One problem:' : `${issues.length} problems:` }), el('ul', {}, ...items));
  }
}

/**
 * A framework's key as code that a narrow column breaks after its separators
 * ("enable_activation_<wbr>checkpointing", "tokenizer.<wbr>max_seq_len"), not inside a word.
 */
function keyCode(key) {
  const code = el('code');
  key.split(/(?<=[._])(?=[^._])/).forEach((part, i) => {
    if (i) code.append(document.createElement('wbr'));
    code.append(part);
  });
  return code;
}

/**
 * A problem's words as one line (a phone cuts it with an ellipsis) and the button that shows the
 * whole rule on demand; the button is shown only when the line is cut (fitOneLine).
 * @returns {Node[]} the text span and the button; their parent gets class "one-line"
 */
function oneLine(text, label) {
  const span = el('span', { class: 'one-line-text', text });
  const more = el('button', { type: 'button', class: 'one-line-more', 'aria-expanded': 'false', 'aria-label': label, hidden: true, text: 'more' });
  more.addEventListener('click', () => {
    const line = more.parentElement;
    const open = !line.classList.contains('open');
    line.classList.toggle('open', open);
    more.setAttribute('aria-expanded', String(open));
    more.textContent = open ? 'less' : 'more';
  });
  return [span, more];
}

/** Shows a line's "more" button when its text or its field's words are cut (or the line is open). */
function fitOneLine(line) {
  const text = line.querySelector(':scope > .one-line-text');
  const more = line.querySelector(':scope > .one-line-more');
  if (!text || !more || line.hidden) return;
  const go = line.querySelector(':scope > .link-button'); // the field's words, cut on a phone too
  const cut = text.scrollWidth > text.clientWidth + 1 || (go && go.scrollWidth > go.clientWidth + 1);
  more.hidden = !line.classList.contains('open') && !cut;
}
