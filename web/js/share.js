// What leaves the page: embed snippets, the result as JSON and CSV, the chart as PNG.
// Nothing here computes a figure: it lays out what the core returned.
import { valueToText } from './url-state.js';
import { CATEGORIES, PARTS, figureRows, overheadLines, peakParts } from './results.js';
import { START, attributeOf } from './link-config.js';
import { escapeHtml } from './dom.js';
import { RECIPE_WORDS } from './recipe-words.js';

/**
 * The two ways to put the calculator in another page.
 * @param {string} base the folder the page is served from, ending in "/"
 * @param {string} fragment the share link's state (without "#")
 * @param {[string, string][]} attributes the element's attributes (preset, fields, gpu, unit, ...)
 * @param {string} [theme] light, dark or auto
 */
export function embedSnippets(base, fragment, attributes, theme = 'auto') {
  const id = 'trainmem-embed';
  const iframe = [
    `<iframe id="${id}" src="${escapeHtml(`${base}embed.html#${fragment}&theme=${theme}`)}"`,
    '  title="trainmem: GPU memory estimate" loading="lazy" width="100%" height="420" frameborder="0"></iframe>',
    '<script>',
    '  // The embed posts its height; size the iframe to it (no scrollbars).',
    '  addEventListener("message", (e) => {',
    `    const frame = document.getElementById("${id}");`,
    '    if (e.source === frame.contentWindow && typeof e.data?.height === "number") frame.height = e.data.height;',
    '  });',
    '</script>',
  ].join('\n');
  const attrs = [...attributes, ['theme', theme]].map(([k, v]) => ` ${k}="${escapeHtml(v)}"`).join('');
  const element = [
    `<script type="module" src="${escapeHtml(`${base}js/trainmem-element.js`)}"></script>`,
    `<trainmem-calculator${attrs}></trainmem-calculator>`,
  ].join('\n');
  return { iframe, element };
}

/**
 * The element's attributes for a state: the preset, the fields that differ from it (all of them
 * for a custom or imported model), the GPU, the unit and the figure. `specs`: the core's field
 * specs by name (their link keys).
 */
export function elementAttributes({ fields, names, preset, gpu, capacity, unit, figure }, specs) {
  const attrs = [];
  if (preset) attrs.push(['preset', preset.id]);
  for (const name of names) {
    const v = fields[name];
    if (v === undefined || v === null) continue;
    if (preset && JSON.stringify(preset.config[name]) === JSON.stringify(v)) continue;
    attrs.push([attributeOf(specs, name), valueToText(v)]);
  }
  if (gpu) attrs.push(['gpu', gpu]);
  if (capacity) attrs.push(['cap', capacity]);
  if (unit && unit !== START.unit) attrs.push(['u', unit]);
  if (figure) attrs.push(['fig', figure]);
  return attrs;
}

const csvCell = (v) => {
  const t = v === null || v === undefined ? '' : Array.isArray(v) ? v.join(' ') : String(v);
  return /[",\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
};

const GIB = 2 ** 30;

/** Whole bytes as digits (the core's figure rounded as the headline rounds it; no "1e+21"). */
const wholeBytes = (bytes) => (Number.isFinite(bytes) ? BigInt(Math.round(bytes)).toString() : '');

// A row's value is bytes when its name (or a part of a dotted name) says so: *_bytes, or one of
// the moments of a step (result.moments / a stage's moments: forward, backward, optimizer_step).
const BYTE_NAMES = /(^|_)bytes$|^(forward|backward|optimizer_step)$/;
const isBytes = (...names) => names.some((name) => String(name).split('.').some((n) => BYTE_NAMES.test(n)));

/**
 * How the run trains, in a reader's words: full-parameter or LoRA/QLoRA with its rank, the
 * framework with its sharding, the recompute. From the resolved config (result.config).
 */
export function methodText(result) {
  const c = result?.config ?? {};
  if (result?.profile !== 'trainmem') return `full-parameter training (${result?.profile ?? 'reference'} estimator)`;
  const training = c.peft === 'lora' ? `LoRA rank ${c.lora_rank}` : c.peft === 'qlora' ? `QLoRA rank ${c.lora_rank} (4-bit NF4 base)` : 'full-parameter training';
  const fsdp2 = `FSDP2${Number.isFinite(c.zero_stage) ? ` (stage ${c.zero_stage})` : ''}`;
  // torchtune has no DDP: its framework is the recipe it runs (RECIPE_WORDS), one GPU or FSDP2.
  const recipe = c.model_implementation === 'torchtune' ? RECIPE_WORDS.torchtune[c.framework]?.text : undefined;
  const framework = recipe ? `torchtune ${recipe} recipe${c.framework === 'fsdp2' ? `, ${fsdp2}` : ''}` : {
    megatron: `Megatron${c.use_distributed_optimizer ? ' with the distributed optimizer' : ''}`,
    deepspeed: `DeepSpeed ZeRO-${c.zero_stage ?? 0}`,
    fsdp2,
    ddp: 'DDP',
  }[c.framework] ?? c.framework ?? '';
  const recompute = c.recompute_granularity && c.recompute_granularity !== 'none' ? `${c.recompute_granularity} recompute` : 'no recompute';
  return [training, framework, recompute].filter(Boolean).join(' · ');
}

/**
 * The result as one CSV table, "section,name,part,value,unit,GiB" on every row, so a spreadsheet
 * or a CSV reader takes it whole. First the run in words (section "run": model, method, layout,
 * GPU, the figure compared, verdict, confidence, link, version): the file says what it is on its
 * own. Then the breakdown a reader takes in at a glance (section "breakdown": each tensor class
 * with its parts summed, activations, the peak's temporaries, each runtime overhead the device
 * figure includes, and the figures). Then the detail: every resolved input, every tensor class and
 * part, the moments of the step, every pipeline stage, the parameter counts. Bytes are whole
 * bytes (unit B) with their GiB beside them; nothing here computes a figure.
 * @param {object} result the core's result
 * @param {{model: string, method: string, layout: string, gpu: string, capacity: number|null,
 *   figure: {key: string, label: string, bytes: number}|null, verdict: string, confidence: string,
 *   confidenceGroup: string, link: string, version: string}} [about] the run in words (the page's)
 */
export function resultCsv(result, about = {}) {
  const rows = [['section', 'name', 'part', 'value', 'unit', 'GiB']];
  const add = (section, name, part, value) => {
    const bytes = typeof value === 'number' && isBytes(name, part);
    rows.push(bytes
      ? [section, name, part, wholeBytes(value), 'B', Number.isFinite(value) ? (value / GIB).toFixed(2) : '']
      : [section, name, part, value, '', '']);
  };
  const run = (name, value) => rows.push(['run', name, '', value ?? '', '', '']);
  run('model', about.model);
  run('method', about.method ?? methodText(result));
  run('layout', about.layout);
  run('gpu', about.gpu);
  if (Number.isFinite(about.capacity)) add('run', 'gpu_memory_bytes', '', about.capacity);
  if (about.figure) add('run', 'figure_bytes', about.figure.label, about.figure.bytes);
  run('verdict', about.verdict);
  run('confidence', about.confidence);
  run('confidence_group', about.confidenceGroup);
  run('link', about.link);
  run('version', about.version);
  for (const row of figureRows(result, 'device')) add('breakdown', `${row.key}_bytes`, row.label, row.bytes);
  const figures = result.profile === 'trainmem' ? ['allocated_bytes', 'reserved_bytes', 'device_bytes'] : ['total_bytes'];
  for (const key of figures) add('breakdown', key, '', result[key]);
  for (const [k, v] of Object.entries(result.config ?? {})) add('input', k, '', v);
  for (const c of CATEGORIES) {
    for (const p of PARTS) add('bytes', c.key, p.key, result.state?.[c.key]?.[p.key] ?? 0);
  }
  const peak = peakParts(result);
  add('bytes', 'activations', '', result.activation_bytes);
  if (result.profile === 'trainmem') add('bytes', 'temporaries_at_peak', '', peak.temporary);
  for (const o of overheadLines(result, 'device')) add('bytes', o.key, '', o.bytes);
  for (const key of ['weight_and_optimizer_bytes', 'total_bytes', 'allocated_bytes', 'reserved_bytes', 'device_bytes', 'cpu_bytes']) {
    if (result[key] !== undefined) add('figure', key, '', result[key]);
  }
  for (const [k, v] of Object.entries(result.cpu ?? {})) add('cpu', k, '', v);
  if (result.minimum_devices !== undefined) add('figure', 'minimum_devices', '', result.minimum_devices);
  for (const [k, v] of Object.entries(result.moments ?? {})) add('moment', k, '', v);
  for (const s of result.stages ?? []) {
    for (const [k, v] of Object.entries(s)) {
      if (k === 'stage') continue;
      if (v && typeof v === 'object') for (const [mk, mv] of Object.entries(v)) add('stage', String(s.stage), `${k}.${mk}`, mv);
      else add('stage', String(s.stage), k, v);
    }
  }
  for (const [k, v] of Object.entries(result.params ?? {})) add('params', k, '', v);
  return `${rows.map((r) => r.map(csvCell).join(',')).join('\n')}\n`;
}

/** The result as JSON: the inputs sent, the resolved config and the result (trace left out). */
export function resultJson(result, inputs, version) {
  const { trace, config, ...rest } = result;
  return `${JSON.stringify({ trainmem: version, inputs, resolved: config, result: rest }, null, 2)}\n`;
}

/** Offers a Blob as a download. */
export function download(name, blob) {
  const url = URL.createObjectURL(blob);
  const a = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A file name for the configuration: "llama-3.1-8b-tp2-pp1-dp4". */
export function fileStem(name, config) {
  const slug = String(name || 'trainmem').toLowerCase().replace(/[^a-z0-9.]+/g, '-').replace(/^-|-$/g, '');
  const p = (k) => config?.[k] ?? 1;
  // A LoRA or QLoRA run says so: two exports of one model, full and QLoRA, are two files.
  const method = config?.peft === 'lora' || config?.peft === 'qlora' ? `-${config.peft}` : '';
  return `${slug}${method}-tp${p('tensor_model_parallel_size')}-pp${p('pipeline_model_parallel_size')}-dp${p('data_parallel_size')}`;
}
