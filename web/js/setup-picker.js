// "Start from a fine-tuning setup": a select of the curated setups (core/data/setups.json, the
// engine's `setups`), each a complete run (model, training fields, GPU) with its source. Choosing
// one is the page's (main.js applySetup); this module fills the select, says where the chosen
// setup comes from, and words what a change did (setupChanges, showSetupNotice) with an Undo.
import { MODEL_GROUPS } from './layout.js';
import { setupById } from './link-config.js';
import { showUndoNotice } from './link-notice.js';
import { groupedOptions } from './preset-picker.js';

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

/** A field value as the notice shows it. */
export function valueText(value) {
  if (value === undefined || value === null) return 'unset';
  if (Array.isArray(value)) return value.join(', ');
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  return String(value);
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * What starting from `setup` changes on a page in state `before` ({fields, preset, gpu, resolved}:
 * `resolved` is the page's result config, what its unset fields came to): the model (when the
 * preset or any model field changes), the GPU, and each other field the page set or the setup
 * names, where its value changes: set to a new value, or cleared (set before, not named by the
 * setup) when its default differs. `after` is the result config after the change (the defaults
 * the cleared fields come to). `specs` are the core's field specs by name (for the model fields).
 * @returns {{model: boolean, gpu: boolean, changed: {name: string, from: unknown, to: unknown}[], cleared: {name: string, from: unknown, to: unknown}[]}}
 */
export function setupChanges(before, setup, specs, after = {}) {
  const isModel = (name) => MODEL_GROUPS.has(specs.get(name)?.group);
  const resolved = before.resolved ?? {};
  const names = new Set([...Object.keys(before.fields), ...Object.keys(setup.config)]);
  const changed = [];
  const cleared = [];
  let model = before.preset !== setup.preset;
  for (const name of names) {
    const from = before.fields[name] ?? resolved[name];
    const to = setup.config[name] ?? after[name];
    if (same(from, to)) continue;
    if (isModel(name)) model = true;
    else if (setup.config[name] === undefined) cleared.push({ name, from, to });
    else changed.push({ name, from, to });
  }
  return { model, gpu: before.gpu !== setup.gpu, changed, cleared };
}

export class SetupPicker {
  /**
   * @param {{select: HTMLSelectElement, source: HTMLElement}} els
   * @param {object[]} setups the engine's setups
   * @param {(setup: object|null) => void} onPick a setup chosen (null: the empty choice)
   */
  constructor(els, setups, onPick) {
    this.els = els;
    this.setups = setups;
    const option = (value, text) => el('option', { value, textContent: text });
    els.select.replaceChildren(option('', `Choose one of ${setups.length} common runs…`),
      ...groupedOptions(setups, (s) => s.framework, (s) => option(s.id, s.name)));
    els.select.addEventListener('change', () => onPick(this.byId(els.select.value)));
    this.set(null);
  }

  byId(id) {
    return setupById({ setups: this.setups }, id); // an old id (alias) finds it too
  }

  /** Shows `id` as the setup the page started from (null: none), and where it comes from. */
  set(id) {
    const setup = this.byId(id);
    this.els.select.value = setup?.id ?? '';
    this.edits = null;
    if (!setup) {
      this.els.source.textContent = 'Sets the model, the training fields and the GPU of a published fine-tuning run.';
      return;
    }
    const { repo, path, commit, url } = setup.source;
    const link = el('a', { href: url, rel: 'noopener', textContent: `${repo} ${path.split('/').pop()}` });
    link.title = `${repo}/${path} @ ${commit}`;
    // The summary in its own span: a phone leaves it out (the setup's name says the run; the
    // source stays), so the first screen's questions stay within one screen there.
    this.edits = el('strong', { className: 'setup-edits', hidden: true });
    this.els.source.replaceChildren(this.edits, el('span', { className: 'setup-summary', textContent: `${setup.summary} ` }), 'From ', link, ` @ ${commit.slice(0, 7)}.`);
  }

  /**
   * Under the chosen setup, what the run on screen no longer has of it (issue 32: the select's
   * name is not to be read as the run on screen once it was edited): `changed`, the words of each
   * setting edited since (and "the GPU"); an empty list says nothing.
   * @param {string[]} changed
   */
  showEdits(changed) {
    if (!this.edits) return;
    this.edits.hidden = changed.length === 0;
    const n = changed.length;
    this.edits.textContent = n ? `Edited since: ${n === 1 ? changed[0] : `${n} settings (${changed.join(', ')})`}. ` : '';
  }
}

/**
 * The settings of `setup` that `state` no longer holds as the setup set them ({fields, gpu}),
 * by name, and 'gpu' when its GPU changed.
 * @param {Record<string, string>} [follows] pairs that say one thing (main.js FOLLOWS): the one
 *   set aside when its pair was typed is not counted again
 * @returns {string[]}
 */
export function editsSinceSetup(setup, state, follows = {}) {
  if (!setup) return [];
  const names = new Set([...Object.keys(setup.config), ...Object.keys(state.fields)]);
  const edited = [...names].filter((name) => !same(setup.config[name], state.fields[name]));
  // A field set aside because its pair was typed (follows: the GPU count and DP, the global batch
  // and the accumulation) is that one edit, not a second.
  const typed = (name) => follows[name] !== undefined && state.fields[follows[name]] !== undefined;
  const counted = edited.filter((name) => !(state.fields[name] === undefined && typed(name)));
  if (state.gpu !== setup.gpu) counted.push('gpu');
  return counted;
}

/**
 * Says what starting from `setup` changed, with an Undo (as the preset notice does) and the list
 * of changes under a disclosure. `names` gives the preset's and the GPU's names for people.
 * @param {HTMLElement} box
 * @param {object} setup
 * @param {ReturnType<typeof setupChanges>} changes
 * @param {{preset: string, gpu: string}} names
 * @param {() => void} undo
 * @param {(name: string) => (Node|string)[]} nameNodes a field's words (form.nameNodes: its label,
 *   the setup's framework's key, its name), as the hints and the problems list name it
 * @param {(() => void) | null} [compareBefore] pins the run before the setup to compare (issue 32:
 *   "a compare view explains any two results that differ"); null when there was no result
 * @param {(name: string, value: unknown, text: string) => string} [valueWords] a value in the
 *   framework's spelling first (form.valueText)
 */
export function showSetupNotice(box, setup, changes, names, undo, nameNodes, compareBefore = null, valueWords = (name, v, text) => text) {
  // A value as the setup's framework spells it first, where it has a spelling (form.valueText).
  const shown = (name, v) => (v === undefined || v === null || typeof v === 'object' ? valueText(v) : valueWords(name, v, valueText(v)));
  const parts = [];
  if (changes.model) parts.push(`the model (${names.preset})`);
  if (changes.gpu) parts.push(`the GPU (${names.gpu})`);
  const n = changes.changed.length;
  if (n) parts.push(`${n} setting${n === 1 ? '' : 's'}`);
  const list = parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : parts[0];
  const k = changes.cleared.length;
  const summary = list
    ? `${setup.name}: ${list} changed${k ? `; ${k} of your settings went back to ${k === 1 ? 'its default' : 'their defaults'}` : ''}.`
    : `${setup.name}: nothing changed, the page already was this setup.`;
  const items = [
    ...changes.changed.map((c) => el('li', {}, ...nameNodes(c.name), `: ${shown(c.name, c.from)} → ${shown(c.name, c.to)}`)),
    ...changes.cleared.map((c) => el('li', {}, ...nameNodes(c.name), `: ${shown(c.name, c.from)} → ${c.to === undefined ? 'cleared' : `${shown(c.name, c.to)} (default)`}`)),
  ];
  const details = items.length
    ? [el('details', {}, el('summary', { textContent: 'What changed' }), el('ul', {}, ...items))] : [];
  const compare = compareBefore && (changes.model || n || k)
    ? [el('p', {}, el('button', { type: 'button', className: 'link-button compare-before', textContent: 'Compare with your run before' }))] : [];
  compare[0]?.firstChild.addEventListener('click', () => {
    compare[0].hidden = true;
    compareBefore();
  });
  showUndoNotice(box, summary, undo, [...compare, ...details]); // the comparison before the long list
}
