// Pin to compare: one configuration kept beside the one being edited, both shown by category with
// the difference, as a table and as two stacked bars. The pin travels in the share link (pin=).
import { CompareChart } from './charts.js';
import { comparePairs, headlineOf, keepingTermFocus } from './results.js';
import { cssColor } from './theme.js';
import { formatBytes, formatExactBytes } from './format.js';
import { elementsById, termElements } from './dom.js';
import { methodText } from './share.js';

const sameValue = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** A field's value in the table of differences. */
export function valueText(v) {
  if (v === undefined || v === null) return 'unset';
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  return Array.isArray(v) ? (v.length > 8 && v.every((x) => typeof x === 'number') ? `${v.length} entries` : v.join(', ')) : String(v);
}

/**
 * The settings two results differ in: the fields of their resolved configs (an unset field and
 * its default agree) that mean something for either run (`inEffect`: the core's fields in effect
 * for each; a field neither run reads, such as zero_stage between two DDP runs, is no difference),
 * in the order of `order` (the page's), the capacity left out (both are shown on the page's GPU).
 * @returns {{name: string, pinned: unknown, current: unknown}[]}
 */
export function differingSettings(pinned, current, inEffect = null, order = []) {
  const rank = (name) => (order.includes(name) ? order.indexOf(name) : order.length);
  return Object.keys({ ...pinned, ...current })
    .filter((k) => k !== 'gpu_memory_bytes' && !sameValue(pinned[k], current[k]) && (!inEffect || inEffect.has(k)))
    .sort((x, y) => rank(x) - rank(y))
    .map((name) => ({ name, pinned: pinned[name], current: current[name] }));
}

function compareRow(label, pinned, current, unit, isTotal) {
  const tr = document.createElement('tr');
  if (isTotal) tr.className = 'total-row';
  const th = Object.assign(document.createElement('th'), { scope: 'row', textContent: label });
  const cells = [pinned, current].map((v) => Object.assign(document.createElement('td'), { textContent: formatBytes(v, unit), title: formatExactBytes(v) }));
  const d = current - pinned;
  const same = Math.abs(d) < 0.5;
  const diff = Object.assign(document.createElement('td'), {
    textContent: same ? '=' : `${d > 0 ? '+' : '−'}${formatBytes(Math.abs(d), unit)}`,
    className: same ? '' : d > 0 ? 'up' : 'down', title: formatExactBytes(d),
  });
  tr.append(th, ...cells, diff);
  return tr;
}

/**
 * @typedef {{config: object, preset: string|null, label: string}} Pin
 *   config: the fields sent to the core, without the GPU's capacity (the page's GPU applies)
 */

// The panel's elements by their ids in index.html.
const IDS = {
  card: 'compare-card', names: 'compare-names', body: 'compare-body', chart: 'compare-chart', pin: 'pin', load: 'pin-load', clear: 'pin-clear',
  diff: 'compare-diff', diffTitle: 'compare-diff-title', diffBody: 'compare-diff-body',
};

export class ComparePanel {
  /**
   * @param {object} page
   * @param {() => Pin|null} page.current the configuration on screen (null: no valid result yet)
   * @param {(config: object) => object} page.estimate the core's result for a pinned config on the page's GPU
   * @param {() => void} page.changed the pin changed: render again and write the link
   * @param {(pin: Pin) => void} page.load puts a pinned configuration into the form
   * @param {(config: object) => Set<string>} [page.inEffect] the fields the core reads for a config
   * @param {string[]} [page.order] the fields in the page's order
   * @param {(name: string) => (Node|string)[]} [page.nameNodes] a field's words: its label, the framework's key, its name
   * @param {(name: string, value: unknown, text: string) => string} [page.valueText] a value as the framework spells it first (form.valueText)
   */
  constructor(page) {
    const ui = elementsById(IDS);
    this.ui = ui;
    this.page = page;
    /** @type {Pin|null} */
    this.pin = null;
    this.chart = null;
    ui.pin.addEventListener('click', () => this.pinCurrent());
    ui.clear.addEventListener('click', () => {
      this.pin = null;
      page.changed();
      ui.pin.focus();
    });
    ui.load.addEventListener('click', () => this.swap());
  }

  pinCurrent() {
    this.pinRun(this.page.current());
  }

  /** The run on screen as a pin (null without a result): to pin it later, once the page has moved on. */
  currentRun() {
    return this.page.current();
  }

  /** Pins `pin` (a run on screen before: currentRun() then) and shows the comparison. */
  pinRun(pin) {
    if (!pin) return;
    this.pin = pin;
    this.page.changed();
    // Its head in view: under the sticky phone headline when it is above or below the window
    // (the page's scroll-padding-top is that headline's height), else the least scroll.
    const card = this.ui.card;
    const top = card.getBoundingClientRect?.().top;
    const clear = parseFloat(getComputedStyle(document.documentElement).scrollPaddingTop) || 0;
    const HEAD = 48; // px of the card's head (its title line) that must be in view to count as seen
    const headHidden = top !== undefined && (top < clear || top > window.innerHeight - HEAD);
    card.scrollIntoView?.({ block: headHidden ? 'start' : 'nearest' });
  }

  /** The pinned configuration goes into the form; the one there is pinned instead. */
  swap() {
    const current = this.page.current();
    if (!this.pin || !current) return;
    const pinned = this.pin;
    this.pin = current;
    this.page.load(pinned);
  }

  /** No comparison while the page has no result (the pin stays, for the next one). */
  clear() {
    const { ui } = this;
    ui.card.hidden = true;
    ui.names.textContent = '';
    ui.body.replaceChildren();
    ui.diffBody?.replaceChildren();
  }

  /**
   * @param {object} result the current result
   * @param {{label: string, unit: string, figure: string, capacity: number|null, capacityLabel: string}} view
   */
  render(result, { label, unit, figure, capacity, capacityLabel }) {
    const { ui } = this;
    ui.card.hidden = !this.pin;
    ui.pin.textContent = this.pin ? 'Pin this instead' : 'Pin to compare';
    if (!this.pin) return;
    const pinned = this.page.estimate(this.pin.config);
    if (!pinned.ok) {
      ui.names.textContent = `The pinned configuration is not valid any more: ${pinned.issues.map((i) => i.message).join('; ')}`;
      ui.body.replaceChildren();
      return;
    }
    const { rows: pairs, figures: [a, b] } = comparePairs(pinned, result, figure);
    // Each run by its model and its method (two runs of one model differ in how they train).
    const run = (name, model, r) => Object.assign(document.createElement('span'), { className: 'compare-run', textContent: `${name}: ${model}, ${methodText(r)}` });
    ui.names.replaceChildren(run('Pinned', this.pin.label, pinned), run('Current', label, result));
    this.renderDifferences(pinned, result, unit, figure);
    const rows = pairs.filter((r) => r.bytes[0] > 0 || r.bytes[1] > 0);
    ui.body.replaceChildren(...rows.map((r) => compareRow(r.label, ...r.bytes, unit)),
      compareRow(`Total (${b.label})`, a.bytes, b.bytes, unit, true));
    if (window.Chart) {
      this.chart ??= new CompareChart(ui.chart);
      this.chart.update(rows.map((r) => ({ label: r.label, color: cssColor(r.color), bytes: r.bytes })), capacity, capacityLabel, unit);
    }
  }

  /**
   * "These N settings differ": each field with the pinned and the current value, and what it
   * does: the pinned run with only that field changed to the current value, estimated; a field
   * the core refuses alone is taken with the differing fields it needs (settingEffects), one
   * figure for the group, its cell spanning the group's rows. Largest effect first, so the top
   * rows are what explains the gap.
   */
  renderDifferences(pinned, result, unit, figure) {
    const { ui } = this;
    if (!ui.diff) return;
    const inEffect = this.page.inEffect ? new Set([...this.page.inEffect(pinned.config), ...this.page.inEffect(result.config)]) : null;
    const diffs = differingSettings(pinned.config, result.config, inEffect, this.page.order ?? []);
    const groups = settingEffects(this.pin.config, diffs, this.page.estimate, figure);
    ui.diffTitle.textContent = diffs.length === 0 ? 'Same settings'
      : diffs.length === 1 ? 'This setting differs' : `These ${diffs.length} settings differ`;
    ui.diff.dataset.count = String(diffs.length);
    const td = (text, className = '') => Object.assign(document.createElement('td'), { textContent: text, className });
    const value = (name, v) => (v === undefined || v === null || typeof v === 'object' || !this.page.valueText ? valueText(v) : this.page.valueText(name, v, valueText(v)));
    const effectCell = ({ delta, settings, reason }) => {
      if (delta === null) {
        // Why, in the core's words, opened by click, tap or keyboard as every term of the page.
        const cell = td('', 'muted');
        const [button, line] = termElements(`compare-why-${settings[0].name}`, 'not valid alone', reason ?? '');
        cell.append(button, line);
        return cell;
      }
      const cell = Math.abs(delta) < 0.5 ? td('=')
        : td(`${delta > 0 ? '+' : '−'}${formatBytes(Math.abs(delta), unit)}`, delta > 0 ? 'up' : 'down');
      cell.title = formatExactBytes(delta);
      if (settings.length > 1) {
        cell.rowSpan = settings.length;
        cell.classList.add('together');
        cell.append(' ', Object.assign(document.createElement('span'), { className: 'together-note', textContent: 'together' }));
      }
      return cell;
    };
    keepingTermFocus(ui.diffBody, () => ui.diffBody.replaceChildren(...groups.flatMap((group) => group.settings.map(({ name, pinned: a, current: b }, i) => {
      const tr = document.createElement('tr');
      tr.dataset.field = name;
      if (group.unset?.includes(name)) tr.dataset.unset = ''; // sent unset: the core's default is the current value
      const th = Object.assign(document.createElement('th'), { scope: 'row' });
      th.append(...(this.page.nameNodes ? this.page.nameNodes(name) : [name.replaceAll('_', ' '), ' ', Object.assign(document.createElement('code'), { textContent: name })]));
      tr.append(th, td(value(name, a)), td(value(name, b)));
      if (i === 0) tr.append(effectCell(group));
      return tr;
    }))));
  }
}

/**
 * What each differing setting does to the pinned run's figure. A setting is tried alone (the
 * pinned run's fields with that one changed to the current value). Where the core refuses it
 * alone (QLoRA needs a 4-bit weights dtype; a 4-bit dtype needs QLoRA; a paged optimizer leaves
 * no room for a torch.optim implementation), the fields the core's objections name are taken in
 * too, when they are among the differences: at their current value, or, where the core objects
 * to that value being given at all, unset, but only if the core then resolves them to the
 * current value (so the group is still "changed to the current values"). A setting whose
 * objection names only itself (double quantisation applies to QLoRA only) joins a group that
 * makes it valid. Groups that share a field are one group. Every figure is the core's; the page
 * takes the difference of two of them.
 * @param {object} pinConfig the pinned run's fields, as sent to the core
 * @param {{name: string, pinned: unknown, current: unknown}[]} diffs differingSettings, in the page's order
 * @param {(config: object) => object} estimate the core's result for a config (ok, issues)
 * @param {string} figure the figure compared (headlineOf)
 * @returns {{settings: typeof diffs, unset?: string[], delta: number|null, reason?: string}[]} largest effect
 *   first; unset: the group's fields sent unset (the core resolves them to the current value); delta
 *   null: not valid (reason: the core's objections to the setting alone)
 */
export function settingEffects(pinConfig, diffs, estimate, figure) {
  const current = new Map(diffs.map((d) => [d.name, d.current]));
  const base = headlineOf(estimate(pinConfig), figure);
  const trial = ({ fields, unset }) => {
    const config = { ...pinConfig };
    for (const name of fields) {
      const value = current.get(name);
      if (unset.has(name) || value === undefined || value === null) delete config[name];
      else config[name] = value;
    }
    return config;
  };
  // The differing fields an objection is about: its field, and those its words name (the core's
  // messages name fields by their names: "kbit_upcast: must be "none" with model_implementation
  // "torchtune"").
  const named = diffs.map((d) => ({ name: d.name, word: new RegExp(`\\b${d.name}\\b`) }));
  const about = ({ field, message = '' }) => [field, ...named.filter((n) => n.name !== field && n.word.test(message)).map((n) => n.name)]
    .filter((name) => current.has(name));
  // The fields in, and those of them unset, grown by the core's objections until it takes them:
  // a field an objection names comes in at its current value; one already in that the core
  // objects to is unset (kept only if the core then resolves it to the current value).
  const close = (fields) => {
    const group = { fields: new Set(fields), unset: new Set() };
    // Each round takes a differing field in or unsets one, each at most once: the rounds end.
    for (let round = 0; round <= 2 * diffs.length; round += 1) {
      const result = estimate(trial(group));
      if (result.ok) {
        const faithful = [...group.unset].every((name) => sameValue(result.config?.[name], current.get(name)));
        return faithful ? { ...group, result } : null;
      }
      let moved = false;
      for (const issue of result.issues ?? []) {
        const names = about(issue);
        const outside = names.filter((name) => !group.fields.has(name));
        for (const name of outside) group.fields.add(name);
        if (outside.length) moved = true;
        else if (current.has(issue.field) && !group.unset.has(issue.field)) {
          group.unset.add(issue.field);
          moved = true;
        }
      }
      if (!moved) return null;
    }
    return null;
  };
  const inGroup = (name) => groups.some((g) => g.fields.has(name));
  const groups = [];
  const stalled = [];
  for (const { name } of diffs) {
    if (inGroup(name)) continue;
    const group = close([name]);
    if (group) groups.push(group);
    else stalled.push(name);
  }
  // A field refused for its own sake: with a group found (the first that makes it valid), else
  // with every other field so refused.
  for (const name of stalled) {
    if (inGroup(name)) continue;
    const others = stalled.filter((n) => n !== name && !inGroup(n));
    const found = [...groups.map((g) => [name, ...g.fields]), [name, ...others]].reduce((got, fields) => got ?? close(fields), null);
    if (found) groups.push(found);
  }
  // Groups sharing a field (one taken in by the objections to another) are one, until none do
  // (two that the core refuses together: the first stays, the other's fields are not explained).
  const overlapping = () => {
    for (let i = 0; i < groups.length; i += 1) {
      for (let j = i + 1; j < groups.length; j += 1) if ([...groups[j].fields].some((f) => groups[i].fields.has(f))) return [i, j];
    }
    return null;
  };
  for (let pair = overlapping(); pair; pair = overlapping()) {
    const [i, j] = pair;
    const union = close([...groups[i].fields, ...groups[j].fields]);
    groups.splice(j, 1);
    if (union) groups[i] = union;
  }
  const order = diffs.map((d) => d.name);
  const rows = groups.map((g) => {
    const after = headlineOf(g.result, figure);
    return {
      settings: diffs.filter((d) => g.fields.has(d.name)),
      unset: [...g.unset],
      delta: after && base ? after.bytes - base.bytes : null,
    };
  });
  for (const d of diffs) {
    if (rows.some((r) => r.settings.includes(d))) continue;
    const alone = estimate(trial({ fields: [d.name], unset: new Set() }));
    rows.push({ settings: [d], delta: null, reason: alone.issues?.map((i) => i.message).join(' ') ?? null });
  }
  const weight = (r) => (r.delta === null ? -1 : Math.abs(r.delta));
  const first = (r) => order.indexOf(r.settings[0].name);
  return rows.sort((x, y) => weight(y) - weight(x) || first(x) - first(y));
}