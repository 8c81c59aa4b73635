// Everything the page shows about one result except the charts: the headline total and verdict,
// the breakdown table, parameter counts, assumptions and the reference's log line.
import { cssColor } from './theme.js';
import { verdictOf } from './verdict.js';
import { formatBytes, formatCount, formatExactBytes, formatInteger, formatSize } from './format.js';
import { bindTerms, elementsById, escapeHtml, termButtonHtml, termNoteHtml } from './dom.js';

export const CATEGORIES = [
  { key: 'weights', label: 'Weights' },
  { key: 'weight_copies', label: 'Weight copies', trainmem: true },
  { key: 'gradients', label: 'Gradients' },
  { key: 'master_weights', label: 'Master weights' },
  { key: 'optimizer_states', label: 'Optimizer states' },
  { key: 'buffers', label: 'Buffers', trainmem: true },
  // PEFT (the trainmem profile): shown only when the run has them.
  { key: 'frozen_weights', label: 'Frozen weights', trainmem: true, whenSet: true },
  { key: 'adapter_weights', label: 'Adapter weights', trainmem: true, whenSet: true },
  { key: 'adapter_gradients', label: 'Adapter gradients', trainmem: true, whenSet: true },
  { key: 'adapter_master_weights', label: 'Adapter master weights', trainmem: true, whenSet: true },
  { key: 'adapter_optimizer_states', label: 'Adapter optimizer states', trainmem: true, whenSet: true },
];

/** The tensor classes a result's views list: the reference profiles' five, and PEFT's rows when set. */
export function categoriesOf(result) {
  const trainmem = result?.profile === 'trainmem';
  return CATEGORIES.filter((c) => (trainmem || !c.trainmem) && (!c.whenSet || classBytes(result, c.key) > 0));
}

/** A tensor class's bytes: the core's state.<class>.total (PartBytes::total()). */
export function classBytes(result, key) {
  return result?.state?.[key]?.total ?? 0;
}

/** The figures a trainmem result can be compared with a GPU's capacity by. */
export const FIGURES = {
  allocated: { label: 'allocated', row: 'Allocated', long: 'allocated (torch max_memory_allocated)', note: 'the peak: torch max_memory_allocated' },
  reserved: { label: 'reserved', row: 'Reserved', long: 'reserved (torch max_memory_reserved)', note: 'torch max_memory_reserved' },
  device: { label: 'device', row: 'Device', long: 'device (what nvidia-smi shows)', note: 'what nvidia-smi shows' },
};
export const DEFAULT_FIGURE = 'device';

// How the page draws the core's lines between allocated, reserved and device bytes
// (overheads.lines); a line the table does not know is drawn with its key as its label.
const LINE_LOOKS = {
  caching_allocator: { label: 'Allocator caching and fragmentation', color: '--c-allocator' },
  cuda_context: { label: 'CUDA context', color: '--c-context' },
  nccl: { label: 'NCCL buffers', color: '--c-nccl' },
  paged_optimizer: { label: 'Paged optimizer states (bitsandbytes, outside the allocator)', color: '--c-paged' },
};
const OTHER_LINE = { color: '--c-overhead' };
/** The figures in stacking order: each adds its lines to the one before. */
const FIGURE_ORDER = ['allocated', 'reserved', 'device'];
// The core's CPU classes (result.cpu, wasm/trainmem.d.ts CpuBytes) as the breakdown names them.
const CPU_LABELS = {
  weights: 'offloaded weights', gradients: 'offloaded gradients', master_weights: 'offloaded master weights',
  optimizer_states: 'offloaded optimizer states', activations: 'offloaded activations',
  paged_optimizer_states: 'paged optimizer states (evicted)',
};

const isTrainmem = (result) => result?.profile === 'trainmem' && Number.isFinite(result?.device_bytes);

/**
 * The figure compared with the capacity: the picked one for the trainmem profile, total_bytes
 * (the reference's figure) otherwise. {key, bytes, label}
 */
function figureOf(result, figure = DEFAULT_FIGURE) {
  if (!isTrainmem(result)) return { key: 'total', bytes: result?.total_bytes, label: 'total' };
  const key = FIGURES[figure] ? figure : DEFAULT_FIGURE;
  return { key, bytes: result[`${key}_bytes`], label: FIGURES[key].label };
}

/**
 * The figure a view's headline shows, as every view shows it: `key` (allocated, reserved or
 * device; total for the reference profiles) and `bytes`, the core's figure rounded to whole bytes.
 * null when the result has no figure (the view shows its issues instead).
 */
export function headlineOf(result, figure = DEFAULT_FIGURE) {
  if (!result?.ok) return null;
  const fig = figureOf(result, figure);
  return Number.isFinite(fig.bytes) ? { ...fig, bytes: Math.round(fig.bytes) } : null;
}

/** Marks a headline element with the figure it shows (data-bytes, data-figure), or unmarks it. */
export function markHeadline(node, headline) {
  if (headline) {
    node.dataset.bytes = BigInt(headline.bytes).toString(); // digits, also beyond 2^53 (no "1e+21")
    node.dataset.figure = headline.key;
  } else {
    delete node.dataset.bytes;
    delete node.dataset.figure;
  }
}

/**
 * What sits on the GPU at the peak besides model state and activations: the step's temporaries
 * (logits, a recomputed layer, the optimizer's scratch). When the optimizer step is the peak, the
 * activations are freed by then. {activation, temporary, label}
 */
export function peakParts(result) {
  const act = Number.isFinite(result.activation_bytes) ? result.activation_bytes : 0;
  if (!isTrainmem(result) || !result.moments) return { activation: act, temporary: 0, label: '' };
  // The core splits the peak (moments.peak_*); the page only labels it.
  const m = result.moments;
  if (m.peak === 'optimizer_step')
    return { activation: 0, temporary: m.peak_temporary_bytes, label: 'Optimizer-step temporaries', freed: true };
  return { activation: m.peak_activation_bytes, temporary: m.peak_temporary_bytes, label: 'Temporaries at the peak' };
}

/**
 * The core's lines between allocated, reserved and device bytes (overheads.lines), in stacking
 * order, each with its label and colour and whether `figure` includes it.
 * @returns {{key: string, bytes: number, adds_to: string, label: string, color: string, included: boolean}[]}
 */
export function overheadLines(result, figure) {
  if (!isTrainmem(result)) return [];
  const rank = FIGURE_ORDER.indexOf(figure);
  return (result.overheads?.lines ?? []).filter((line) => FIGURE_ORDER.indexOf(line.adds_to) > 0)
    .map((line) => ({ ...line, label: line.key, ...OTHER_LINE, ...LINE_LOOKS[line.key], included: rank >= FIGURE_ORDER.indexOf(line.adds_to) }));
}
/**
 * What each term of the breakdown means, in one line a reader opens beside it (docs/trainmem-profile.md
 * §3 and §5 say where each comes from). Keys: the tensor classes, the parts, the rows after them,
 * the core's overhead lines and the figures.
 */
export const TERMS = {
  weights: "The model's parameters as this GPU holds them for training, in params_dtype, after the TP, PP and EP splits and any sharding.",
  weight_copies: "Further copies of the weights in another dtype: Transformer Engine's FP8 weight caches, autocast's compute-dtype casts of the linear weights.",
  gradients: 'One gradient per trained parameter in the gradient dtype (Megatron\'s main-grad buffer, .grad), sharded at ZeRO-2/3 and by FSDP.',
  master_weights: 'The fp32 copy of the weights the optimizer updates when the weights themselves are kept in 16 bits (mixed precision).',
  optimizer_states: "The optimizer's state per parameter (Adam: m and v), sharded by Megatron's distributed optimizer, ZeRO-1 and up, or FSDP.",
  buffers: "Working memory the framework keeps beside the state: ZeRO-3 and FSDP layers gathered whole for compute, DDP's gradient buckets, DeepSpeed's reduce bucket.",
  frozen_weights: "The base model's weights under LoRA or QLoRA: not trained, so no gradients, master weights or optimizer states (QLoRA: 4-bit NF4 with block scales).",
  adapter_weights: 'The LoRA adapters, A (in × r) and B (r × out) on each target module: the weights that are trained.',
  adapter_gradients: "The adapters' gradients.",
  adapter_master_weights: "The adapters' fp32 copies, when the adapters themselves are kept in 16 bits.",
  adapter_optimizer_states: "The optimizer's state for the adapters (Adam: m and v).",
  dense: 'Parameters of the transformer layers other than routed experts: attention, dense MLPs, shared experts, norms, routers.',
  embedding: 'The input embedding and the output layer: the vocabulary-sized matrices, on the first and last pipeline stage.',
  expert: "The routed MoE experts' parameters, split over expert parallelism (EP, ETP).",
  activation: 'The tensors the forward pass saves for the backward pass, for every microbatch in flight on this stage, after recompute.',
  temporary: "What exists only around the step's peak: the logits and loss, a recomputed layer, the optimizer's scratch, the cuBLAS and Transformer Engine workspaces.",
  caching_allocator: "What PyTorch's caching allocator holds beyond the allocated tensors: rounding and fragmentation (max_memory_reserved − max_memory_allocated).",
  cuda_context: 'The CUDA context each process creates on its GPU (driver state, loaded kernels), outside PyTorch\'s allocator.',
  nccl: "NCCL's communication buffers, for each communicator (process group) of more than one GPU that the run uses.",
  paged_optimizer: "bitsandbytes' paged optimizer states, in unified memory outside PyTorch's allocator.",
  allocated: 'The peak of memory held by tensors: what torch.cuda.max_memory_allocated reports.',
  reserved: "Allocated plus what PyTorch's caching allocator keeps cached: torch.cuda.max_memory_reserved.",
  device: 'Reserved plus the CUDA context and NCCL buffers: what nvidia-smi shows for the process.',
  total: "The reference estimator's figure: model state plus first-stage activations, as Megatron's theoretical memory prints it.",
};

/**
 * Renders `root` again without losing the keyboard: a term's button that had the focus has it
 * again in the new markup (the same line, by aria-controls), so that Enter, Escape and Tab go on
 * where they were. The breakdown and the compare view are rebuilt on every result, and the
 * breakdown once more when its trace arrives (main.js scheduleTrace); the focus was left on the
 * page's body, and Escape no longer closed the line just opened.
 */
export function keepingTermFocus(root, render) {
  const active = document.activeElement;
  const focused = root && root.contains(active) && active.matches('button.term') ? active.getAttribute('aria-controls') : null;
  render();
  if (focused && !root.contains(document.activeElement)) {
    root.querySelector(`button.term[aria-controls="${CSS.escape(focused)}"]`)?.focus({ preventScroll: true });
  }
}

/** A row's term: the button in its header; its line in a row of its own below, the table's width. */
const rowTerm = (key, label) => (TERMS[key] ? termButtonHtml(`term-${key}`, label) : label);
const termRow = (key, columns) => (TERMS[key] ? `<tr class="term-row"><td colspan="${columns}">${termNoteHtml(`term-${key}`, TERMS[key])}</td></tr>` : '');

export const PARTS = [
  { key: 'dense', label: 'dense' },
  { key: 'embedding', label: 'embedding' },
  { key: 'expert', label: 'experts' },
];

// Each writes only a change: the keystroke's frame restyles and lays out what was written, the same
// value too.
const setText = (node, text) => { if (node.textContent !== text) node.textContent = text; };
/**
 * The stale line (`withResult`: the last valid result is on screen). Where the page has a form, its
 * part about the marked fields links to the form's problems (on a phone they are screens below the
 * headline: a second QA pass at stop 46); a view without a form (the embed) points to the problems
 * it lists below instead.
 */
function staleNote(node, withResult) {
  const problems = document.getElementById('form-problems');
  const lead = withResult ? 'Showing the last valid result: ' : 'No figure until ';
  const rest = problems ? (withResult ? 'fix the marked fields' : 'the marked fields are given')
    : (withResult ? 'fix the problems below' : 'the problems below are fixed');
  if (node.textContent === `${lead}${rest}.` && Boolean(node.querySelector('a')) === Boolean(problems)) return;
  node.replaceChildren(lead, problems ? Object.assign(document.createElement('a'), { href: '#form-problems', textContent: rest }) : rest, '.');
}
const setClass = (node, name) => { if (node.className !== name) node.className = name; };
const setAttr = (node, name, value) => { if (node.getAttribute(name) !== value) node.setAttribute(name, value); };
const setWidth = (node, width) => { if (node.style.width !== width) node.style.width = width; };

/**
 * How sure the figure is (the core's `confidence`: the validation group closest to the run): the
 * words beside the headline, "runs like this landed within ±N %" (N: the group's 90th-percentile
 * |error|, rounded, at least 1), and a title naming the group and its point count. null for the
 * reference profiles and for a result without a figure. {text, title, within}
 */
export function confidenceOf(result) {
  const c = result?.ok && result.profile === 'trainmem' ? result.confidence : null;
  if (!c) return null;
  const within = Math.max(1, Math.round(100 * c.p90_abs_error));
  const pct = (share) => `${(100 * share).toFixed(1)} %`;
  const wider = c.match === 'exact' ? ''
    : ` This run's own group (${c.run_group}) has too few points, so these are a wider group's.`;
  // A group whose median signed error is below the core's threshold reads low: said beside the
  // headline, since an under-estimate is the error that costs a run (issue 29 item 8).
  const low = c.leans_low ? Math.max(1, Math.round(-100 * c.median_signed_error)) : 0;
  return {
    within,
    low,
    text: `runs like this landed within ±${within} %${low ? ` and read ${low} % low: allow for more` : ''}`,
    title: `${c.group}: ${c.points} validation point${c.points === 1 ? '' : 's'} (published measurements). ` +
      `At least 90 % of them landed within ±${pct(c.p90_abs_error)} of what was measured; median |error| ${pct(c.median_abs_error)}, ` +
      `median signed error ${c.median_signed_error >= 0 ? '+' : ''}${pct(c.median_signed_error)}.` +
      `${wider} Source: ${c.source}.`,
  };
}

/**
 * Fills the confidence opener (a button beside the headline: "runs like this landed within ±N %
 * [and read N % low: allow for more]") and the line it opens (the group, its points and its
 * statistics). The button's text is conf.text; its parts are spans so the stuck phone headline can
 * keep just "±N %" (and "N % low"). Hidden, and closed, when there is no confidence.
 */
export function fillConfidence(button, detail, conf) {
  button.hidden = !conf;
  if (!conf) {
    closeConfidence(button, detail);
    return;
  }
  const key = `${conf.text}\n${conf.title}`;
  if (button.dataset.key !== key) {
    button.dataset.key = key;
    const part = (cls, text) => Object.assign(document.createElement('span'), { className: cls, textContent: text });
    const lead = 'runs like this landed within ';
    const low = conf.text.slice(lead.length + `±${conf.within} %`.length);
    button.replaceChildren(part('conf-lead', lead), part('conf-within', `±${conf.within} %`), ...(low ? [part('conf-low', low)] : []));
    button.dataset.lowShort = conf.low ? ` · ${conf.low} % low` : '';
    detail.textContent = conf.title;
  }
  button.dataset.within = String(conf.within);
  button.classList.toggle('leans-low', conf.low > 0);
}

/** Closes the confidence's line (its button says so: aria-expanded false). */
export function closeConfidence(button, detail) {
  button.setAttribute('aria-expanded', 'false');
  detail.hidden = true;
}

/**
 * Makes the confidence button open and close its line: by click, tap, Enter or Space (a button's
 * own keys), and Escape closes it from either. The line is a disclosure below the headline, not a
 * hover title: a phone and a keyboard reach it too.
 */
export function bindConfidence(button, detail) {
  button.type = 'button';
  button.setAttribute('aria-controls', detail.id);
  closeConfidence(button, detail);
  button.addEventListener('click', () => {
    const open = button.getAttribute('aria-expanded') !== 'true';
    button.setAttribute('aria-expanded', String(open));
    detail.hidden = !open;
  });
  for (const node of [button, detail]) {
    node.addEventListener('keydown', (event) => {
      if (event.key !== 'Escape' || detail.hidden) return;
      closeConfidence(button, detail);
      button.focus();
    });
  }
}

/** Shows confidenceOf(result) in the view's opener and its line (hidden when there is none). */
export function renderConfidence(button, detail, result) {
  fillConfidence(button, detail, confidenceOf(result));
}

/**
 * The result as chart segments, one per tensor class and part, in stacking order, each with its
 * exact bytes and the formulas from the core's trace that produce it.
 */
export function segmentsOf(result, formulas, figure = DEFAULT_FIGURE, color = cssColor) {
  const segments = [];
  const peak = peakParts(result);
  for (const c of CATEGORIES) {
    for (const p of PARTS) {
      segments.push({
        key: `${c.key}.${p.key}`, label: `${c.label} · ${p.label}`,
        bytes: result.state?.[c.key]?.[p.key] ?? 0,
        color: color(`--c-${c.key}-${p.key}`),
        formula: formulas(c.key, p.key),
      });
    }
  }
  segments.push({
    key: 'activation', label: 'Activations', bytes: peak.activation,
    color: color('--c-activation'), formula: formulas('activation', null),
  });
  segments.push({
    key: 'temporary', label: peak.label || 'Temporaries', bytes: peak.temporary,
    color: color('--c-temporary'), formula: ['The largest moment of the step minus model state and activations'],
  });
  const fig = figureOf(result, figure).key;
  for (const o of overheadLines(result, fig)) {
    segments.push({
      key: o.key, label: o.label, bytes: o.included ? o.bytes : 0, color: color(o.color),
      formula: [`Included in the ${FIGURES[o.adds_to].long} figure`],
    });
  }
  return segments;
}

/**
 * A legend for a stacked bar: one item per non-empty segment, its colour, its name and its size
 * (the embed's bar has no room for labels). The colours are set through the CSSOM, which the CSP
 * allows (style attributes in markup it does not).
 */
export function renderLegend(list, segments, unit) {
  list.replaceChildren(...segments.filter((s) => s.bytes > 0).map((s) => {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = s.color;
    const value = document.createElement('span');
    value.className = 'legend-value';
    value.textContent = formatBytes(s.bytes, unit);
    item.append(swatch, s.label, ' ', value);
    return item;
  }));
}

// The elements a ResultsView fills, by their ids in index.html; embed.html has the headline's and
// the table's (its view renders only those).
const VIEW_IDS = {
  summary: 'summary', eyebrow: 'eyebrow', figureSwitch: 'figure-switch', total: 'total', capacity: 'capacity',
  gpuName: 'gpu-name', meter: 'meter', meterFill: 'meter-fill', verdict: 'verdict', stale: 'stale',
  tableHead: 'breakdown-head', tableBody: 'breakdown-body', peakCard: 'peak-card', peak: 'peak', params: 'params',
  assumptions: 'assumptions', report: 'report', summaryText: 'summary-text', profile: 'profile', traceBody: 'trace-body',
  reportCard: 'report-card',
  confidence: 'confidence', confidenceDetail: 'confidence-detail',
};

export class ResultsView {
  constructor() {
    this.ui = elementsById(VIEW_IDS);
    bindConfidence(this.ui.confidence, this.ui.confidenceDetail);
    bindTerms(document);
  }

  /** Finds the elements again: dist/'s result cards are put in place after the headline's frame (js/boot.js). */
  findCards() {
    this.ui = elementsById(VIEW_IDS);
  }

  /** Headline: the figure (headlineOf), the capacity and whether it fits. */
  renderSummary(result, capacity, gpuName, unit, stale, figure = DEFAULT_FIGURE) {
    const { ui } = this;
    const headline = headlineOf(result, figure);
    const key = headline?.key ?? figureOf(result, figure).key;
    const stage = isTrainmem(result) && (result.stages?.length ?? 0) > 1 ? ` (pipeline stage ${result.most_loaded_stage})` : '';
    setText(ui.eyebrow, isTrainmem(result)
      ? `Most-loaded GPU${stage} · ${FIGURES[key].long}`
      : 'Most-loaded GPU needs');
    ui.figureSwitch.hidden = !isTrainmem(result);
    setText(ui.total, formatBytes(headline?.bytes, unit));
    ui.total.title = formatExactBytes(headline?.bytes);
    markHeadline(ui.total, headline);
    renderConfidence(ui.confidence, ui.confidenceDetail, headline ? result : null);
    setText(ui.capacity, Number.isFinite(capacity) ? formatSize(capacity, unit) : 'no capacity');
    setText(ui.gpuName, gpuName);
    ui.summary.classList.toggle('stale', stale);
    if (ui.stale.hidden !== !stale) ui.stale.hidden = !stale;
    // With no result at all (an import's open question) there is no last valid result to show.
    if (stale) staleNote(ui.stale, Boolean(result));
    const verdict = verdictOf(result, headline, unit);
    if (!verdict) {
      setClass(ui.verdict, 'verdict');
      setText(ui.verdict, headline ? 'Enter a capacity to compare' : '');
      setWidth(ui.meterFill, '0%');
      return;
    }
    const { fit, used, text } = verdict;
    setClass(ui.verdict, `verdict ${fit}`);
    setText(ui.verdict, text);
    setWidth(ui.meterFill, `${Math.min(100, used * 100).toFixed(1)}%`);
    setAttr(ui.meter, 'aria-valuenow', (used * 100).toFixed(0));
    setAttr(ui.meter, 'aria-valuetext', `${(used * 100).toFixed(0)}% of capacity`);
  }

  /** The breakdown table: the accessible twin of the GPU chart. Empty parts get no column. */
  renderTable(result, unit, figure = DEFAULT_FIGURE) {
    const trainmem = isTrainmem(result);
    // A class with no bytes in this result (QLoRA's frozen base has no gradients, master weights
    // or optimizer states) gets no row of empty cells: one line names the classes that are empty.
    const listed = categoriesOf(result);
    const categories = listed.filter((c) => classBytes(result, c.key) > 0);
    const empty = listed.filter((c) => !categories.includes(c));
    const parts = PARTS.filter((p) => categories.some((c) => result.state?.[c.key]?.[p.key] > 0));
    const cell = (bytes) => `<td title="${formatExactBytes(bytes)}">${bytes ? formatBytes(bytes, unit) : '·'}</td>`;
    // A class, not a style attribute: the CSP allows no inline styles.
    const swatch = (key) => `<span class="swatch" data-c="${key}"></span>`;
    const columns = parts.length + 2;
    // A part's line opens in a row of its own under the head, the table's width (inside its
    // column head it was a column a few words wide, and on a phone it pushed Total out of view).
    const head = `<tr><th scope="col">Tensor class</th>${parts.map((p) => `<th scope="col">${rowTerm(p.key, `${p.label[0].toUpperCase()}${p.label.slice(1)}`)}</th>`).join('')}<th scope="col">Total</th></tr>${parts.map((p) => termRow(p.key, columns)).join('')}`;
    const rows = categories.map((c) => {
      const row = result.state?.[c.key] ?? {};
      return `<tr data-row="${c.key}" data-bytes="${classBytes(result, c.key)}"><th scope="row">${rowTerm(c.key, `${swatch(c.key)}${c.label}`)}</th>${parts.map((p) => cell(row[p.key] ?? 0)).join('')}${cell(classBytes(result, c.key))}</tr>${termRow(c.key, columns)}`;
    });
    if (empty.length) {
      const names = empty.map((c) => c.label.toLowerCase()).join(', ');
      rows.push(`<tr class="empty-classes"><td colspan="${columns}">No bytes in this run: ${escapeHtml(names)}</td></tr>`);
    }
    const act = result.activation_bytes;
    const known = Number.isFinite(act);
    const span = parts.length ? `<td colspan="${parts.length}"></td>` : '';
    // A row header: its swatch, its term (the button opening its line) and an optional second line.
    // The swatch sits in the button, so a long label wraps beside it rather than under it.
    const th = (key, label, note = '', termKey = key) => `<th scope="row">${rowTerm(termKey, `${key ? swatch(key) : ''}${label}`)}${note ? `<span class="row-note">${note}</span>` : ''}</th>`;
    // Each row's term line follows it (the rows below are built as `<tr>…</tr>`, then their line).
    const withLine = (html, termKey) => `${html}${termRow(termKey, columns)}`;
    const peak = peakParts(result);
    // The trainmem profile's rows add up to the peak (Allocated): its Activations are those held
    // at the peak moment (the core's moments.peak_activation_bytes), as the bar, the legend, the
    // element and the exports show them; all the step saves is named beside it when the peak holds
    // fewer (a peak in backward, or while a chunked loss runs, or at the optimizer step).
    const held = trainmem && known ? peak.activation : act;
    const moment = MOMENT_NAMES[result.moments?.peak] ?? result.moments?.peak;
    const activationNote = !known || held === act ? ''
      : peak.freed ? `${formatBytes(act, unit)} saved in all, freed before the peak (${moment})`
        : `${formatBytes(act, unit)} saved in all; ${formatBytes(held, unit)} of it held at the peak (${moment === MOMENT_NAMES.forward ? 'forward' : moment})`;
    rows.push(withLine(`<tr${trainmem && known ? ` data-row="activation" data-bytes="${held}"` : ''}>${th('activation', 'Activations', activationNote)}${parts.length ? `<td colspan="${parts.length}">${known ? '' : 'not computed'}</td>` : ''}${known ? cell(held) : '<td>—</td>'}</tr>`, 'activation'));
    const fig = figureOf(result, figure).key;
    if (trainmem) {
      const workspaces = result.overheads?.workspace_bytes ?? 0;
      const libraries = 'library workspaces (cuBLAS, Transformer Engine)';
      const workspaceNote = workspaces > 0 && workspaces < peak.temporary ? `${formatBytes(workspaces, unit)} of it ${libraries}`
        : workspaces > 0 && workspaces === peak.temporary ? `the ${libraries}` : '';
      rows.push(withLine(`<tr data-row="temporary" data-bytes="${peak.temporary}">${th('temporary', peak.label, workspaceNote)}${span}${cell(peak.temporary)}</tr>`, 'temporary'));
      // The NCCL line names its communicators and their sizes (group name × GPUs).
      const groups = (result.overheads?.nccl_groups ?? []).map((g) => `${g.name} ×${g.gpus}`).join(', ');
      const ncclNote = `${result.overheads?.nccl_communicators} communicators${groups ? `: ${groups}` : ''}`;
      // Each figure in turn: the core's lines that add up to it from the one before, then the figure.
      const lines = overheadLines(result, fig);
      for (const key of FIGURE_ORDER) {
        // A line with no bytes in this run (NCCL's buffers on one GPU) is no row either.
        for (const o of lines.filter((line) => line.adds_to === key && line.bytes > 0)) {
          rows.push(withLine(`<tr data-line="${escapeHtml(o.key)}" data-bytes="${o.bytes}">${th(o.color.slice('--c-'.length), escapeHtml(o.label), o.key === 'nccl' ? ncclNote : '', o.key)}${span}${cell(o.bytes)}</tr>`, o.key));
        }
        const bytes = result[`${key}_bytes`];
        rows.push(withLine(`<tr class="total-row${key === fig ? ' compared' : ''}" data-figure="${key}" data-bytes="${bytes}">${th('', FIGURES[key].row, FIGURES[key].note, key)}${span}${cell(bytes)}</tr>`, key));
      }
    } else {
      rows.push(withLine(`<tr class="total-row compared">${th('', 'Total', '', 'total')}${span}${cell(result.total_bytes)}</tr>`, 'total'));
    }
    keepingTermFocus(this.ui.tableBody.closest('table'), () => {
      this.ui.tableHead.innerHTML = head;
      this.ui.tableBody.innerHTML = rows.join('');
    });
  }

  /** An empty breakdown, for a state that has no result. */
  clearTable() {
    this.ui.tableHead.replaceChildren();
    this.ui.tableBody.replaceChildren();
  }

  /** No peak, parameters, notes or trace: a state that has no result (main.js markNoResult). */
  clearCards() {
    const { ui } = this;
    ui.peakCard.hidden = true;
    for (const list of [ui.peak, ui.params, ui.assumptions, ui.traceBody]) list.replaceChildren();
    for (const text of [ui.report, ui.summaryText, ui.profile]) setText(text, '');
  }

  /** Moments of the step, the most-loaded stage, CPU per node, minimum devices, DeepSpeed's figures. */
  renderPeak(result, unit, capacity) {
    const { ui } = this;
    const trainmem = isTrainmem(result);
    ui.peakCard.hidden = !trainmem;
    if (!trainmem) return;
    const items = [];
    const m = result.moments ?? {};
    const names = { forward: 'End of forward', backward: 'Backward', optimizer_step: 'Optimizer step',
      loading: 'Loading the model', checkpoint_save: 'Saving a full checkpoint', evaluation: 'Evaluation step' };
    // The core names the step's peak and the job's (loading or a save can be larger than any step).
    const jobPeak = m.job_peak ?? m.peak;
    for (const [key, label] of Object.entries(names)) {
      if (!Number.isFinite(m[key])) continue;
      const outsideStep = key === 'loading' || key === 'checkpoint_save' || key === 'evaluation';
      if (outsideStep && !(m[key] > 0)) continue;  // not a moment of this job
      const note = key === jobPeak ? (jobPeak === m.peak ? ' (peak)' : ' (the job\'s peak)')
        : key === m.peak ? ' (the step\'s peak)' : '';
      items.push([`${label}${note}`, formatBytes(m[key], unit), formatExactBytes(m[key]), key === jobPeak ? 'peak' : '']);
    }
    const stages = result.stages ?? [];
    const stage = stages.find((s) => s.stage === result.most_loaded_stage);
    if (stages.length > 1 && stage) {
      items.push(['Most-loaded pipeline stage', `${stage.stage} (of 0–${stages.length - 1})`, '', '']);
    }
    if (stage && Number.isFinite(stage.microbatches_in_flight)) {
      items.push(['Microbatches in flight there', String(stage.microbatches_in_flight), '', '']);
    }
    if (result.cpu_bytes > 0) {
      items.push(['CPU memory per node', formatBytes(result.cpu_bytes, unit), formatExactBytes(result.cpu_bytes), '']);
      // What was moved there, each class as its own row (the core's split; they add up).
      for (const [key, bytes] of Object.entries(result.cpu ?? {})) {
        if (bytes > 0) items.push([CPU_LABELS[key] ?? key, formatBytes(bytes, unit), formatExactBytes(bytes), 'sub']);
      }
    }
    if (Number.isFinite(result.minimum_devices) && result.minimum_devices > 0) {
      items.push(['Minimum GPUs that could hold the run', formatInteger(result.minimum_devices),
        Number.isFinite(capacity) ? `at ${formatSize(capacity, unit)} each` : '', '']);
    }
    if (result.deepspeed_estimator) {
      const d = result.deepspeed_estimator;
      items.push(["DeepSpeed's estimator: GPU", formatBytes(d.gpu_bytes, unit), formatExactBytes(d.gpu_bytes), '']);
      items.push(["DeepSpeed's estimator: CPU per node", formatBytes(d.cpu_bytes, unit), formatExactBytes(d.cpu_bytes), '']);
    }
    ui.peak.replaceChildren(...items.map(([k, v, title, cls]) => {
      const div = document.createElement('div');
      if (cls) div.className = cls;
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      if (title) dd.title = title;
      div.append(dt, dd);
      return div;
    }));
  }

  renderParams(result) {
    const p = result.params ?? {};
    const l = result.layers ?? {};
    const items = [
      ['Total parameters', p.total],
      ['Active per token', p.active],
      ['On the most-loaded GPU', p.per_gpu],
      ['  stored there at rest (ZeRO-3 / FSDP shards)', p.stored_per_gpu !== p.per_gpu ? p.stored_per_gpu : undefined],
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
    // The card is Megatron's training-log line: the core gives one only for a run Megatron-LM
    // would launch and log (estimate.cpp reference_line); without it the card's title, its
    // "compare this line with your run's log" and the summary in the log's words would speak of
    // a log the run does not write (issue 32 item 6; the walk found them on torchtune's 70B LoRA).
    if (ui.reportCard) ui.reportCard.hidden = !result.report;
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

/**
 * The rows that add up to a figure, as the element lists them and the compare panel pairs them:
 * each tensor class (its parts summed), activations, the peak's temporaries, and each of the
 * core's overhead lines the figure includes (`line`). {key, label, color, bytes, line}
 */
export function figureRows(result, figure = DEFAULT_FIGURE) {
  const rows = categoriesOf(result).map((c) => ({ key: c.key, label: c.label, color: `--c-${c.key}-dense`, bytes: classBytes(result, c.key) }));
  const peak = peakParts(result);
  rows.push({ key: 'activation', label: 'Activations', color: '--c-activation', bytes: peak.activation });
  rows.push({ key: 'temporary', label: peak.label || 'Temporaries', color: '--c-temporary', bytes: peak.temporary });
  for (const o of overheadLines(result, figureOf(result, figure).key)) {
    if (o.included) rows.push({ key: o.key, label: o.label, color: o.color, bytes: o.bytes, line: true });
  }
  return rows;
}

/**
 * Two results' figureRows side by side, paired by key (a row one of them lacks, such as PEFT's
 * classes or the paged optimizer's line, is 0 there), and the two figures.
 * @returns {{rows: {key: string, label: string, color: string, bytes: [number, number]}[], figures: {key: string, bytes: number, label: string}[]}}
 */
export function comparePairs(pinned, current, figure = DEFAULT_FIGURE) {
  const [a, b] = [pinned, current].map((r) => new Map(figureRows(r, figure).map((row) => [row.key, row])));
  // Classes in CATEGORIES' order, then activations and temporaries, then the lines as the core orders them.
  const order = [...CATEGORIES.map((c) => c.key), 'activation', 'temporary'];
  const rank = (key) => (order.includes(key) ? order.indexOf(key) : order.length);
  const keys = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => rank(x) - rank(y));
  const rows = keys.map((key) => {
    const { label, color } = b.get(key) ?? a.get(key);
    return { key, label, color, bytes: [a.get(key)?.bytes ?? 0, b.get(key)?.bytes ?? 0] };
  });
  return { rows, figures: [figureOf(pinned, figure), figureOf(current, figure)] };
}

/** The stage chart's stacks: model state, activations, the peak's temporaries, runtime overheads. */
export function stageSeries(result, figure = DEFAULT_FIGURE, color = cssColor) {
  const { stages } = result;
  const series = [
    { label: 'Weights and optimizer', color: color('--c-weights-dense'), bytes: stages.map((s) => s.weight_and_optimizer_bytes) },
    { label: 'Activations', color: color('--c-activation'), bytes: stages.map((s) => (Number.isFinite(s.activation_bytes) ? s.activation_bytes : null)) },
  ];
  if (result.profile === 'trainmem' && stages.every((s) => Number.isFinite(s.total_bytes))) {
    const fig = figureOf(result, figure).key;
    // The core splits each stage's peak: at an optimizer-step peak the activations are freed.
    series[1].bytes = stages.map((s) => s.moments.peak_activation_bytes);
    series.push({ label: 'Temporaries at the peak', color: color('--c-temporary'),
      bytes: stages.map((s) => s.moments.peak_temporary_bytes) });
    if (fig !== 'allocated') {
      const lines = overheadLines(result, fig).filter((o) => o.included).map((o) => o.label);
      series.push({ label: lines.join(', ') || 'Runtime overheads',
        color: color('--c-allocator'), bytes: stages.map((s) => s.overhead_bytes[fig]) });
    }
  }
  return series;
}

const MOMENT_NAMES = { forward: 'the end of forward', backward: 'backward', optimizer_step: 'the optimizer step' };

/** One stage in the stage chart's tooltip: its layers, parameters and (trainmem) its peak. */
export function stageNote(stage) {
  const parts = `${stage.num_layers} layers · ${formatCount(stage.dense_params)} dense, ${formatCount(stage.routed_params)} expert parameters`;
  if (!stage.moments) return parts;
  const { peak } = stage.moments; // the core names the stage's peak moment
  return `${parts} · ${stage.microbatches_in_flight} microbatches in flight · peak at ${MOMENT_NAMES[peak] ?? peak}`;
}
