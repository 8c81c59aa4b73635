// Wires the page: state, form, engine, charts and the share link. Every input change recomputes
// synchronously (the estimate takes microseconds), so there is no Calculate button.
import { createEngine } from './engine.js';
import { Form } from './form.js';
import { GpuChart, StageChart } from './charts.js';
import { ResultsView, segmentsOf } from './results.js';
import { cssColor } from './theme.js';
import { decodeState, encodeState } from './url-state.js';
import { formatCount, formatSize, parseCapacity } from './format.js';
import { MODEL_GROUPS } from './layout.js';
import { formulaLookup } from './formulas.js';

const $ = (id) => document.getElementById(id);
// main.js runs async, possibly before the body is parsed: elements are looked up in start().
const findElements = () => ({
  fields: $('fields'), preset: $('preset'), presetSource: $('preset-source'), gpu: $('gpu'),
  capacityField: $('capacity-field'), capacityInput: $('capacity-input'), capacityError: $('capacity-error'),
  notice: $('link-notice'), generalIssues: $('general-issues'),
  summary: $('summary'), total: $('total'), capacity: $('capacity'), gpuName: $('gpu-name'),
  meter: $('meter'), meterFill: $('meter-fill'), verdict: $('verdict'), stale: $('stale'),
  copy: $('copy-link'), copyStatus: $('copy-status'),
  tableHead: $('breakdown-head'), tableBody: $('breakdown-body'), traceBody: $('trace-body'), stagesCard: $('stages-card'), params: $('params'),
  assumptions: $('assumptions'), report: $('report'), summaryText: $('summary-text'), profile: $('profile'),
  version: $('version'),
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

const state = { fields: {}, preset: null, gpu: null, capacityText: '', unit: 'GiB' };
let engine;
let form;
let gpuChart;
let stageChart;
let view;
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
  const names = form.updateVisibility({ ...resolved, ...fields });
  const config = {};
  for (const name of names) {
    if (fields[name] !== undefined) config[name] = fields[name];
  }
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
  view.renderSummary(result, capacity, gpuLabel(), unit, stale);
  if (!result) return;
  const capacityLabel = Number.isFinite(capacity) ? `${gpuLabel()} ${formatSize(capacity, unit)}` : '';
  const stages = result.stages ?? [];
  ui.stagesCard.hidden = stages.length < 2;
  if (gpuChart) gpuChart.update(segmentsOf(result, formulaLookup(result)), capacity, capacityLabel, unit);
  if (gpuChart && stages.length >= 2) {
    stageChart ??= new StageChart($('stage-chart')); // most runs have no pipeline: create on demand
    stageChart.update(stages, capacity, capacityLabel, unit, {
      state: cssColor('--c-weights-dense'), activation: cssColor('--c-activation'),
    }, (s) => `${s.num_layers} layers · ${formatCount(s.dense_params)} dense, ${formatCount(s.routed_params)} expert parameters`);
  }
  view.renderTable(result, unit);
  view.renderParams(result);
  view.renderNotes(result);
  view.renderTrace(result);
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
  const model = preset ? `${preset.name}${isModified() ? ' (modified)' : ''}` : 'Custom model';
  document.title = `${model} · ${gpuLabel()} · trainmem`;
}

// ---- share link ----

function linkFragment() {
  if (!lastOk) return null;
  return encodeState({
    fields: state.fields, names: lastOk.names, resolved: lastOk.result.config, preset: state.preset,
    gpu: state.gpu, capacity: state.gpu === CUSTOM_GPU ? state.capacityText.replace(/\s+/g, '') : '', unit: state.unit,
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
  ui.preset.replaceChildren(option('', 'Custom model'), ...engine.presets.map((p) => option(p.id, p.name)));
  ui.gpu.replaceChildren(...engine.gpus.map((g) => option(g.id, `${g.name} (${formatSize(g.memory_bytes, 'GB')})`)),
    option(CUSTOM_GPU, 'Custom capacity…'));
}

function syncControls() {
  form.setValues(state.fields);
  ui.preset.value = state.preset ?? '';
  const preset = presetById(state.preset);
  ui.presetSource.replaceChildren();
  // "source" is a URL, optionally followed by a note: "https://… (Brown et al. 2020, Table 2.1)".
  const source = /^(https:\/\/\S+)\s*(.*)$/.exec(preset?.source ?? '');
  if (source) {
    const a = Object.assign(document.createElement('a'), { href: source[1], textContent: 'published config', rel: 'noopener' });
    ui.presetSource.append(`${preset.family ?? 'Model'} · shapes from the `, a, source[2] ? ` ${source[2]}` : '');
  }
  ui.gpu.value = state.gpu;
  ui.capacityField.hidden = state.gpu !== CUSTOM_GPU;
  ui.capacityInput.value = state.capacityText;
  document.querySelector(`input[name="unit"][value="${state.unit}"]`).checked = true;
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
    applyPreset(ui.preset.value);
    syncControls();
    recompute();
  });
  ui.gpu.addEventListener('change', () => {
    state.gpu = ui.gpu.value;
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
