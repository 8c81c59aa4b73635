// Starts the page and wires the form to the engine: every input change recomputes synchronously
// (the estimate takes microseconds), so there is no Calculate button, and the result is rendered
// at once. The panels around it have their own modules: compare.js (pin to compare),
// share-panel.js (copy link, embed, export), plan-panel.js, import-panel.js; a link is read by
// link-config.js, as the embed view and the custom element read it.
import { createEngine } from './engine.js';
import { Form, midSentence } from './form.js';
import { GpuChart, StageChart, afterPaint, loadChartJs } from './charts.js';
import { DEFAULT_FIGURE, FIGURES, ResultsView, closeConfidence, confidenceOf, headlineOf, segmentsOf, stageNote, stageSeries } from './results.js';
import { verdictOf } from './verdict.js';
import { adoptPalette, cssColor } from './theme.js';
import { CAPACITY_RULE, formatBytes, formatInteger, formatSize } from './format.js';
import { MODEL_GROUPS } from './layout.js';
import { formulaLookup } from './formulas.js';
import { CUSTOM_GPU, START, coreConfig, editableState, estimateView, gpuCapacity, gpuLabel, presetById, restoreLink, splitViewOptions, withCapacity } from './link-config.js';
import { showLinkNotice, showUndoNotice } from './link-notice.js';
import { PresetPicker } from './preset-picker.js';
import { SetupPicker, editsSinceSetup, setupChanges, showSetupNotice } from './setup-picker.js';
import { IMPORT_ASKED, ImportPanel } from './import-panel.js';
import { PlanPanel } from './plan-panel.js';
import { ComparePanel } from './compare.js';
import { SharePanel } from './share-panel.js';
import { fileStem, methodText } from './share.js';
import { GpuFitTable } from './gpu-fit.js';
import { chooseMethod, clearedAfter, methodNotice, methodNoticeBox, methodSummary, restoredSettings, usualSettings } from './method-defaults.js';
import { plannerBase, recipeFramework, recipeNotice } from './recipe-words.js';

const $ = (id) => document.getElementById(id);
// main.js runs async, possibly before the body is parsed: elements are looked up in start().
const findElements = () => ({
  fields: $('fields'), preset: $('preset'), presetSearch: $('preset-search'), presetCount: $('preset-count'),
  presetSource: $('preset-source'), presetNotice: $('preset-notice'), setup: $('setup'), setupSource: $('setup-source'),
  setupNotice: $('setup-notice'), gpu: $('gpu'), planGpu: $('plan-gpu'),
  capacityField: $('capacity-field'), capacityInput: $('capacity-input'), capacityError: $('capacity-error'),
  notice: $('link-notice'), summary: $('summary'), runLine: $('run-line'), suggestions: $('suggestions'),
  stagesCard: $('stages-card'), stagesHint: $('stages-hint'), version: $('version'), results: $('results'),
});
let ui;

// What is on screen; restoreLink gives the first state. The pin lives in the compare panel.
// `setup` is the fine-tuning setup the state started from (setup-picker.js), kept until the model changes.
const state = { fields: {}, preset: null, setup: null, gpu: null, capacityText: '', unit: START.unit, figure: DEFAULT_FIGURE };
let engine;
let form;
let gpuChart;
let stageChart;
let view;
let gpuFit;
let picker;
let setupPicker;
let compare;
let share;
let plan;
let importedLabel = null; // the source of an imported model, for the title
// What the last import left for the user to give (core `unresolved`): field → the issue with the
// source's reason ("the recipe's tokenizer.max_seq_len is null ..."), shown on the field in place
// of the bare rule until the field is given or another state is loaded. One the core asks
// (IMPORT_ASKED: a sharded run's GPU count) holds back the figure until then.
let importQuestions = new Map();
const unansweredQuestions = () => [...importQuestions.values()]
  .filter((q) => q.rule === IMPORT_ASKED && state.fields[q.field] === undefined)
  .map(({ field, message }) => ({ field, message }));
let lastOk = null; // { result, names, config, model }: the last valid result stays on screen, with its model's name
let lastNames = []; // the fields in effect for the fields on screen (the last view's, valid or not)
let lastStale = false;

// ---- state helpers ----

const isModelField = (name) => MODEL_GROUPS.has(form.specs.get(name)?.group);
const capacityBytes = () => gpuCapacity(engine, state.gpu, state.capacityText, state.unit);
const currentGpuLabel = () => gpuLabel(engine, state.gpu);

function isModified() {
  const preset = presetById(engine, state.preset);
  if (!preset) return false;
  const names = new Set([...Object.keys(preset.config), ...Object.keys(state.fields)].filter(isModelField));
  return [...names].some((n) => JSON.stringify(state.fields[n]) !== JSON.stringify(preset.config[n]));
}

/** The model's name for the title and the compare panel. */
function modelLabel() {
  const preset = presetById(engine, state.preset);
  if (preset) return `${preset.name}${isModified() ? ' (modified)' : ''}`;
  return importedLabel ? `Imported ${importedLabel}` : 'Custom model';
}

/** The fields that apply to the model in view (the form shows only those), and the config sent to the core. */
function configFor(fields) {
  const applicable = coreConfig(engine, fields, capacityBytes());
  form.showApplicable(applicable.names);
  return applicable;
}

// ---- compute and render ----

function recompute() {
  const t0 = performance.now();
  // The path the embed view and the element take too (link-config.js), from the page's state.
  const view = estimateView(engine, state, { compare: gpuFitCapacities() });
  const { names, config } = view;
  // An import's open question holds the figure back; the other fields the run still needs are
  // marked beside it (the import's report counts them all).
  const asked = unansweredQuestions();
  const others = view.result.ok ? [] : view.result.issues.filter((issue) => !asked.some((q) => q.field === issue.field));
  const result = asked.length ? { ok: false, issues: [...asked, ...others] } : view.result;
  lastNames = names;
  if (result.ok) lastOk = { result, names, config, model: modelLabel() };
  lastStale = !result.ok;
  // The headline answers the keystroke; the rest of the page follows in the next frame, once
  // per frame however many inputs arrive (typing, a held arrow key).
  renderHeadline();
  pending = { names, result };
  // The keystroke's frame lays out and paints the headline's card and nothing else: a detail of
  // the result before still waiting for its turn is dropped (this result's follow), and the
  // form's marks wait for the task after that frame (settle).
  cancelDetails();
  if (settleFrame < 0) cancelSettle(); // queued after the frame before: this result's frame comes first
  if (!settleFrame) settleFrame = requestAnimationFrame(() => { settleFrame = -postTask(settle); });
  window.trainmemStats.headlineMs = performance.now() - t0;
}

let pending = null;
// settle's turn: > 0 the headline's frame (requestAnimationFrame's id), < 0 the task after it (postTask's id, negated).
let settleFrame = 0;

// Tasks of their own, in order, each after what the event loop has queued before it: a frame that
// is due is drawn between two of them, so no frame waits for the whole chain (a MessageChannel's
// message, not setTimeout: nested timeouts are held back 4 ms each).
const taskChannel = new MessageChannel();
const queuedTasks = new Map();
let lastTaskId = 0;
taskChannel.port1.onmessage = ({ data: id }) => {
  const task = queuedTasks.get(id);
  queuedTasks.delete(id);
  task?.();
};
/** Runs `task` in a task of its own after those queued; the id cancels it (cancelTask). */
function postTask(task) {
  lastTaskId += 1;
  queuedTasks.set(lastTaskId, task);
  taskChannel.port2.postMessage(lastTaskId);
  return lastTaskId;
}
const cancelTask = (id) => queuedTasks.delete(id);
function cancelSettle() {
  if (settleFrame > 0) cancelAnimationFrame(settleFrame);
  else cancelTask(-settleFrame);
  settleFrame = 0;
}

/**
 * What follows the headline, in the task after its frame: the form's marks, the link, the title.
 * The details follow a task at a time (scheduleDetails), so that no frame waits for all of them.
 */
function settle() {
  settleFrame = 0;
  if (!pending) return;
  const t0 = performance.now();
  const { names, result } = pending;
  pending = null;
  markForm(names, result);
  // The link keeps every input, a bad one too: a reload (or the copied link) restores the valid
  // ones and names the one that was dropped, instead of losing edits made since.
  share.scheduleLinkWrite();
  document.title = `${modelLabel()} · ${currentGpuLabel()} · trainmem`;
  window.trainmemStats.formMs = performance.now() - t0;
  scheduleDetails();
}

/**
 * The form's marks for a result (an estimate's, or a check's: the resolved config and the
 * issues, without suggestions): the fields that apply, the holds, the setup's edits, the
 * framework's words, the problems, the values unset fields resolved to, the open topics.
 */
function markForm(names, result) {
  form.showApplicable(names);
  form.showHolds(state.fields);
  // The setup the page started from, and what was edited since: its name alone is not the run.
  // A framework that followed the GPU count (torchtune's recipe, below) is that count's edit, as
  // the DP it sets aside is.
  setupPicker.showEdits(editsSinceSetup(setupPicker.byId(state.setup), state, FOLLOWS)
    .filter((name) => !(name === 'framework' && recipeFollowed))
    .map((name) => (name === 'gpu' ? 'the GPU' : form.nameText(name))));
  // The framework in use names the fields (framework-words.js): this result's, or the last valid one's.
  form.followFramework(result.ok ? result.config : lastOk?.result.config ?? null, state.fields, result.ok);
  // Every problem is listed at the top of the form (those no visible field can show too); each
  // also marks its field and the field just edited.
  if (result.ok) {
    form.showIssues([]);
    form.showResolved(state.fields, result.config);
    plan.follow(result.config.world_size);
  } else {
    form.showIssues(result.issues.map((issue) => (importQuestions.has(issue.field) && state.fields[issue.field] === undefined
      ? { ...issue, message: importQuestions.get(issue.field).message } : issue)), lastEdited);
  }
  // A topic opens where something is set or wrong, and where a suggestion chip would change a field.
  form.showTopics(state.fields, topicBaseline(), new Set(shownSuggestions(result).flatMap((s) => Object.keys(s.fields))));
}

// The details of a new result, one step a task after the form's marks: the breakdown table and
// the suggestions, the charts (in view beside the headline), the GPU table (an estimate per GPU),
// then the cards below them (the peak, the compare panel, the parameters, the notes). Each takes
// a few milliseconds; as tasks, with a frame that is due drawn between two of them, all are on
// screen 30-55 ms after the keystroke, 1-3 frames after its own. A step a frame took ~100 ms and 4
// frames, and with keystrokes 60 ms apart the last steps of 6 of 10 were dropped (traced at
// 390x844: tests/bench/page-trace.mjs --keys). A newer result starts them over; render() does them
// all at once.
let detailsStep = 0;
let detailsFrame = 0; // the next step's task (postTask's id)
let idleWaiters = [];
function scheduleDetails() {
  detailsStep = 0;
  if (!detailsFrame) detailsFrame = postTask(runDetailsStep);
}
function cancelDetails() {
  cancelTask(detailsFrame);
  detailsFrame = 0;
}
function runDetailsStep() {
  detailsFrame = 0;
  const t0 = performance.now();
  const steps = [renderTable, renderCharts, renderGpuFit, renderCards];
  steps[detailsStep]();
  window.trainmemStats.renderMs = performance.now() - t0;
  (window.trainmemStats.stepMs ??= {})[['table', 'charts', 'gpuFit', 'cards'][detailsStep]] = window.trainmemStats.renderMs;
  detailsStep += 1;
  if (detailsStep < steps.length) detailsFrame = postTask(runDetailsStep);
  else {
    markDetailsWritten();
    scheduleTrace();
    whenIdle();
  }
}

/** Resolves once the last edit's details are all on the page (read by the browser checks). */
window.trainmemSettled = () => new Promise((resolve) => {
  idleWaiters.push(resolve);
  whenIdle();
});
function whenIdle() {
  if (pending || settleFrame || detailsFrame) return;
  const waiters = idleWaiters;
  idleWaiters = [];
  for (const resolve of waiters) resolve();
}

// The trace (every intermediate quantity with its formula: the chart's tooltips and the table of
// intermediates) is hundreds of strings, many times the cost of the numbers: it follows once
// typing pauses, after the answer is on screen. It is for the result on screen: after a bad edit,
// the last valid one (stale), which may still lack it.
const TRACE_DELAY_MS = 120;
let traceTimer = 0;
function scheduleTrace() {
  clearTimeout(traceTimer);
  const shown = lastOk;
  if (!shown || shown.result.trace) return;
  traceTimer = setTimeout(() => {
    if (lastOk !== shown) return;  // a newer result is on screen
    shown.result.trace = engine.estimate(shown.config, { verbose: true }).trace ?? [];
    render(lastStale);
    document.body.dataset.trace = String(Number(document.body.dataset.trace ?? 0) + 1);
  }, TRACE_DELAY_MS);
}

function render(stale) {
  lastStale = stale;
  renderHeadline();
  cancelDetails();
  renderDetails();
  whenIdle();
}

/** The headline, the capacity and the verdict: what a keystroke updates at once. */
function renderHeadline() {
  const capacity = capacityBytes();
  const badCapacity = Boolean(state.gpu === CUSTOM_GPU && capacity === null && state.capacityText.trim());
  if (ui.capacityError.hidden === badCapacity) ui.capacityError.hidden = !badCapacity; // a change only
  if (badCapacity) ui.capacityError.textContent ||= `Enter ${CAPACITY_RULE}.`;
  view.renderSummary(lastOk?.result, capacity, currentGpuLabel(), state.unit, lastStale, state.figure);
  renderRunLine();
  markNoResult();
  markStale();
}

/**
 * A state with no result (a link or an import that does not resolve: the import's open question,
 * a bad field) shows no figure under the headline either, the state before's or any: issue 32,
 * "no screen ever shows a figure made from values they did not give" ("On every GPU" kept the
 * state before's 8.61 GiB on every row). The stylesheet lays out no result card while #results
 * carries data-no-result, the headline saying what is missing; each detail step also empties its
 * card (renderTable, renderCharts, renderGpuFit, renderCards), so that no export, screen reader or
 * search reads the state before's figures.
 * The cards come back with the next result, in its frame; their contents follow a step a frame.
 */
function markNoResult() {
  const none = !lastOk;
  if (ui.results.hasAttribute('data-no-result') !== none) ui.results.toggleAttribute('data-no-result', none);
}

/** The GPUs of a resolved config and their layout: "8 GPUs = TP 2 × PP 1 × CP 1 × DP 4". */
const layoutText = (c) => `${c.world_size} GPU${c.world_size === 1 ? '' : 's'} = TP ${c.tensor_model_parallel_size} × PP ${c.pipeline_model_parallel_size} × CP ${c.context_parallel_size} × DP ${c.data_parallel_size}`;

/**
 * What runs where, beside the headline: "Llama 3.1 8B · 8 GPUs = TP 2 × PP 1 × CP 1 × DP 4". The
 * result's own model: while the inputs have none (stale), the last valid result's, greyed with it
 * (a newcomer's QA at stop 46: a rejected preset's name stood beside the model before's figure).
 */
function renderRunLine() {
  const c = lastOk?.result.config;
  const text = c ? `${lastStale ? lastOk.model : modelLabel()} · ${layoutText(c)}` : '';
  if (ui.runLine.textContent !== text) ui.runLine.textContent = text;
}

// What takes the figures on screen away with it: while they are the last valid run's and the
// inputs are another's, a pin, an embed or an export would put the inputs' name on that run's
// figures (a second QA pass at stop 46: a PNG titled Qwen3-30B-A3B over Llama 3.1 8B's bar). The
// link keeps every input, a bad one too: Copy link stays.
const STALE_TAKERS = ['pin', 'embed-open', 'export-json', 'export-csv', 'export-png', 'export-args'];
const STALE_NOTE = 'Pin, Embed and the exports wait for a valid result: fix the marked fields.';
/** A stale result (the last valid one, the inputs another's): the stylesheet greys its cards; its takers wait. */
function markStale() {
  if (ui.results.hasAttribute('data-stale') === lastStale) return; // a change only
  ui.results.toggleAttribute('data-stale', lastStale);
  for (const id of STALE_TAKERS) {
    const button = $(id);
    if (button) button.disabled = lastStale;
  }
  const status = $('share-status');
  if (lastStale) status.textContent = STALE_NOTE;
  else if (status.textContent === STALE_NOTE) status.textContent = '';
}

/** The charts, the breakdown table and the panels below the headline. */
function renderDetails() {
  renderTable();
  renderCharts();
  renderGpuFit();
  renderCards();
  markDetailsWritten();
}

/**
 * Every card below the headline now holds this page's answer. On a link's page dist/'s
 * prerendered cards are the fresh page's (another model's figures), and the page goes live before
 * its first details are written: the stylesheet shows those cards from here on (data-details),
 * not from the live mark.
 */
function markDetailsWritten() {
  document.documentElement.setAttribute('data-details', '');
}

/** The breakdown table beside the headline and the suggestions under the verdict. */
function renderTable() {
  const result = lastOk?.result;
  if (!result) { // a state that shows no result: nothing of an earlier state stays in the breakdown
    view.clearTable();
    ui.suggestions.hidden = true;
    ui.suggestions.replaceChildren();
    return;
  }
  view.renderTable(result, state.unit, state.figure);
  renderSuggestions(result);
}

/** The GPU's and the stages' charts. */
function renderCharts() {
  const capacity = capacityBytes();
  const { unit, figure } = state;
  const result = lastOk?.result;
  if (!result) {
    gpuChart?.update([], capacity, '', unit);
    ui.stagesCard.hidden = true;
    return;
  }
  const capacityLabel = Number.isFinite(capacity) ? `${currentGpuLabel()} ${formatSize(capacity, unit)}` : '';
  const stages = result.stages ?? [];
  ui.stagesCard.hidden = stages.length < 2;
  if (gpuChart) gpuChart.update(segmentsOf(result, formulaLookup(result), figure), capacity, capacityLabel, unit);
  if (gpuChart && stages.length >= 2) {
    stageChart ??= new StageChart($('stage-chart')); // most runs have no pipeline: create on demand
    stageChart.update(stages, capacity, capacityLabel, unit, stageSeries(result, figure), stageNote);
  }
  ui.stagesHint.textContent = result.profile === 'trainmem'
    ? 'Each stage\'s peak: its own layers, embedding or output layer, and the microbatches its schedule keeps in flight.'
    : 'The reference estimators compute activation memory for the first stage only; other stages show weights and optimizer state.';
}

/** The cards below the breakdown: the GPU table, the peak, the compare panel, the parameters, the notes, the trace. */
function renderCards() {
  const result = lastOk?.result;
  if (!result) { // nothing of an earlier state's peak, parameters, notes, trace or comparison
    view.clearCards();
    compare.clear();
    return;
  }
  const capacity = capacityBytes();
  const { unit, figure } = state;
  const capacityLabel = Number.isFinite(capacity) ? `${currentGpuLabel()} ${formatSize(capacity, unit)}` : '';
  view.renderPeak(result, unit, capacity);
  compare.render(result, { label: modelLabel(), unit, figure, capacity, capacityLabel });
  view.renderParams(result);
  view.renderNotes(result);
  view.renderTrace(result);
}

/** The core's suggestions the chips show: none that would change a field the user holds. */
function shownSuggestions(result) {
  const held = form.pressedHolds();
  return (result.ok ? result.suggestions ?? [] : []).filter((s) => !Object.keys(s.fields).some((f) => held.has(f)));
}

/**
 * What to change when it does not fit: the core's suggestions (each verified by a full estimate),
 * as one-click chips under the verdict; a change touching a field the user holds is left out.
 */
function renderSuggestions(result) {
  const box = ui.suggestions;
  const list = shownSuggestions(result);
  box.hidden = list.length === 0;
  box.replaceChildren(...(list.length ? [Object.assign(document.createElement('span'), { className: 'suggestions-label', textContent: 'Fits with:' })] : []),
    ...list.map((s) => {
      const bytes = s.device_bytes ?? s.total_bytes;
      const chip = Object.assign(document.createElement('button'), { type: 'button', className: 'chip', textContent: `${s.what} · ${formatBytes(bytes, state.unit)}` });
      chip.title = Object.entries(s.fields).map(([k, v]) => `${k} = ${v === null ? 'unset' : v}`).join(', ');
      chip.addEventListener('click', () => loadLayout(s.fields)); // fields over the page's, as a planner row's
      return chip;
    }));
}

/** The GPU table's rows: each GPU of the core's table, and a custom capacity when one is set. */
function gpuFitRows() {
  const rows = engine.gpus.map((g) => ({ id: g.id, name: g.name, capacity: g.memory_bytes, chosen: state.gpu === g.id }));
  const custom = capacityBytes();
  if (state.gpu === CUSTOM_GPU && Number.isFinite(custom)) rows.push({ id: CUSTOM_GPU, name: 'Custom capacity', capacity: custom, chosen: true });
  return rows;
}
const gpuFitCapacities = () => gpuFitRows().map((row) => row.capacity);

/**
 * The figure on every GPU of the table (and a custom capacity), from the one result on screen: the
 * core compared it with each capacity in the same pass (result.capacity_fits, core
 * fits_at_capacities; a paged optimizer's share on the GPU is the only figure a capacity changes).
 */
function renderGpuFit() {
  if (!lastOk) { // a state with no result has no figure on any GPU
    gpuFit.clear();
    return;
  }
  const { result } = lastOk;
  const rows = gpuFitRows();
  const headline = headlineOf(result, state.figure);
  rows.forEach((row) => {
    const fit = result.capacity_fits?.find((f) => f.capacity_bytes === row.capacity);
    const at = fit ? { ok: true, verdicts: fit.verdicts } : null;
    row.verdict = verdictOf(at, headline, state.unit);
    row.bytes = at && headline ? Math.round(fit.verdicts[headline.key].figure_bytes) : null;
  });
  const figureLabel = result.profile === 'trainmem' ? FIGURES[headlineOf(result, state.figure).key].label : 'total';
  gpuFit.render(rows, state.unit, figureLabel);
}


// ---- the exports: the run in words, the PNG ----

/**
 * The run on screen in words, as the CSV's header block and the PNG's lines give it: the model,
 * the method, the layout, the GPU, the figure compared, the verdict, the confidence and the link
 * (the address bar's: the share panel writes it first).
 */
function about() {
  const result = lastOk?.result;
  const capacity = capacityBytes();
  const headline = headlineOf(result, state.figure);
  const conf = confidenceOf(result);
  return {
    model: modelLabel(), method: methodText(result), layout: result ? layoutText(result.config) : '',
    gpu: currentGpuLabel(), capacity: Number.isFinite(capacity) ? capacity : null,
    figure: headline ? { ...headline, label: result.profile === 'trainmem' ? FIGURES[headline.key].long : 'total' } : null,
    verdict: verdictOf(result, headline, state.unit)?.text ?? '', confidence: conf?.text ?? '', confidenceGroup: conf?.title ?? '',
    link: location.href, version: `trainmem ${engine.version}, ${result?.profile} profile`,
  };
}

/** What the PNG shows (export-png.js): the view on screen, with its title, legend and verdict. */
function picture() {
  const result = lastOk?.result;
  if (!result) return null;
  const { unit, figure } = state;
  const c = result.config;
  const capacity = capacityBytes();
  const headline = headlineOf(result, figure);
  const run = about();
  const sequence = `sequence ${formatInteger(c.seq_length)} tokens · micro batch ${c.micro_batch_size}`;
  const stage = result.stages?.length > 1 ? ` (pipeline stage ${result.most_loaded_stage})` : '';
  const color = cssColor;
  return {
    title: `${run.model} on ${run.gpu}`,
    method: run.method,
    subtitle: `${run.layout} · ${sequence}`,
    figureName: `Most-loaded GPU${stage} · ${run.figure.label}`,
    headline: `${formatBytes(headline.bytes, unit)}${Number.isFinite(capacity) ? ` of ${formatSize(capacity, unit)}` : ''}`,
    confidence: run.confidence,
    verdict: verdictOf(result, headline, unit),
    segments: segmentsOf(result, formulaLookup(result), figure).filter((s) => s.bytes > 0)
      .map((s) => ({ label: s.label, bytes: s.bytes, color: s.color, text: formatBytes(s.bytes, unit) })),
    total: headline.bytes, capacity: Number.isFinite(capacity) ? capacity : null,
    capacityText: Number.isFinite(capacity) ? `${run.gpu} ${formatSize(capacity, unit)}` : '',
    link: run.link,
    footer: `${run.version} · ${run.confidenceGroup}`,
    colors: {
      background: color('--surface'), text: color('--text'), muted: color('--muted'), grid: color('--grid'),
      ok: color('--ok'), bad: color('--bad'), warn: color('--warn'), capacity: color('--capacity'), accent: color('--accent'),
    },
  };
}

// ---- share link ----

/** What the share link holds (share-panel.js writes it); null before the first valid result. */
function linkState() {
  if (!lastOk) return null;
  // The fields that apply to the fields on screen (after a bad edit, fields set since the last
  // valid result may not be among its names); one the form hides is no part of the figure, and a
  // link carrying it would name it as not used.
  const names = lastNames;
  return {
    fields: state.fields, names, resolved: lastOk.result.config, preset: presetById(engine, state.preset), setup: state.setup,
    gpu: state.gpu, capacity: state.gpu === CUSTOM_GPU ? state.capacityText.replace(/\s+/g, '') : '', unit: state.unit,
    // The figure is written only where it means something (the trainmem profile) and differs from the default.
    figure: lastOk.result.profile === 'trainmem' && state.figure !== DEFAULT_FIGURE ? state.figure : undefined,
  };
}

/**
 * Puts a link's state (link-config.js) on the page and names in a notice what it did not use. The
 * embed view's options (theme) are no state here either: "#theme=dark" is the fresh page.
 */
function applyLink(fragment) {
  const linkState = splitViewOptions(fragment).state;
  // The link's first answer restored this very state a moment ago (showLinkAnswer): not twice.
  const link = earlyLink?.state === linkState ? earlyLink.link : restoreLink(linkState, engine);
  earlyLink = null;
  Object.assign(state, editableState(link));
  startFields = linkState.replace(/^#/, '') ? null : { ...link.fields }; // the fresh page's start (START) is no setting of the user's
  form?.resetTopics();
  form?.showFrameworkKeys(null);
  lastOk = null; // a new state: the result of the one before is not kept as this one's
  followed.clear();
  compare.pin = link.pin;
  forgetTheStateBefore();
  importedLabel = null;
  showLinkNotice(ui.notice, link.rejected, link.notes);
  // Under a phone's headline, a pointer to the notice when the figure is not all the link's.
  const notUsed = link.rejected.length;
  $('link-notice-jump').firstElementChild.textContent = notUsed
    ? `${notUsed === 1 ? 'A value' : `${notUsed} values`} of this link ${notUsed === 1 ? 'was' : 'were'} not used: why ↓`
    : link.warnings?.length ? 'This link was edited or cut short: see the notice ↓' : '';
}

// ---- controls ----

function fillSelects() {
  const option = (value, text) => Object.assign(document.createElement('option'), { value, textContent: text });
  picker = new PresetPicker({ search: ui.presetSearch, select: ui.preset, count: ui.presetCount, source: ui.presetSource }, engine.presets);
  setupPicker = new SetupPicker({ select: ui.setup, source: ui.setupSource }, engine.setups, applySetup);
  const gpuOptions = () => [...engine.gpus.map((g) => option(g.id, `${g.name} (${formatSize(g.memory_bytes, 'GB')})`)),
    option(CUSTOM_GPU, 'Custom capacity…')];
  ui.gpu.replaceChildren(...gpuOptions());
  ui.planGpu.replaceChildren(...gpuOptions());
}

function syncControls() {
  form.setValues(state.fields);
  picker.set(state.preset ?? '');
  setupPicker.set(state.setup);
  ui.gpu.value = state.gpu;
  ui.planGpu.value = state.gpu;
  ui.capacityField.hidden = state.gpu !== CUSTOM_GPU;
  ui.capacityInput.value = state.capacityText;
  document.querySelector(`input[name="unit"][value="${state.unit}"]`).checked = true;
  document.querySelector(`input[name="figure"][value="${state.figure}"]`).checked = true;
}

/** Sets `state[key]` whenever one of `inputs` changes, then recomputes. */
function bindSetting(inputs, key, after = () => {}) {
  for (const input of inputs) {
    input.addEventListener(input.type === 'text' ? 'input' : 'change', () => {
      state[key] = input.value;
      after();
      recompute();
      if (input.type !== 'text') share.commit();
    });
    if (input.type === 'text') input.addEventListener('change', () => share.commit());
  }
}

function bindControls() {
  ui.preset.addEventListener('change', () => {
    const before = { fields: { ...state.fields }, preset: state.preset, label: importedLabel, setup: state.setup };
    importedLabel = null;
    const preset = presetById(engine, ui.preset.value);
    state.preset = preset?.id ?? null;
    state.setup = null; // another model: no longer the setup's run
    ui.setupNotice.hidden = true;
    form.showFrameworkKeys(null); // the imported file no longer describes the run
    let kept = [];
    if (preset) ({ fields: state.fields, kept } = withPresetModel(state.fields, preset));
    syncControls();
    recompute();
    share.commit();
    showPresetNotice(preset, kept, before);
  });
  // The planner's GPU type and the Hardware section's GPU are one setting.
  ui.planGpu.addEventListener('change', () => {
    state.gpu = ui.planGpu.value;
    syncControls();
    recompute();
    if (state.gpu === CUSTOM_GPU) ui.capacityInput.focus();
  });
  bindSetting([ui.gpu], 'gpu', () => {
    ui.planGpu.value = state.gpu;
    ui.capacityField.hidden = state.gpu !== CUSTOM_GPU;
  });
  bindSetting([ui.capacityInput], 'capacityText');
  bindSetting(document.querySelectorAll('input[name="unit"]'), 'unit');
  bindSetting(document.querySelectorAll('input[name="figure"]'), 'figure');
  // In-page links (the skip link, "How this is computed") move focus and scroll without touching
  // the fragment: it holds the share link's state, which "#results" would replace.
  document.addEventListener('click', (event) => {
    const link = event.target.closest?.('a[href^="#"]');
    const target = link && document.getElementById(link.getAttribute('href').slice(1));
    if (!target) return;
    event.preventDefault();
    target.scrollIntoView({ block: 'start' });
    if (target.tabIndex < 0 && !target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
    target.focus({ preventScroll: true });
  });
  window.addEventListener('hashchange', () => {
    if (share.wrote(location.hash)) return;
    if (document.getElementById(location.hash.slice(1))) return; // an in-page anchor, not a state
    applyLink(location.hash);
    syncControls();
    recompute();
    share.adopt(location.hash); // Back and Forward land here: the entry holds this state already
  });
}

/**
 * A preset's model over the page's fields: its model fields replace the page's, its other fields
 * (a typical sequence length) fill only what the page leaves unset; the training and parallel
 * settings the user has stay. `kept` names those the preset would have set otherwise.
 */
function withPresetModel(fields, preset) {
  const next = Object.fromEntries(Object.entries(fields).filter(([n]) => !isModelField(n)));
  const kept = [];
  for (const [name, value] of Object.entries(preset.config)) {
    if (isModelField(name) || next[name] === undefined) next[name] = value;
    else if (JSON.stringify(next[name]) !== JSON.stringify(value)) kept.push({ name, value: next[name], preset: value });
  }
  return { fields: next, kept };
}

/** Says what a preset change kept of the page's settings, with an undo back to the model before. */
function showPresetNotice(preset, kept, before) {
  if (!preset) { ui.presetNotice.hidden = true; return; }
  const label = (name) => midSentence(form.specs.get(name)?.label || name);
  const text = kept.length
    ? `${preset.name}: the model changed; your ${kept.map((k) => `${label(k.name)} ${k.value}`).join(', ')} stayed (the preset's: ${kept.map((k) => k.preset).join(', ')}).`
    : `${preset.name}: the model changed; training and parallel settings stayed.`;
  showUndoNotice(ui.presetNotice, text, () => loadFields(before.fields, before.preset, before.label, before.setup));
}

/**
 * Starts from a fine-tuning setup (core/data/setups.json): its fields replace the page's (a setup
 * is a whole run: what it does not name is left unset), its model preset and GPU are chosen; the
 * notice says what changed, with an Undo back to the page before. null (the empty choice) forgets
 * the setup and keeps the fields.
 */
function applySetup(setup) {
  if (!setup) {
    state.setup = null;
    ui.setupNotice.hidden = true;
    share.commit();
    return;
  }
  const before = {
    fields: { ...state.fields }, preset: state.preset, gpu: state.gpu, capacityText: state.capacityText, label: importedLabel,
    setup: state.setup, resolved: lastOk?.result.config ?? {},
  };
  const runBefore = compare.currentRun(); // the run on screen, to compare with from the notice
  if (engine.gpus.some((g) => g.id === setup.gpu)) state.gpu = setup.gpu;
  state.capacityText = '';
  lastEdited = null;
  ui.presetNotice.hidden = true;
  loadFields({ ...setup.config }, presetById(engine, setup.preset)?.id ?? null, null, setup.id);
  // The setup's framework's words, its file's own keys first (the core's import of it, setup.keys).
  form.showFrameworkKeys(setup.import ? { kind: setup.import.kind, keys: setup.keys } : null);
  const changes = setupChanges(before, setup, form.specs, lastOk?.result.config ?? {});
  const names = { preset: presetById(engine, setup.preset)?.name ?? setup.preset, gpu: `${setup.gpus} × ${currentGpuLabel()}` };
  showSetupNotice(ui.setupNotice, setup, changes, names, () => {
    state.gpu = before.gpu;
    state.capacityText = before.capacityText;
    loadFields(before.fields, before.preset, before.label, before.setup);
  }, (name) => form.nameNodes(name), runBefore ? () => compare.pinRun(runBefore) : null, (name, v, text) => form.valueText(name, v, text));
}

/** The Fine-tuning group points to the setups (the select sits under the model preset). */
function pointToSetups() {
  const legend = document.querySelector('#section-finetuning > summary');
  if (!legend || !engine.setups.length || legend.parentElement.querySelector('.setup-pointer')) return;
  const link = Object.assign(document.createElement('a'), { href: '#setup', textContent: 'Start from a fine-tuning setup' });
  const p = Object.assign(document.createElement('p'), { className: 'hint setup-pointer' });
  p.append(link, ': a published torchtune, axolotl or PEFT + DeepSpeed run with its model and GPU.');
  legend.after(p);
}

/**
 * What the "More options" topics do not count as set (form.showTopics): the preset's model (chosen
 * above the form) and, on the fresh page, the page's own start (link-config.js START).
 */
let startFields = null;
function topicBaseline() {
  return { ...startFields, ...presetById(engine, state.preset)?.config };
}

/**
 * A whole new state (a link, a setup, an import, a pin loaded): the notices about the state before
 * (a setup's, a preset's, a method's, each with an Undo back to a state no longer on screen) and
 * the planner's layouts for it go.
 */
function forgetTheStateBefore() {
  ui.setupNotice.hidden = true;
  ui.presetNotice.hidden = true;
  const methodBox = document.getElementById('method-notice');
  if (methodBox) methodBox.hidden = true;
  const recipeBox = document.getElementById('recipe-notice');
  if (recipeBox) recipeBox.hidden = true;
  recipeFollowed = null;
  methodCleared = {};
  plan.forget();
}

/** Replaces the page's fields (an imported model, a pinned configuration) and shows the result. */
function loadFields(fields, preset, label, setup = null, questions = []) {
  importQuestions = new Map(questions.map((q) => [q.field, q]));
  startFields = null;
  form.resetTopics();
  form.showFrameworkKeys(null); // the words of an import before are not this state's
  state.fields = fields;
  state.preset = preset;
  state.setup = setup;
  importedLabel = label;
  lastOk = null; // a whole new state: which fields apply follows from it, not from the last result
  followed.clear();
  ui.notice.hidden = true; // what a link before did not use is no word on this state
  forgetTheStateBefore();
  syncControls();
  // What the state before resolved its unset fields to is no hint for this one ("auto: 2048"
  // under an import's open question was the screen before's sequence): the new result writes them.
  form.showResolved(state.fields, {});
  recompute();
  share.commit();
}

/** A layout from the planner: its fields over the page's (null: the field is left unset). */
function loadLayout(fields) {
  const frameworkBefore = state.fields.framework ?? lastOk?.result.config.framework;
  for (const [name, value] of Object.entries(fields)) {
    if (!form.specs.has(name)) continue;
    if (value === null) delete state.fields[name];
    else state.fields[name] = value;
  }
  syncControls();
  recompute();
  // A torchtune layout on more than one GPU comes with the distributed recipe's framework
  // (plannerBase): it followed the GPU count, as a count typed would have.
  const after = pending?.result;
  if (fields.framework && fields.framework !== frameworkBefore && after?.ok && after.config.model_implementation === 'torchtune') {
    recipeFollowed = { from: frameworkBefore };
    showRecipeNotice(after.config);
  } else followRecipe();
  share.commit();
  ui.summary.scrollIntoView?.({ block: 'nearest' });
}

let lastEdited = null; // the field the user's hand is on: its problems are shown there

// Pairs that say one thing: the GPU count and DP (world = TP·PP·CP·DP), the global batch and
// the accumulation (global = micro × DP × microbatches; a setup or an import gives the
// accumulation, core/src/import/). The one typed last is kept, the other follows from it in the
// core. Clearing the one typed gives the other back its value (a bad GPU count typed and cleared
// again must not cost the user's DP).
const FOLLOWS = {
  world_size: 'data_parallel_size', data_parallel_size: 'world_size',
  global_batch_size: 'num_microbatches', num_microbatches: 'global_batch_size',
};
const followed = new Map(); // typed field -> {name, value}: the field set aside when it was typed

// torchtune's framework follows its GPU count (recipe-words.js recipeFramework): more than one
// GPU is its distributed recipe (fsdp2), one its single-device recipe (ddp). The fields that make
// the GPU count, and the model code that makes the run torchtune's. The framework chosen by hand
// is the user's: it is not followed, and a wrong one is the core's named error.
const GPU_COUNT_FIELDS = new Set(['world_size', 'data_parallel_size', 'tensor_model_parallel_size',
  'pipeline_model_parallel_size', 'context_parallel_size', 'model_implementation']);
let recipeFollowed = null; // {from}: the framework before it followed the GPU count
// The fields a method change cleared, with their values before (method-defaults.js restoredSettings).
let methodCleared = {};

/** After a GPU count changed: the framework follows where torchtune's recipe does, with a one-line notice. */
function followRecipe() {
  const result = pending?.result ?? lastOk?.result;
  if (!result) return;
  const to = recipeFramework(result, recipeFollowed);
  if (!to) return;
  const from = state.fields.framework ?? lastOk?.result.config.framework ?? 'ddp';
  recipeFollowed = to.framework === 'fsdp2' ? { from } : null;
  state.fields.framework = to.framework;
  form.setValues(state.fields);
  recompute();
  if (pending?.result.ok) showRecipeNotice(pending.result.config);
}

function showRecipeNotice(config) {
  const box = recipeNoticeBox();
  if (!box) return;
  box.replaceChildren(Object.assign(document.createElement('p'), { className: 'notice-line', textContent: recipeNotice(config) }));
  box.hidden = false;
}

/**
 * The notice right under the framework's select (made once; the form builds the field): a row of
 * the field grid of its own, so that on a phone too it is in view beside the GPU count just typed.
 */
function recipeNoticeBox() {
  let box = $('recipe-notice');
  if (box) return box;
  const field = $('f-framework')?.closest('.field');
  if (!field) return null;
  box = Object.assign(document.createElement('div'), { id: 'recipe-notice', className: 'notice recipe-notice', hidden: true });
  box.setAttribute('role', 'status');
  field.after(box);
  return box;
}

function onFieldChange(name, value) {
  lastEdited = name;
  if (name === 'peft') { onMethodChange(value); return; }
  if (value === undefined) delete state.fields[name];
  else state.fields[name] = value;
  const other = FOLLOWS[name];
  if (other && value !== undefined && state.fields[other] !== undefined) {
    followed.set(name, { name: other, value: state.fields[other] });
    delete state.fields[other];
    form.setValues(state.fields); // the other field shows what it resolves to
  } else if (other && value === undefined && followed.has(name) && state.fields[other] === undefined) {
    state.fields[other] = followed.get(name).value;
    followed.delete(name);
    form.setValues(state.fields);
  }
  if (name === 'framework') recipeFollowed = null; // the user's own choice from now on
  delete methodCleared[name]; // the user's value, or the user's unset, from now on
  recompute();
  if (GPU_COUNT_FIELDS.has(name)) followRecipe();
}

/** An edit finished (the field left, Enter, a choice made): a history entry. */
function onFieldCommit() {
  share.commit();
}

/**
 * A configuration's result on the page's GPU for the compare view (the pinned run, and the pinned
 * run with one setting changed: "what it does alone"), remembered by config and capacity, so that
 * a keystroke on the configuration on screen re-estimates only what it changed.
 */
const compareResults = new Map();
function pinnedEstimate(config) {
  const key = `${JSON.stringify(config)}@${capacityBytes()}`;
  if (!compareResults.has(key)) {
    if (compareResults.size >= 256) compareResults.delete(compareResults.keys().next().value);
    compareResults.set(key, engine.estimate(withCapacity(config, capacityBytes())));
  }
  return compareResults.get(key);
}

/**
 * A method chosen (peft): where the run's settings conflict with it, the core's objections are
 * answered (method-defaults.js) and the notice says what changed, in one line, with an Undo.
 */
function onMethodChange(peft) {
  const before = { ...state.fields };
  const resolvedBefore = lastOk?.result.config ?? {};
  // On the fresh page, the method's usual framework and recompute where the example's still
  // stand (the core's method_settings).
  const usual = usualSettings(startFields, state.fields, form.touched, engine.methodSettings, peft);
  const base = { ...state.fields };
  for (const c of usual) base[c.name] = c.to;
  const estimateFields = (f) => engine.estimate(coreConfig(engine, f, capacityBytes()).config);
  // What an earlier method change cleared, back where this method takes it (QLoRA's dtype).
  const restored = restoredSettings(methodCleared, base, peft, estimateFields);
  for (const c of restored) base[c.name] = c.to;
  const { fields, changes: answered, result } = chooseMethod(base, peft, estimateFields);
  const changes = [...usual, ...restored, ...answered];
  methodCleared = clearedAfter(methodCleared, peft, changes);
  state.fields = fields;
  const box = methodNoticeBox();
  if (changes.length && box) {
    form.setValues(state.fields);
    // The notice names each field in the words of the framework the run is in now (the hints'
    // words, form.nameText): QLoRA's ddp is no Megatron run any more.
    form.followFramework(result.ok ? result.config : lastOk?.result.config ?? null, state.fields, result.ok);
    showUndoNotice(box, methodSummary(peft, changes), () => {
      state.fields = before;
      form.setValues(state.fields);
      recompute();
      share.commit();
    }, [], methodNotice(peft, changes, resolvedBefore, result.config ?? {}, (name) => form.nameText(name), (name, v, text) => form.valueText(name, v, text)));
  } else if (box) box.hidden = true;
  recompute();
}

function bindPanels() {
  compare = new ComparePanel({
    current: () => {
      if (!lastOk) return null;
      const { gpu_memory_bytes: _capacity, ...config } = lastOk.config; // the page's GPU applies
      return { config, preset: state.preset, label: modelLabel() };
    },
    estimate: pinnedEstimate,
    changed: () => {
      render(lastStale);
      share.scheduleLinkWrite();
    },
    load: (pin) => loadFields({ ...pin.config }, pin.preset, pin.preset ? null : pin.label.replace(/^Imported /, '')),
    inEffect: (config) => engine.fieldsInEffect(withCapacity(config, capacityBytes())),
    order: [...form.fields.keys()],
    nameNodes: (name) => form.nameNodes(name), // the framework's words, as the hints and problems name the field
    valueText: (name, v, text) => form.valueText(name, v, text), // its spelling of a value first, where it has one
  });
  share = new SharePanel({
    engine, linkState, pin: () => compare.pin,
    result: () => lastOk?.result ?? null,
    inputs: () => configFor(state.fields).config,
    fileStem: () => fileStem(presetById(engine, state.preset)?.name ?? importedLabel ?? 'custom', lastOk?.result.config),
    picture, about,
  });
  plan = new PlanPanel({
    solve: $('plan-solve'), gpus: $('plan-gpus'), headroom: $('plan-headroom'), run: $('plan-run'), cancel: $('plan-cancel'),
    progress: $('plan-progress'), status: $('plan-status'), table: $('plan-table'), head: $('plan-head'), body: $('plan-body'),
  }, ({ gpus, solve }) => {
    // torchtune's layouts on more than one GPU are its distributed recipe's (fsdp2), never pipelined.
    const base = plannerBase(configFor(state.fields).config, lastOk?.result.config ?? null, gpus, solve);
    return {
      config: base.config, layoutFields: base.layoutFields, capacity: capacityBytes(), gpuLabel: currentGpuLabel(), unit: state.unit,
      keep: [...new Set([...form.held(state.fields), ...base.keep])],
    };
  },
  loadLayout, () => engine);
  const imports = new ImportPanel({
    panel: $('import-panel'), text: $('import-text'), file: $('import-file'), run: $('import-run'),
    kind: $('import-kind'), report: $('import-report'),
  }, engine, () => configFor(state.fields).config, (config, label, unresolved, words = null) => {
    const { gpu_memory_bytes: _capacity, ...fields } = config; // the Hardware section owns capacity
    const runBefore = compare.currentRun(); // the run on screen, to compare with from the report
    loadFields(fields, null, label, null, unresolved);
    if (runBefore) imports.offerCompare(() => compare.pinRun(runBefore));
    form.showFrameworkKeys(words); // the file's keys first, the field names second
    // The first field the import left open takes the focus: the figure waits for it.
    if (unresolved.length) form.focusField(unresolved[0].field, { preventScroll: false });
  });
}

/**
 * Marks the summary "stuck" while it sticks to the top of a phone's screen (a sentinel just above
 * it has scrolled away): the stylesheet keeps it short then, the headline, the verdict and the
 * switches on three lines. Its height while stuck is the page's --summary-height (0 where it does
 * not stick: a wide window), from which the stylesheet sets the page's scroll-padding-top, so a
 * section a link or a button jumps to starts below the headline and not under it.
 */
function watchSticky(summary) {
  // dist/'s prerendered page keeps the sentinel it was snapshot with: reuse it.
  let sentinel = summary.previousElementSibling;
  if (!sentinel?.classList.contains('sticky-sentinel')) {
    sentinel = Object.assign(document.createElement('div'), { className: 'sticky-sentinel' });
    sentinel.setAttribute('aria-hidden', 'true');
    summary.before(sentinel);
  }
  // The stuck height, measured in place: while the summary is not stuck the class goes on and off
  // again within this task, so nothing is painted in between.
  const keepHeight = () => {
    let height = 0;
    if (getComputedStyle(summary).position === 'sticky') {
      const stuck = summary.classList.contains('stuck');
      if (!stuck) summary.classList.add('stuck');
      height = Math.ceil(summary.getBoundingClientRect().height);
      if (!stuck) summary.classList.remove('stuck');
    }
    document.documentElement.style.setProperty('--summary-height', `${height}px`);
  };
  const confidence = closeStuckConfidence(summary);
  new IntersectionObserver(([entry]) => {
    summary.classList.toggle('stuck', !entry.isIntersecting);
    if (!entry.isIntersecting) confidence.stuck();
    keepHeight();
  }).observe(sentinel);
  // A resize while not stuck (a keystroke can change the summary's lines) is measured in the task
  // after the frame: the class on and off restyles the whole summary, which in the keystroke's
  // frame took ~3 of its ~10 ms at 390x844 (traced). Stuck, its own height is the one: no toggle.
  let pending = 0;
  new ResizeObserver(() => {
    if (summary.classList.contains('stuck')) keepHeight();
    else pending ||= setTimeout(() => { pending = 0; keepHeight(); });
  }).observe(summary);
}

// The scroll, in CSS px, after which a confidence line opened in the stuck phone summary closes:
// one 44 px tap target's height, so that a tap's own jitter does not close it and a scroll does.
const CONFIDENCE_SCROLL_CLOSE_PX = 44;

/**
 * On a phone the stuck summary is the headline in three lines (the stylesheet's max-width 900px):
 * the confidence's line (the validation group and its points), opened there, holds a quarter of
 * the screen above the form. It closes when the summary sticks, and, opened while stuck, once the
 * page scrolls on; the button opens it again by click, tap or keyboard, and where the summary does
 * not stick it stays open as long as the user wants.
 * @returns {{stuck: () => void}} what the summary calls when it sticks
 */
function closeStuckConfidence(summary) {
  const button = summary.querySelector('#confidence');
  const detail = summary.querySelector('#confidence-detail');
  if (!button || !detail) return { stuck() {} };
  const phone = window.matchMedia('(max-width: 900px)');
  const stuckOnPhone = () => phone.matches && summary.classList.contains('stuck');
  let openedAt = null; // window.scrollY when the page first scrolled with the line open in the stuck summary
  window.addEventListener('scroll', () => {
    if (detail.hidden || !stuckOnPhone()) {
      openedAt = null;
      return;
    }
    if (openedAt === null) openedAt = window.scrollY;
    else if (Math.abs(window.scrollY - openedAt) > CONFIDENCE_SCROLL_CLOSE_PX) closeConfidence(button, detail);
  }, { passive: true });
  button.addEventListener('click', () => { openedAt = null; }); // opened again: the scroll counts from the next
  return {
    stuck() {
      if (phone.matches && !detail.hidden) closeConfidence(button, detail);
      openedAt = null;
    },
  };
}

// ---- start ----

/**
 * Resolves once the whole page is in the document: main.js is async and may run before the body
 * is parsed, and dist/'s deferred parts are put in place by boot.js after the first frame; on a
 * link's page, when this asks for them (once the link's answer is painted, or the page failed).
 */
async function pageReady() {
  await parsed();
  if (document.documentElement.hasAttribute('data-unfolded')) return;
  const unfolded = new Promise((resolve) => document.addEventListener('trainmem:unfolded', resolve, { once: true }));
  if (document.documentElement.hasAttribute('data-link')) window.trainmemUnfoldAll?.();
  await unfolded;
}

/** Resolves once the document is parsed (main.js is async: it may run before). */
const parsed = () => (document.readyState === 'loading'
  ? new Promise((resolve) => document.addEventListener('DOMContentLoaded', resolve, { once: true })) : Promise.resolve());

let earlyLink = null; // {state, link}: the link showLinkAnswer restored, for applyLink to take over

/**
 * A link's answer before the rest of the page (issue 31): the headline, the verdict and the
 * breakdown of the link's own state, through the path the embed takes (link-config.js), as soon as
 * the module is up; the stylesheet shows only their cards until the page is live (data-live) and
 * nothing of <main> before (data-answer). The headline's card is written here and is the first
 * frame alone (49 elements laid out, not 146: the link's first frame 20-40 ms sooner in three
 * page-bench runs); the breakdown is written by the function returned, for the task after that
 * frame (data-answer-table). The form, the planner and the charts follow the breakdown's frame.
 */
function showLinkAnswer() {
  view = new ResultsView();
  const linkState = splitViewOptions(location.hash).state;
  const link = restoreLink(linkState, engine);
  earlyLink = { state: linkState, link };
  const { result, capacity } = estimateView(engine, link);
  view.renderSummary(result.ok ? result : null, capacity, link.gpuLabel, link.unit, !result.ok, link.figure);
  $('results').toggleAttribute('data-no-result', !result.ok); // no card of dist/'s prerendered fresh page either (markNoResult)
  $('run-line').textContent = result.ok ? `${link.name} · ${layoutText(result.config)}` : '';
  document.querySelector('main').removeAttribute('data-prerendered'); // dist/: the answer is the link's now
  document.documentElement.setAttribute('data-answer', '');
  performance.mark('trainmem:link-answer');
  return () => { // the breakdown, in the task after the headline's frame
    window.trainmemUnfold?.(1); // dist/: the breakdown's card waits in a template
    view.findCards();
    if (result.ok) view.renderTable(result, link.unit, link.figure);
    else view.clearTable();
    document.documentElement.setAttribute('data-answer-table', '');
  };
}

/**
 * Edits made before the page was live (js/boot.js queued the last value of each control: dist/'s
 * prerendered GPU, unit and preset controls can be used at once), made again on the live controls.
 */
function replayQueuedEdits() {
  for (const { id, value, checked } of window.trainmemQueue?.take() ?? []) {
    const el = $(id);
    if (!el) continue;
    if (el.type === 'checkbox' || el.type === 'radio') el.checked = checked;
    else el.value = value;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }
}

async function start() {
  window.trainmemStats = { headlineMs: NaN };
  const enginePromise = createEngine(); // the wasm compiles while the page and Chart.js load
  adoptPalette();
  if (document.documentElement.hasAttribute('data-link')) {
    await parsed();
    engine = await enginePromise;
    const showTable = showLinkAnswer();
    await afterPaint(); // the headline's frame first, then the breakdown's
    showTable();
    await afterPaint();
  }
  await pageReady();
  ui = findElements();
  watchSticky(ui.summary);
  engine = await enginePromise;
  performance.mark('trainmem:engine-ready');
  // What the module has done so far, for the benchmark's calls and passes per keystroke
  // (tests/bench/calls-bench.mjs).
  window.trainmemStats.engineWork = () => ({ ...engine.calls, passes: engine.passes() });
  form = new Form(ui.fields, engine.fieldSpecs, onFieldChange, onFieldCommit);
  pointToSetups();
  view ??= new ResultsView();
  gpuFit = new GpuFitTable($('gpu-card'), (id) => {
    state.gpu = id;
    syncControls();
    recompute();
    share.commit();
  });
  ui.version.textContent = engine.version;
  fillSelects();
  bindControls();
  bindPanels();
  applyLink(location.hash); // an empty one is the fresh page's state
  syncControls();
  // The fresh page's form is live from here, its answer already on screen (dist/'s prerendered
  // one): an edit reaches the estimator (onFieldChange, recompute). The page's own first estimate,
  // the start's slowest step (the module compiles the estimator's functions on their first
  // call), follows in a task of its own, in which an edit may come first. A frame may come
  // between the two: the form's marks are the check's (resolve() alone: the resolved config and
  // the problems), so that frame shows the form as the estimate's marks will. A link's form is
  // shown once its state's answer is written (data-live): it is live then.
  const link = document.documentElement.hasAttribute('data-link');
  if (!link) {
    const { names, config } = configFor(state.fields);
    markForm(names, engine.check(config));
    replayQueuedEdits();
    performance.mark('trainmem:inputs-live');
    await new Promise((resolve) => postTask(resolve));
  }
  recompute();
  cancelSettle();
  settle(); // the form's marks in this task; the details follow a task at a time
  // dist/'s prerendered first answer (web/scripts/prerender.mjs) is now the live page.
  const main = document.querySelector('main');
  main.removeAttribute('data-prerendered');
  document.documentElement.setAttribute('data-live', '');
  if (link) {
    replayQueuedEdits();
    performance.mark('trainmem:inputs-live');
  }
  performance.mark('trainmem:first-result');
  requestAnimationFrame(() => performance.mark('trainmem:first-result-frame'));

  await afterPaint();
  await loadChartJs();
  gpuChart = new GpuChart($('gpu-chart'));
  render(lastStale);
  performance.mark('trainmem:first-chart');
  // The frame after the first chart is when it is on screen (read by tests/bench).
  requestAnimationFrame(() => performance.mark('trainmem:first-frame'));
  document.body.dataset.ready = '1';
}

start().catch(async (error) => {
  await pageReady();
  // A link's page shows <main>, where the message is, once answered and live (app.css).
  document.documentElement.setAttribute('data-answer', '');
  document.documentElement.setAttribute('data-live', '');
  const box = $('general-issues');
  box.hidden = false;
  box.textContent = `The calculator could not start: ${error.message}`;
  document.body.dataset.ready = 'error';
});
