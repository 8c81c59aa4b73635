// Wires the page: state, form, engine, charts and the share link. Every input change recomputes
// synchronously (the estimate takes microseconds), so there is no Calculate button.
import { createEngine } from './engine.js';
import { Form } from './form.js';
import { CompareChart, GpuChart, StageChart } from './charts.js';
import { DEFAULT_FIGURE, ResultsView, compareRows, figureOf, segmentsOf } from './results.js';
import { cssColor } from './theme.js';
import { decodeState, encodeState } from './url-state.js';
import { formatBytes, formatCount, formatExactBytes, formatSize, parseCapacity } from './format.js';
import { MODEL_GROUPS } from './layout.js';
import { formulaLookup } from './formulas.js';
import { PresetPicker } from './preset-picker.js';
import { ImportPanel } from './import-panel.js';
import { PlanPanel } from './plan-panel.js';
import { canvasPng, download, elementAttributes, embedSnippets, fileStem, resultCsv, resultJson } from './share.js';

const $ = (id) => document.getElementById(id);
// main.js runs async, possibly before the body is parsed: elements are looked up in start().
const findElements = () => ({
  fields: $('fields'), preset: $('preset'), presetSearch: $('preset-search'), presetCount: $('preset-count'),
  presetSource: $('preset-source'), gpu: $('gpu'),
  importPanel: $('import-panel'), importText: $('import-text'), importFile: $('import-file'), importRun: $('import-run'),
  importKind: $('import-kind'), importReport: $('import-report'),
  capacityField: $('capacity-field'), capacityInput: $('capacity-input'), capacityError: $('capacity-error'),
  notice: $('link-notice'), generalIssues: $('general-issues'),
  summary: $('summary'), eyebrow: $('eyebrow'), figureSwitch: $('figure-switch'), peakCard: $('peak-card'), peak: $('peak'),
  stagesHint: $('stages-hint'), total: $('total'), capacity: $('capacity'), gpuName: $('gpu-name'),
  meter: $('meter'), meterFill: $('meter-fill'), verdict: $('verdict'), stale: $('stale'),
  copy: $('copy-link'), copyStatus: $('copy-status'),
  tableHead: $('breakdown-head'), tableBody: $('breakdown-body'), traceBody: $('trace-body'), stagesCard: $('stages-card'), params: $('params'),
  assumptions: $('assumptions'), report: $('report'), summaryText: $('summary-text'), profile: $('profile'),
  version: $('version'),
  compareCard: $('compare-card'), compareNames: $('compare-names'), compareBody: $('compare-body'),
  pin: $('pin'), pinLoad: $('pin-load'), pinClear: $('pin-clear'),
  embedOpen: $('embed-open'), embedDialog: $('embed-dialog'), embedTheme: $('embed-theme'),
  embedIframe: $('embed-iframe'), embedElement: $('embed-element'), embedStatus: $('embed-status'),
  exportJson: $('export-json'), exportCsv: $('export-csv'), exportPng: $('export-png'), exportArgs: $('export-args'),
  planGpus: $('plan-gpus'), planGpu: $('plan-gpu'), planHeadroom: $('plan-headroom'), planRun: $('plan-run'),
  planCancel: $('plan-cancel'), planProgress: $('plan-progress'), planStatus: $('plan-status'), planTable: $('plan-table'),
  planHead: $('plan-head'), planBody: $('plan-body'),
  argsBox: $('args-box'), argsText: $('args-text'), argsNotes: $('args-notes'), shareStatus: $('share-status'),
});
let ui;

// What a fresh page shows: a preset everyone knows on a common GPU, with a training setup that
// is valid for it. Only used when the URL carries no state.
const START = {
  preset: ['llama-3.1-8b', 'llama3.1-8b', 'llama-3-8b'],
  gpu: ['h100-80gb', 'h100'],
  fields: { seq_length: 8192, micro_batch_size: 1, tensor_model_parallel_size: 2,
    pipeline_model_parallel_size: 1, data_parallel_size: 4, use_distributed_optimizer: true,
    sequence_parallel: true, recompute_granularity: 'selective' },
};
const CUSTOM_GPU = 'custom';
const URL_WRITE_DELAY_MS = 250;

// pin: a configuration kept for comparison, { config, preset, label } (config: the fields sent to the core)
const state = { fields: {}, preset: null, gpu: null, capacityText: '', unit: 'GiB', figure: DEFAULT_FIGURE, pin: null };
let engine;
let form;
let gpuChart;
let stageChart;
let compareChart;
let view;
let picker;
let importedLabel = null; // the source of an imported model, for the title
let lastOk = null; // { result, names }: the last valid result stays on screen
let lastStale = false;
let lastWritten = null;
let urlTimer = 0;

// ---- state helpers ----

const presetById = (id) => engine.presets.find((p) => p.id === id) ?? null;
const gpuById = (id) => engine.gpus.find((g) => g.id === id) ?? null;
const isModelField = (name) => MODEL_GROUPS.has(form.specs.get(name)?.group);

function sameValue(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function isModified() {
  const preset = presetById(state.preset);
  if (!preset) return false;
  const names = new Set([...Object.keys(preset.config), ...Object.keys(state.fields)].filter(isModelField));
  return [...names].some((n) => !sameValue(state.fields[n], preset.config[n]));
}

function capacityBytes() {
  if (state.gpu === CUSTOM_GPU) return parseCapacity(state.capacityText, state.unit);
  return gpuById(state.gpu)?.memory_bytes ?? null;
}

function gpuLabel() {
  if (state.gpu === CUSTOM_GPU) return 'custom GPU';
  return gpuById(state.gpu)?.name ?? 'no GPU';
}

/** The fields that apply to the model in view, and the config sent to the core. */
function configFor(fields) {
  const resolved = lastOk?.result.config ?? {};
  const values = { ...resolved, ...fields };
  const names = form.updateVisibility(values);
  const config = {};
  for (const name of names) {
    if (fields[name] !== undefined) config[name] = fields[name];
  }
  // The Hardware section's capacity feeds the trainmem profile (minimum devices); the reference
  // profiles do not read it and would reject it.
  const capacity = capacityBytes();
  if (form.profileOf(fields) === 'trainmem' && Number.isFinite(capacity)) config.gpu_memory_bytes = capacity;
  return { names, config };
}

// ---- compute and render ----

function recompute() {
  const t0 = performance.now();
  const { names, config } = configFor(state.fields);
  const result = engine.estimate(config, { verbose: true });
  const t1 = performance.now();
  if (result.ok) {
    lastOk = { result, names };
    form.showIssues([]);
    form.showResolved(state.fields, result.config);
    showGeneralIssues([]);
    scheduleUrlWrite();
  } else {
    showGeneralIssues(form.showIssues(result.issues));
    // The link keeps every input, the bad one too: a reload (or the copied link) restores the
    // valid ones and names the one that was dropped, instead of losing edits made since.
    scheduleUrlWrite();
  }
  const t2 = performance.now();
  render(!result.ok);
  updateTitle();
  const t3 = performance.now();
  Object.assign(window.trainmemStats, { lastRecomputeMs: t3 - t0, estimateMs: t1 - t0, formMs: t2 - t1, renderMs: t3 - t2 });
}

function render(stale) {
  lastStale = stale;
  const capacity = capacityBytes();
  const { unit } = state;
  ui.capacityError.hidden = !(state.gpu === CUSTOM_GPU && capacity === null && state.capacityText.trim());
  ui.capacityError.textContent = 'Enter a size such as 96 GB or 80 GiB.';
  const result = lastOk?.result;
  view.renderSummary(result, capacity, gpuLabel(), unit, stale, state.figure);
  if (!result) return;
  const capacityLabel = Number.isFinite(capacity) ? `${gpuLabel()} ${formatSize(capacity, unit)}` : '';
  const stages = result.stages ?? [];
  ui.stagesCard.hidden = stages.length < 2;
  if (gpuChart) gpuChart.update(segmentsOf(result, formulaLookup(result), state.figure), capacity, capacityLabel, unit);
  if (gpuChart && stages.length >= 2) {
    stageChart ??= new StageChart($('stage-chart')); // most runs have no pipeline: create on demand
    stageChart.update(stages, capacity, capacityLabel, unit, stageSeries(result),
      (s) => `${s.num_layers} layers · ${formatCount(s.dense_params)} dense, ${formatCount(s.routed_params)} expert parameters${s.moments ? ` · ${s.microbatches_in_flight} microbatches in flight · peak at ${peakMoment(s.moments)}` : ''}`);
  }
  ui.stagesHint.textContent = result.profile === 'trainmem'
    ? 'Each stage\'s peak: its own layers, embedding or output layer, and the microbatches its schedule keeps in flight.'
    : 'The reference estimators compute activation memory for the first stage only; other stages show weights and optimizer state.';
  view.renderTable(result, unit, state.figure);
  view.renderPeak(result, unit, capacity);
  renderCompare(result, capacity, capacityLabel);
  view.renderParams(result);
  view.renderNotes(result);
  view.renderTrace(result);
}

// ---- compare ----

function currentLabel() {
  const preset = presetById(state.preset);
  if (preset) return `${preset.name}${isModified() ? ' (modified)' : ''}`;
  return importedLabel ? `Imported ${importedLabel}` : 'Custom model';
}

function pinCurrent() {
  if (!lastOk) return;
  const { gpu_memory_bytes: _c, ...config } = configFor(state.fields).config;
  state.pin = { config, preset: state.preset, label: currentLabel() };
  render(lastStale);
  scheduleUrlWrite();
  ui.compareCard.scrollIntoView?.({ block: 'nearest' });
}

function pinnedResult() {
  const config = { ...state.pin.config };
  const capacity = capacityBytes();
  if (form.profileOf(config) === 'trainmem' && Number.isFinite(capacity)) config.gpu_memory_bytes = capacity;
  return engine.estimate(config);
}

function renderCompare(result, capacity, capacityLabel) {
  ui.compareCard.hidden = !state.pin;
  ui.pin.textContent = state.pin ? 'Pin this instead' : 'Pin to compare';
  if (!state.pin) return;
  const pinned = pinnedResult();
  const unit = state.unit;
  if (!pinned.ok) {
    ui.compareNames.textContent = `The pinned configuration is not valid any more: ${pinned.issues.map((i) => i.message).join('; ')}`;
    ui.compareBody.replaceChildren();
    return;
  }
  const a = compareRows(pinned, state.figure);
  const b = compareRows(result, state.figure);
  // Name the fields that differ (the resolved values, so an unset field and its default agree).
  const changed = Object.keys({ ...pinned.config, ...result.config })
    .filter((k) => !sameValue(pinned.config[k], result.config[k]) && k !== 'gpu_memory_bytes')
    .map((k) => `${k} ${valueText(pinned.config[k])} → ${valueText(result.config[k])}`);
  ui.compareNames.textContent = `Pinned: ${state.pin.label} · Current: ${currentLabel()}`
    + (changed.length ? ` · Changed: ${changed.slice(0, 6).join(', ')}${changed.length > 6 ? `, and ${changed.length - 6} more` : ''}` : ' · Same configuration');
  const row = (label, x, y, strong) => {
    const tr = document.createElement('tr');
    if (strong) tr.className = 'total-row';
    const th = Object.assign(document.createElement('th'), { scope: 'row', textContent: label });
    const d = y - x;
    const cells = [x, y].map((v) => Object.assign(document.createElement('td'), { textContent: formatBytes(v, unit), title: formatExactBytes(v) }));
    const diff = Object.assign(document.createElement('td'), {
      textContent: Math.abs(d) < 0.5 ? '=' : `${d > 0 ? '+' : '−'}${formatBytes(Math.abs(d), unit)}`,
      className: Math.abs(d) < 0.5 ? '' : d > 0 ? 'up' : 'down', title: formatExactBytes(d),
    });
    tr.append(th, ...cells, diff);
    return tr;
  };
  const rows = a.rows.map((r, i) => [r, b.rows[i]]).filter(([x, y]) => x.bytes > 0 || y.bytes > 0);
  ui.compareBody.replaceChildren(...rows.map(([x, y]) => row(x.label, x.bytes, y.bytes)),
    row(`Total (${b.figure.label})`, a.figure.bytes, b.figure.bytes, true));
  if (window.Chart) {
    compareChart ??= new CompareChart($('compare-chart'));
    compareChart.update(rows.map(([x, y]) => ({ label: x.label, color: cssColor(x.color), bytes: [x.bytes, y.bytes] })),
      capacity, capacityLabel, unit);
  }
}

function valueText(v) {
  if (v === undefined || v === null) return 'unset';
  return Array.isArray(v) ? `[${v.length > 8 ? `${v.length} entries` : v.join(',')}]` : String(v);
}

function swapPin() {
  if (!state.pin || !lastOk) return;
  const { gpu_memory_bytes: _c, ...config } = configFor(state.fields).config;
  const current = { config, preset: state.preset, label: currentLabel() };
  state.fields = { ...state.pin.config };
  state.preset = state.pin.preset;
  importedLabel = state.preset ? null : state.pin.label.replace(/^Imported /, '');
  state.pin = current;
  syncControls();
  recompute();
}

// ---- export and embed ----

/** The folder this page is served from, e.g. "https://example.org/docs/trainmem/". */
function baseUrl() {
  return new URL('.', location.href).href;
}

function currentInputs() {
  const { config } = configFor(state.fields);
  return config;
}

function flash(node, text) {
  node.textContent = text;
  setTimeout(() => { if (node.textContent === text) node.textContent = ''; }, 4000);
}

function exportName() {
  return fileStem(presetById(state.preset)?.name ?? importedLabel ?? 'custom', lastOk?.result.config);
}

function fillEmbed() {
  writeUrl();
  const fragment = linkFragment({ withPin: false }) ?? '';
  const attrs = elementAttributes({
    fields: state.fields, names: lastOk?.names ?? [], preset: presetById(state.preset), gpu: state.gpu,
    capacity: state.gpu === CUSTOM_GPU ? state.capacityText.replace(/\s+/g, '') : '', unit: state.unit,
    figure: lastOk?.result.profile === 'trainmem' && state.figure !== DEFAULT_FIGURE ? state.figure : undefined,
  });
  const { iframe, element } = embedSnippets(baseUrl(), fragment, attrs, ui.embedTheme.value);
  ui.embedIframe.value = iframe;
  ui.embedElement.value = element;
}

function bindShare() {
  ui.pin.addEventListener('click', pinCurrent);
  ui.pinClear.addEventListener('click', () => {
    state.pin = null;
    render(lastStale);
    scheduleUrlWrite();
    ui.pin.focus();
  });
  ui.pinLoad.addEventListener('click', swapPin);
  ui.embedOpen.addEventListener('click', () => {
    fillEmbed();
    ui.embedDialog.showModal();
  });
  ui.embedTheme.addEventListener('change', fillEmbed);
  for (const button of ui.embedDialog.querySelectorAll('[data-copy]')) {
    button.addEventListener('click', async () => {
      const box = $(button.dataset.copy);
      box.select();
      try {
        await navigator.clipboard.writeText(box.value);
        flash(ui.embedStatus, 'Copied');
      } catch {
        flash(ui.embedStatus, 'Selected: press Ctrl+C (or ⌘C) to copy');
      }
    });
  }
  ui.exportJson.addEventListener('click', () => {
    if (!lastOk) return;
    download(`${exportName()}.json`, new Blob([resultJson(lastOk.result, currentInputs(), engine.version)], { type: 'application/json' }));
    flash(ui.shareStatus, 'JSON downloaded');
  });
  ui.exportCsv.addEventListener('click', () => {
    if (!lastOk) return;
    download(`${exportName()}.csv`, new Blob([resultCsv(lastOk.result)], { type: 'text/csv' }));
    flash(ui.shareStatus, 'CSV downloaded');
  });
  ui.exportPng.addEventListener('click', async () => {
    if (!gpuChart) return;
    download(`${exportName()}.png`, await canvasPng($('gpu-chart'), cssColor('--surface')));
    flash(ui.shareStatus, 'PNG downloaded');
  });
  ui.exportArgs.addEventListener('click', async () => {
    const { gpu_memory_bytes: _c, ...config } = currentInputs();
    await engine.loadTools();
    const r = engine.exportMegatronArgs(config);
    ui.argsBox.hidden = false;
    ui.argsText.value = r.ok ? r.args : r.issues.map((i) => i.message).join('\n');
    ui.argsNotes.replaceChildren(...(r.ok ? r.notes : []).map((n) => Object.assign(document.createElement('li'), { textContent: n })));
    ui.argsText.select();
  });
}

const MOMENT_NAMES = { forward: 'the end of forward', backward: 'backward', optimizer_step: 'the optimizer step' };
function peakMoment(m) {
  const [key] = Object.entries(m).reduce((best, e) => (e[1] > best[1] ? e : best));
  return MOMENT_NAMES[key] ?? key;
}

/** The stage chart's stacks: model state, activations, the peak's temporaries, runtime overheads. */
function stageSeries(result) {
  const stages = result.stages;
  const series = [
    { label: 'Weights and optimizer', color: cssColor('--c-weights-dense'), bytes: stages.map((s) => s.weight_and_optimizer_bytes) },
    { label: 'Activations', color: cssColor('--c-activation'), bytes: stages.map((s) => (Number.isFinite(s.activation_bytes) ? s.activation_bytes : null)) },
  ];
  if (result.profile === 'trainmem' && stages.every((s) => Number.isFinite(s.total_bytes))) {
    const fig = figureOf(result, state.figure).key;
    // The core splits each stage's peak: at an optimizer-step peak the activations are freed.
    series[1].bytes = stages.map((s) => s.moments.peak_activation_bytes);
    series.push({ label: 'Temporaries at the peak', color: cssColor('--c-temporary'),
      bytes: stages.map((s) => s.moments.peak_temporary_bytes) });
    if (fig !== 'allocated') {
      series.push({ label: fig === 'device' ? 'Allocator, CUDA context, NCCL, workspaces' : 'Allocator caching and fragmentation',
        color: cssColor('--c-allocator'), bytes: stages.map((s) => Math.max(0, s[`${fig}_bytes`] - s.total_bytes)) });
    }
  }
  return series;
}

function showGeneralIssues(issues) {
  ui.generalIssues.hidden = issues.length === 0;
  ui.generalIssues.replaceChildren(...issues.map((i) => {
    const p = document.createElement('p');
    p.textContent = i.message;
    return p;
  }));
}

function updateTitle() {
  const preset = presetById(state.preset);
  const model = preset ? `${preset.name}${isModified() ? ' (modified)' : ''}` : (importedLabel ? `Imported ${importedLabel}` : 'Custom model');
  document.title = `${model} · ${gpuLabel()} · trainmem`;
}

// ---- share link ----

function linkFragment({ withPin = true } = {}) {
  if (!lastOk) return null;
  // After a bad edit, fields set since the last valid result may not be among its names.
  const names = [...lastOk.names, ...Object.keys(state.fields).filter((n) => !lastOk.names.includes(n))];
  return encodeState({
    fields: state.fields, names, resolved: lastOk.result.config, preset: state.preset,
    gpu: state.gpu, capacity: state.gpu === CUSTOM_GPU ? state.capacityText.replace(/\s+/g, '') : '', unit: state.unit,
    figure: lastOk.result.profile === 'trainmem' && state.figure !== DEFAULT_FIGURE ? state.figure : undefined,
    pin: state.pin && withPin ? encodeState({
      fields: state.pin.config, names: Object.keys(state.pin.config), preset: state.pin.preset,
      gpu: state.gpu, unit: state.unit,
    }) : undefined,
  });
}

function writeUrl() {
  clearTimeout(urlTimer);
  const fragment = linkFragment();
  if (fragment === null || fragment === lastWritten) return;
  lastWritten = fragment;
  history.replaceState(null, '', `#${fragment}`);
}

function scheduleUrlWrite() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(writeUrl, URL_WRITE_DELAY_MS);
}

/**
 * Restores the page from a link. Values the core rejects are dropped one by one (falling back to
 * the preset or the default) and named in a visible notice; the page never shows NaN.
 */
function restoreFromLink(fragment) {
  const link = decodeState(fragment, form.specs);
  const rejected = [...link.rejected];
  const notes = [...link.notes];
  if (link.integrity !== 'ok') notes.push('The link looks edited or cut short (its checksum does not match); the values the calculator accepts were kept.');

  const preset = link.preset ? presetById(link.preset) : null;
  if (link.preset && !preset) rejected.push({ key: 'm', reason: `unknown model preset "${link.preset}"` });
  state.preset = preset?.id ?? null;
  // A field the link lacks (cut short, or hand-written) or that the core rejects falls back to
  // the preset's value, else to the fresh page's; so the page always has something to show.
  const fallback = { ...START.fields, ...(preset ?? pickFirst(START.preset, engine.presets))?.config };
  const fields = {};
  for (const [name, value] of Object.entries(fallback)) {
    if (!(name in link.fields) && !(name in link.auto)) fields[name] = value;
  }
  Object.assign(fields, link.fields);

  if (link.gpu === CUSTOM_GPU || gpuById(link.gpu)) state.gpu = link.gpu;
  else {
    if (link.gpu) rejected.push({ key: 'gpu', reason: `unknown GPU "${link.gpu}"` });
    state.gpu = state.gpu ?? pickFirst(START.gpu, engine.gpus).id;
  }
  state.capacityText = link.capacity ?? '';
  if (link.unit) state.unit = link.unit;
  state.figure = link.figure ?? DEFAULT_FIGURE;
  state.pin = null;
  if (link.pin) {
    const inner = decodeState(link.pin, form.specs);
    const config = { ...inner.auto, ...inner.fields };
    const pinPreset = presetById(inner.preset);
    const check = engine.estimate(config);
    if (check.ok) state.pin = { config, preset: pinPreset?.id ?? null, label: pinPreset?.name ?? 'Custom model' };
    else rejected.push({ key: 'pin', reason: `the pinned configuration is not valid: ${check.issues.map((i) => i.message).join('; ')}` });
  }

  // Drop what the core rejects, one field per round, then pin unset fields whose default changed
  // since the link was made. A rule between two fields is reported on one of them and names the
  // other ("seq_length: must be divisible by tensor_model_parallel_size (3)"), so the link field
  // involved in the most issues goes first: one bad tp=3 must not cost the heads and the sequence.
  const fromLink = new Set([...Object.keys(link.fields), ...Object.keys(link.auto)]);
  const pinned = [];
  let pinningDone = false;
  for (let round = 0; round < fromLink.size + 2; round += 1) {
    const { config } = configFor(fields);
    const result = engine.estimate(config);
    if (!result.ok) {
      const culprit = mostInvolved(result.issues, fromLink);
      if (!culprit) break;
      const value = culprit.field in link.fields ? link.fields[culprit.field] : `~${link.auto[culprit.field]}`;
      rejected.push({ key: culprit.field, value, reason: culprit.messages.join('; ') });
      fromLink.delete(culprit.field);
      if (culprit.field in fallback) fields[culprit.field] = fallback[culprit.field];
      else delete fields[culprit.field];
      continue;
    }
    if (pinningDone) break;
    pinningDone = true;
    for (const [name, value] of Object.entries(link.auto)) {
      if (fromLink.has(name) && !sameValue(result.config[name], value)) {
        fields[name] = value;
        pinned.push(name);
      }
    }
    if (!pinned.length) break;
  }
  if (pinned.length) notes.push(`Defaults changed since this link was made; the link's values were kept for: ${pinned.join(', ')}.`);
  state.fields = fields;
  showNotice(rejected, notes);
}

/** The link field that the most issues blame or name, with those issues' messages. */
function mostInvolved(issues, candidates) {
  const involved = new Map();
  for (const issue of issues) {
    for (const name of candidates) {
      const named = issue.field === name || new RegExp(`\\b${name}\\b`).test(issue.message);
      if (!named) continue;
      if (!involved.has(name)) involved.set(name, []);
      involved.get(name).push(issue.message);
    }
  }
  let best = null;
  for (const [field, messages] of involved) {
    if (!best || messages.length > best.messages.length) best = { field, messages };
  }
  return best;
}

function showNotice(rejected, notes) {
  if (!rejected.length && !notes.length) {
    ui.notice.hidden = true;
    return;
  }
  const parts = [];
  if (rejected.length) {
    const p = document.createElement('p');
    p.textContent = `Some values in this link were not used: ${rejected.length === 1 ? 'it' : 'they'} fell back to the preset or default.`;
    const list = document.createElement('ul');
    for (const r of rejected) {
      const li = document.createElement('li');
      const code = document.createElement('code');
      code.textContent = r.value === undefined ? r.key : `${r.key} = ${JSON.stringify(r.value)}`;
      // Core messages already start with the field name: do not print it twice.
      const reason = r.reason.startsWith(`${r.key}: `) ? r.reason.slice(r.key.length + 2) : r.reason;
      li.append(code, `: ${reason}`);
      list.append(li);
    }
    parts.push(p, list);
  }
  for (const note of notes) {
    const p = document.createElement('p');
    p.textContent = note;
    parts.push(p);
  }
  const close = document.createElement('button');
  close.type = 'button';
  close.className = 'link-button';
  close.textContent = 'Dismiss';
  close.addEventListener('click', () => { ui.notice.hidden = true; });
  parts.push(close);
  ui.notice.replaceChildren(...parts);
  ui.notice.hidden = false;
}

// ---- controls ----

function pickFirst(ids, list) {
  for (const id of ids) {
    const found = list.find((x) => x.id === id);
    if (found) return found;
  }
  return list[0];
}

function fillSelects() {
  const option = (value, text) => Object.assign(document.createElement('option'), { value, textContent: text });
  picker = new PresetPicker({ search: ui.presetSearch, select: ui.preset, count: ui.presetCount }, engine.presets);
  const gpuOptions = () => [...engine.gpus.map((g) => option(g.id, `${g.name} (${formatSize(g.memory_bytes, 'GB')})`)),
    option(CUSTOM_GPU, 'Custom capacity…')];
  ui.gpu.replaceChildren(...gpuOptions());
  ui.planGpu.replaceChildren(...gpuOptions());
}

function syncControls() {
  form.setValues(state.fields);
  picker.set(state.preset ?? '');
  const preset = presetById(state.preset);
  ui.presetSource.replaceChildren();
  // "source" is a URL, optionally followed by a note: "https://… (Brown et al. 2020, Table 2.1)".
  const source = /^(https:\/\/\S+)\s*(.*)$/.exec(preset?.source ?? '');
  if (source) {
    const a = Object.assign(document.createElement('a'), { href: source[1], textContent: 'published config', rel: 'noopener' });
    ui.presetSource.append(`${preset.family ?? 'Model'} · shapes from the `, a, source[2] ? ` ${source[2]}` : '');
  }
  ui.gpu.value = state.gpu;
  ui.planGpu.value = state.gpu;
  ui.capacityField.hidden = state.gpu !== CUSTOM_GPU;
  ui.capacityInput.value = state.capacityText;
  document.querySelector(`input[name="unit"][value="${state.unit}"]`).checked = true;
  document.querySelector(`input[name="figure"][value="${state.figure}"]`).checked = true;
}

function applyPreset(id) {
  const preset = presetById(id);
  state.preset = preset?.id ?? null;
  if (!preset) return;
  const kept = Object.fromEntries(Object.entries(state.fields).filter(([n]) => !isModelField(n)));
  state.fields = { ...kept, ...preset.config };
}

function bindControls() {
  ui.preset.addEventListener('change', () => {
    importedLabel = null;
    applyPreset(ui.preset.value);
    syncControls();
    recompute();
  });
  // The planner's GPU type and the Hardware section's GPU are one setting.
  ui.planGpu.addEventListener('change', () => {
    state.gpu = ui.planGpu.value;
    syncControls();
    recompute();
    if (state.gpu === CUSTOM_GPU) ui.capacityInput.focus();
  });
  ui.gpu.addEventListener('change', () => {
    state.gpu = ui.gpu.value;
    ui.planGpu.value = state.gpu;
    ui.capacityField.hidden = state.gpu !== CUSTOM_GPU;
    recompute();
  });
  ui.capacityInput.addEventListener('input', () => {
    state.capacityText = ui.capacityInput.value;
    recompute();
  });
  for (const radio of document.querySelectorAll('input[name="unit"]')) {
    radio.addEventListener('change', () => {
      state.unit = radio.value;
      recompute();
    });
  }
  for (const radio of document.querySelectorAll('input[name="figure"]')) {
    radio.addEventListener('change', () => {
      state.figure = radio.value;
      recompute();
    });
  }
  ui.copy.addEventListener('click', copyLink);
  window.addEventListener('hashchange', () => {
    if (location.hash.slice(1) === lastWritten) return;
    restoreFromLink(location.hash);
    syncControls();
    recompute();
  });
}

async function copyLink() {
  writeUrl();
  try {
    await navigator.clipboard.writeText(location.href);
    ui.copyStatus.textContent = 'Link copied';
  } catch {
    // Clipboard can be refused (permissions, insecure context): the address bar has the link.
    ui.copyStatus.textContent = 'Copy the address bar: it holds the link';
  }
  setTimeout(() => { ui.copyStatus.textContent = ''; }, 4000);
}

/** A layout from the planner: its fields over the page's (null: the field is left unset). */
function loadLayout(fields) {
  for (const [name, value] of Object.entries(fields)) {
    if (!form.specs.has(name)) continue;
    if (value === null) delete state.fields[name];
    else state.fields[name] = value;
  }
  syncControls();
  recompute();
  ui.summary.scrollIntoView?.({ block: 'nearest' });
}

/** An imported model replaces the page's config; the link carries it as plain fields. */
function loadImported(config, label) {
  const { gpu_memory_bytes: _capacity, ...fields } = config; // the Hardware section owns capacity
  state.fields = fields;
  state.preset = null;
  importedLabel = label;
  syncControls();
  recompute();
}

function onFieldChange(name, value) {
  if (value === undefined) delete state.fields[name];
  else state.fields[name] = value;
  recompute();
}

// ---- start ----

/** Resolves once the body is parsed (main.js is async and may run before that). */
function bodyParsed() {
  if (document.readyState !== 'loading') return Promise.resolve();
  return new Promise((resolve) => document.addEventListener('readystatechange', resolve, { once: true }));
}

/**
 * Resolves once the deferred Chart.js script has run, or failed. readyState turns "interactive"
 * before deferred scripts run, so the result is painted first and the charts follow.
 */
function chartJsSettled() {
  if (window.Chart || document.readyState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    document.addEventListener('DOMContentLoaded', resolve, { once: true });
    window.addEventListener('load', resolve, { once: true });
  });
}

async function start() {
  window.trainmemStats = { lastRecomputeMs: NaN };
  const enginePromise = createEngine(); // the wasm compiles while the page and Chart.js load
  await bodyParsed();
  ui = findElements();
  engine = await enginePromise;
  performance.mark('trainmem:engine-ready');
  form = new Form(ui.fields, engine.fieldSpecs, onFieldChange);
  view = new ResultsView(ui);
  ui.version.textContent = engine.version;
  fillSelects();
  bindControls();
  bindShare();
  new PlanPanel({
    solve: $('plan-solve'), gpus: ui.planGpus, headroom: ui.planHeadroom, run: ui.planRun, cancel: ui.planCancel, progress: ui.planProgress,
    status: ui.planStatus, table: ui.planTable, head: ui.planHead, body: ui.planBody,
  }, () => ({ config: configFor(state.fields).config, capacity: capacityBytes(), gpuLabel: gpuLabel(), unit: state.unit }),
  loadLayout, () => engine);
  new ImportPanel({
    panel: ui.importPanel, text: ui.importText, file: ui.importFile, run: ui.importRun,
    kind: ui.importKind, report: ui.importReport,
  }, engine, () => configFor(state.fields).config, loadImported);
  if (location.hash.length > 1) {
    restoreFromLink(location.hash);
  } else {
    state.gpu = pickFirst(START.gpu, engine.gpus).id;
    state.fields = { ...START.fields };
    applyPreset(pickFirst(START.preset, engine.presets)?.id);
  }
  syncControls();
  recompute();
  performance.mark('trainmem:first-result');
  requestAnimationFrame(() => performance.mark('trainmem:first-result-frame'));

  await chartJsSettled();
  if (!window.Chart) throw new Error('Chart.js did not load (web/vendor/chart.umd.js is missing: run the vendor script).');
  gpuChart = new GpuChart($('gpu-chart'));
  render(lastStale);
  performance.mark('trainmem:first-chart');
  // The frame after the first chart is when it is on screen (read by tests/bench).
  requestAnimationFrame(() => performance.mark('trainmem:first-frame'));
  document.body.dataset.ready = '1';
}

start().catch(async (error) => {
  await bodyParsed();
  const box = $('general-issues');
  box.hidden = false;
  box.textContent = `The calculator could not start: ${error.message}`;
  document.body.dataset.ready = 'error';
});
