// Pin to compare: one configuration kept beside the one being edited, both shown by category with
// the difference, as a table and as two stacked bars. The pin travels in the share link (pin=).
import { CompareChart } from './charts.js';
import { comparePairs, headlineOf } from './results.js';
import { cssColor } from './theme.js';
import { formatBytes, formatExactBytes } from './format.js';
import { elementsById } from './dom.js';

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
    ui.names.textContent = `Pinned: ${this.pin.label} · Current: ${label}`;
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
   * does alone: the pinned run with only that field changed to the current value, estimated (the
   * effects of several fields need not add up; a field that is not valid on its own says so).
   * Largest effect first, so the top rows are what explains the gap.
   */
  renderDifferences(pinned, result, unit, figure) {
    const { ui } = this;
    if (!ui.diff) return;
    const inEffect = this.page.inEffect ? new Set([...this.page.inEffect(pinned.config), ...this.page.inEffect(result.config)]) : null;
    const base = headlineOf(pinned, figure);
    const diffs = differingSettings(pinned.config, result.config, inEffect, this.page.order ?? []).map((d) => {
      const alone = headlineOf(this.page.estimate({ ...this.pin.config, [d.name]: d.current }), figure);
      return { ...d, delta: alone && base ? alone.bytes - base.bytes : null };
    });
    const weight = (d) => (d.delta === null ? -1 : Math.abs(d.delta));
    diffs.sort((x, y) => weight(y) - weight(x)); // stable: ties keep the page's order
    ui.diffTitle.textContent = diffs.length === 0 ? 'Same settings'
      : diffs.length === 1 ? 'This setting differs' : `These ${diffs.length} settings differ`;
    ui.diff.dataset.count = String(diffs.length);
    const td = (text, className = '') => Object.assign(document.createElement('td'), { textContent: text, className });
    ui.diffBody.replaceChildren(...diffs.map(({ name, pinned: a, current: b, delta }) => {
      const tr = document.createElement('tr');
      tr.dataset.field = name;
      const th = Object.assign(document.createElement('th'), { scope: 'row' });
      th.append(...(this.page.nameNodes ? this.page.nameNodes(name) : [name.replaceAll('_', ' '), ' ', Object.assign(document.createElement('code'), { textContent: name })]));
      let effect;
      if (delta === null) effect = td('not valid alone', 'muted');
      else {
        effect = Math.abs(delta) < 0.5 ? td('=')
          : td(`${delta > 0 ? '+' : '−'}${formatBytes(Math.abs(delta), unit)}`, delta > 0 ? 'up' : 'down');
        effect.title = formatExactBytes(delta);
      }
      const value = (v) => (v === undefined || v === null || typeof v === 'object' || !this.page.valueText ? valueText(v) : this.page.valueText(name, v, valueText(v)));
      tr.append(th, td(value(a)), td(value(b)), effect);
      return tr;
    }));
  }
}
