// Everything the page shows about one result except the charts: the headline total and verdict,
// the breakdown table, parameter counts, assumptions and the reference's log line.
import { cssColor } from './theme.js';
import { formatBytes, formatCount, formatExactBytes, formatInteger, formatSize } from './format.js';

export const CATEGORIES = [
  { key: 'weights', label: 'Weights' },
  { key: 'gradients', label: 'Gradients' },
  { key: 'master_weights', label: 'Master weights' },
  { key: 'optimizer_states', label: 'Optimizer states' },
];
export const PARTS = [
  { key: 'dense', label: 'dense' },
  { key: 'embedding', label: 'embedding' },
  { key: 'expert', label: 'experts' },
];

const setText = (node, text) => { if (node.textContent !== text) node.textContent = text; };

/**
 * The result as chart segments, one per tensor class and part, in stacking order, each with its
 * exact bytes and the formulas from the core's trace that produce it.
 */
export function segmentsOf(result, formulas) {
  const segments = [];
  for (const c of CATEGORIES) {
    for (const p of PARTS) {
      segments.push({
        key: `${c.key}.${p.key}`, label: `${c.label} · ${p.label}`,
        bytes: result.state?.[c.key]?.[p.key] ?? 0,
        color: cssColor(`--c-${c.key}-${p.key}`),
        formula: formulas(c.key, p.key),
      });
    }
  }
  segments.push({
    key: 'activation', label: 'Activations', bytes: result.activation_bytes ?? 0,
    color: cssColor('--c-activation'), formula: formulas('activation', null),
  });
  return segments;
}

export class ResultsView {
  constructor(ui) {
    this.ui = ui;
  }

  /** Headline: the total, the capacity and whether it fits. */
  renderSummary(result, capacity, gpuName, unit, stale) {
    const { ui } = this;
    const total = result?.total_bytes;
    setText(ui.total, formatBytes(total, unit));
    ui.total.title = formatExactBytes(total);
    setText(ui.capacity, Number.isFinite(capacity) ? formatSize(capacity, unit) : 'no capacity');
    setText(ui.gpuName, gpuName);
    ui.summary.classList.toggle('stale', stale);
    ui.stale.hidden = !stale;
    if (!Number.isFinite(total) || !Number.isFinite(capacity)) {
      ui.verdict.className = 'verdict';
      setText(ui.verdict, Number.isFinite(total) ? 'Enter a capacity to compare' : '');
      ui.meterFill.style.width = '0%';
      return;
    }
    const headroom = capacity - total;
    const used = total / capacity;
    const fits = headroom >= 0;
    ui.verdict.className = `verdict ${fits ? 'fits' : 'over'}`;
    setText(ui.verdict, fits
      ? `Fits · ${formatBytes(headroom, unit)} headroom (${(used * 100).toFixed(0)}% used)`
      : `Does not fit · ${formatBytes(-headroom, unit)} over (${(used * 100).toFixed(0)}% of capacity)`);
    ui.meterFill.style.width = `${Math.min(100, used * 100).toFixed(1)}%`;
    ui.meter.setAttribute('aria-valuenow', (used * 100).toFixed(0));
    ui.meter.setAttribute('aria-valuetext', `${(used * 100).toFixed(0)}% of capacity`);
  }

  /** The breakdown table: the accessible twin of the GPU chart. Empty parts get no column. */
  renderTable(result, unit) {
    const parts = PARTS.filter((p) => CATEGORIES.some((c) => result.state?.[c.key]?.[p.key] > 0));
    const cell = (bytes) => `<td title="${formatExactBytes(bytes)}">${bytes ? formatBytes(bytes, unit) : '·'}</td>`;
    // A class, not a style attribute: the CSP allows no inline styles.
    const swatch = (key) => `<span class="swatch" data-c="${key}"></span>`;
    const head = `<tr><th scope="col">Tensor class</th>${parts.map((p) => `<th scope="col">${p.label[0].toUpperCase()}${p.label.slice(1)}</th>`).join('')}<th scope="col">Total</th></tr>`;
    const rows = CATEGORIES.map((c) => {
      const row = result.state?.[c.key] ?? {};
      const sum = PARTS.reduce((s, p) => s + (row[p.key] ?? 0), 0);
      return `<tr><th scope="row">${swatch(c.key)}${c.label}</th>${parts.map((p) => cell(row[p.key] ?? 0)).join('')}${cell(sum)}</tr>`;
    });
    const act = result.activation_bytes;
    const known = Number.isFinite(act);
    const blank = parts.length ? `<td colspan="${parts.length}">${known ? '' : 'not computed'}</td>` : '';
    rows.push(`<tr><th scope="row">${swatch('activation')}Activations</th>${blank}${known ? cell(act) : '<td>—</td>'}</tr>`);
    rows.push(`<tr class="total-row"><th scope="row">Total</th>${parts.length ? `<td colspan="${parts.length}"></td>` : ''}${cell(result.total_bytes)}</tr>`);
    this.ui.tableHead.innerHTML = head;
    this.ui.tableBody.innerHTML = rows.join('');
  }

  renderParams(result) {
    const p = result.params ?? {};
    const l = result.layers ?? {};
    const items = [
      ['Total parameters', p.total],
      ['Active per token', p.active],
      ['On the most-loaded GPU', p.per_gpu],
      ['  dense, embedding included', p.dense_per_gpu],
      ['  embedding', p.embedding_per_gpu],
      ['  routed experts', p.routed_per_gpu],
      ['Dense transformer', p.dense_transformer],
      ['Embedding', p.embedding],
      ['Routed experts', p.routed_experts],
    ];
    this.ui.params.innerHTML = items
      .filter(([, v]) => Number.isFinite(v))
      .map(([k, v]) => `<div class="${k.startsWith('  ') ? 'sub' : ''}"><dt>${k.trim()}</dt><dd title="${formatInteger(v)}">${formatCount(v)}</dd></div>`)
      .join('') + (Number.isFinite(l.total)
      ? `<div><dt>Layers (dense + MoE)</dt><dd>${l.total} = ${l.dense} + ${l.moe}</dd></div>` : '');
  }

  renderNotes(result) {
    const { ui } = this;
    ui.assumptions.replaceChildren(...(result.assumptions ?? []).map((text) => {
      const li = document.createElement('li');
      li.textContent = text;
      return li;
    }));
    setText(ui.report, result.report ?? '');
    setText(ui.summaryText, result.summary ?? '');
    setText(ui.profile, result.profile ?? '');
  }

  /** Every intermediate quantity with its formula (verbose mode), for people who check the math. */
  renderTrace(result) {
    const rows = (result.trace ?? []).map((t) => {
      const tr = document.createElement('tr');
      const name = document.createElement('th');
      name.scope = 'row';
      name.textContent = t.name;
      const value = document.createElement('td');
      value.textContent = Number.isInteger(t.value) ? formatInteger(t.value) : String(t.value);
      const formula = document.createElement('td');
      formula.textContent = t.formula;
      tr.append(name, value, formula);
      return tr;
    });
    this.ui.traceBody.replaceChildren(...rows);
  }
}
