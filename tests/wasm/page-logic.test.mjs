// Pure page logic that needs no browser: the preset search, the import-kind detection, and what
// the page, the embed view and the element share (the palette, the verdict, the headline figure
// and the overhead rows).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { filterPresets, sizeText } from '../../web/js/preset-picker.js';
import { detectKind } from '../../web/js/import-panel.js';
import { PALETTE, paletteDeclarations } from '../../web/js/palette.js';
import { CATEGORIES, FIGURES, PARTS, TERMS, classBytes, comparePairs, confidenceOf, figureRows, headlineOf, markHeadline, overheadLines, segmentsOf, stageSeries } from '../../web/js/results.js';
import { methodText, resultCsv } from '../../web/js/share.js';
import { verdictOf } from '../../web/js/verdict.js';
import { SINGLE_GPU, loadEngine } from './load.mjs';
import { parseCsv } from '../web/csv.mjs';

const engine = await loadEngine();
const ids = (q) => filterPresets(engine.presets, q).map((p) => p.id);

test('preset search: words match at the start of a word, all tokens must match', () => {
  assert.deepEqual(ids('llama 3.1'), ['llama-3.1-8b', 'llama-3.1-70b', 'llama-3.1-405b']);
  assert.ok(ids('7b').includes('mistral-7b-v0.1'));
  assert.ok(!ids('7b').includes('gemma-2-27b'), '"7b" must not find 27B');
  assert.deepEqual(ids('deepseek mla'), ['deepseek-v2-lite', 'deepseek-v3']);
  assert.equal(ids('').length, engine.presets.length);
  assert.deepEqual(ids('no-such-model'), []);
});

test('preset search: sizes as comparisons, ranges and approximate counts', () => {
  for (const id of ids('<4b')) assert.ok(engine.presets.find((p) => p.id === id).published_params.total < 4e9, id);
  assert.ok(ids('>=400b').includes('llama-3.1-405b') && ids('>=400b').includes('deepseek-v3'));
  assert.ok(ids('1t').length === 0);
  assert.ok(ids('7-9b').includes('llama-3.1-8b') && !ids('7-9b').includes('llama-2-13b'));
  assert.ok(ids('moe').every((id) => engine.presets.find((p) => p.id === id).config.num_moe_experts > 0));
  assert.match(sizeText(engine.presets.find((p) => p.id === 'mixtral-8x7b')), /^46\.70 B params, 12\.90 B active$/);
});

test('import kind: a JSON object is a config.json, anything else Megatron arguments', () => {
  assert.equal(detectKind('{"model_type": "llama"}'), 'hf');
  assert.equal(detectKind('  {"model_type": '), 'hf');
  assert.equal(detectKind('torchrun pretrain_gpt.py --num-layers 2'), 'megatron');
  assert.equal(detectKind('--num-layers 2'), 'megatron');
  // Megatron-LM's functional-test config: YAML whose MODEL_ARGS the core reads as the launch command.
  assert.equal(detectKind('ENV_VARS:\n  NVTE_FUSED_ATTN: 0\nMODEL_ARGS:\n  --num-layers: 12\n'), 'megatron-args');
  // ms-swift's Megatron-SWIFT: a script whose command is `megatron sft`, its NAME=value lines and
  // continuations included; the words only in a comment are not the command.
  assert.equal(detectKind('# 8 * 65GiB\nNPROC_PER_NODE=8 \\\nCUDA_VISIBLE_DEVICES=0,1 \\\nmegatron sft \\\n    --load Qwen2.5-14B-mcore \\\n    --packing true'), 'ms-swift-megatron');
  assert.equal(detectKind('NPROC_PER_NODE=4 megatron sft --model Qwen/Qwen3-8B'), 'ms-swift-megatron');
  assert.equal(detectKind('# not megatron sft here\n--num-layers 2'), 'megatron');
});

// ---- what the page, the embed view and the element share: palette and verdict ----

const css = await readFile(new URL('../../web/css/app.css', import.meta.url), 'utf8');
const elementSource = await readFile(new URL('../../web/js/trainmem-element.js', import.meta.url), 'utf8');
/** "--name: value;" declarations of a CSS text, as a map. */
const declarations = (text) => new Map([...text.matchAll(/(--[\w-]+):\s*([^;]+);/g)].map((m) => [m[1], m[2].trim()]));

test('palette: both schemes name the same colours, and every colour a view draws is in it', () => {
  assert.deepEqual(Object.keys(PALETTE.dark), Object.keys(PALETTE.light));
  const drawn = new Set();
  const collect = (name) => { drawn.add(name); return '#000'; };
  const result = engine.estimate({ ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, ...SINGLE_GPU, pipeline_model_parallel_size: 2 });
  assert.ok(result.ok);
  segmentsOf(result, () => [], 'device', collect);
  stageSeries(result, 'device', collect);
  for (const row of figureRows(result)) collect(row.color);
  for (const name of drawn) assert.ok(name.startsWith('--c-') && name.slice(4) in PALETTE.light, name);
  assert.match(paletteDeclarations('dark'), /^--c-weights-dense: #[0-9a-f]{6};/);
});

test('palette: written once; app.css and the element only use it', () => {
  for (const [file, text] of [['app.css', css], ['trainmem-element.js', elementSource]]) {
    assert.deepEqual([...declarations(text).keys()].filter((name) => name.startsWith('--c-')), [], `${file} defines category colours`);
  }
});

test("the element's chrome colours are app.css's, light and dark", () => {
  const block = (text, start) => text.slice(text.indexOf(start), text.indexOf('}', text.indexOf(start)));
  const page = { light: declarations(block(css, ':root {')), dark: declarations(block(css, ':root[data-theme="dark"] {')) };
  const element = {
    light: declarations(/const CHROME_LIGHT = `([^`]*)`/.exec(elementSource)[1]),
    dark: declarations(/const CHROME_DARK = `([^`]*)`/.exec(elementSource)[1]),
  };
  for (const scheme of ['light', 'dark']) {
    assert.ok(element[scheme].size > 10, scheme);
    for (const [name, value] of element[scheme]) assert.equal(value, page[scheme].get(name), `${scheme} ${name}`);
  }
});

test("verdict: the core's fit for the figure on screen, in one wording for every view; none without a capacity", () => {
  // A hand-built verdict (core fit_verdict's fields) for each state, so the words are checked
  // apart from the core's thresholds (tested natively in tests/core/verdict.test.cpp).
  const GiB = 2 ** 30;
  const result = (fit, reason, figure, spread = 0.2) => ({
    ok: true, verdicts: { device: { fit, reason, figure_bytes: figure * GiB, capacity_bytes: 80 * GiB, headroom: 0.1, spread,
      limit_bytes: 72 * GiB, upper_bytes: figure * (1 + spread) * GiB } },
  });
  const device = { key: 'device' };
  assert.deepEqual(verdictOf(result('fits', 'none', 60), device, 'GiB'),
    { fit: 'fits', used: 0.75, text: 'Fits · 20.00 GiB headroom (75 % used)', short: 'fits' });
  assert.equal(verdictOf(result('tight', 'headroom', 79.06), device, 'GiB').text,
    'Tight · 99 % used: within the 10 % kept free for the caching allocator, longer samples and checkpoint saves');
  // 70 GiB · 1.35 = 94.5 GiB: below the headroom line, but the spread crosses 80 GiB.
  assert.equal(verdictOf(result('tight', 'spread', 70, 0.35), device, 'GiB').text,
    'Tight · 88 % used, but runs like this landed within ±35 %: up to 94.50 GiB, over the capacity');
  assert.equal(verdictOf(result('over', 'none', 100), device, 'GiB').text, 'Does not fit · 20.00 GiB over (125 % of capacity)');
  assert.equal(verdictOf(result('fits', 'none', 60), { key: 'reserved' }, 'GiB'), null, 'no verdict for a figure the core did not judge');
  assert.equal(verdictOf({ ok: true }, device, 'GiB'), null, 'no capacity: no verdict');
  assert.equal(verdictOf(null, device, 'GiB'), null);
});

test('verdict: the core judges every figure against the capacity, and the page words the one on screen', () => {
  const GiB = 2 ** 30;
  const config = { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, ...SINGLE_GPU, seq_length: 4096, micro_batch_size: 1 };
  const r = engine.estimate({ ...config, gpu_memory_bytes: 80 * GiB });
  assert.deepEqual(Object.keys(r.verdicts), ['allocated', 'reserved', 'device']);
  for (const key of Object.keys(r.verdicts)) {
    const v = r.verdicts[key];
    assert.equal(v.figure_bytes, r[`${key}_bytes`], key);
    // Independent of the core: the three states from the figure, the 10 % headroom and the spread.
    const expected = v.figure_bytes > 80 * GiB ? 'over'
      : v.figure_bytes > 72 * GiB || v.figure_bytes * (1 + r.confidence.p90_abs_error) > 80 * GiB ? 'tight' : 'fits';
    assert.equal(v.fit, expected, key);
  }
  assert.equal(engine.estimate(config).verdicts, undefined, 'no capacity, no verdicts');
});

// ---- the headline and the overhead rows (issue 15, items 1 and 3) ----

const trainmemResult = engine.estimate({ ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, ...SINGLE_GPU,
  tensor_model_parallel_size: 2, data_parallel_size: 4, gpu_memory_bytes: 80 * 2 ** 30 });

test("headline: the picked figure's bytes as a whole number; total for the reference profiles; none without a result", () => {
  const r = trainmemResult;
  assert.ok(r.ok && !Number.isInteger(r.reserved_bytes), 'the case needs a fractional figure');
  assert.deepEqual(headlineOf(r, 'reserved'), { key: 'reserved', label: 'reserved', bytes: Math.round(r.reserved_bytes) });
  assert.equal(headlineOf(r, 'nonsense').key, 'device');
  const ref = engine.estimate({ ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, ...SINGLE_GPU, profile: 'megatron-bridge' });
  assert.deepEqual(headlineOf(ref, 'device'), { key: 'total', label: 'total', bytes: Math.round(ref.total_bytes) });
  assert.equal(headlineOf({ ok: false, issues: [] }), null);
  const node = { dataset: {} };
  markHeadline(node, { key: 'device', bytes: 1e21 });
  assert.deepEqual(node.dataset, { bytes: '1000000000000000000000', figure: 'device' });
  markHeadline(node, null);
  assert.deepEqual(node.dataset, {});
});

test("overhead rows are the core's lines: they stack from allocated to reserved to device, the workspaces are no row", () => {
  const r = trainmemResult;
  const lines = overheadLines(r, 'device');
  assert.deepEqual(lines.map((o) => [o.key, o.adds_to]), r.overheads.lines.map((o) => [o.key, o.adds_to]));
  assert.ok(!lines.some((o) => /workspace/.test(o.key)), 'a workspace row');
  const sum = (figure) => lines.filter((o) => o.adds_to === figure).reduce((s, o) => s + o.bytes, 0);
  assert.ok(Math.abs(r.allocated_bytes + sum('reserved') - r.reserved_bytes) < 1e-3);
  assert.ok(Math.abs(r.reserved_bytes + sum('device') - r.device_bytes) < 1e-3);
  for (const figure of ['allocated', 'reserved', 'device']) {
    const included = overheadLines(r, figure).filter((o) => o.included).map((o) => o.key);
    assert.deepEqual(included, lines.filter((o) => ['reserved', 'device'].indexOf(o.adds_to) < ['allocated', 'reserved', 'device'].indexOf(figure)).map((o) => o.key), figure);
    // The chart's segments (and the element's rows) add up to the figure shown.
    const total = segmentsOf(r, () => [], figure, (c) => c).reduce((s, seg) => s + seg.bytes, 0);
    assert.ok(Math.abs(total - r[`${figure}_bytes`]) < 1e-3, `${figure}: segments ${total}, figure ${r[`${figure}_bytes`]}`);
  }
});

test('an overhead line the page does not know is still shown, by its key, in the fallback colour', () => {
  const r = structuredClone(trainmemResult);
  r.overheads.lines.push({ key: 'cuda_graphs', bytes: 2 ** 20, adds_to: 'device' });
  const line = overheadLines(r, 'device').at(-1);
  assert.deepEqual([line.key, line.label, line.color, line.included], ['cuda_graphs', 'cuda_graphs', '--c-overhead', true]);
  assert.equal(overheadLines(r, 'reserved').at(-1).included, false);
  assert.ok(segmentsOf(r, () => [], 'device', (c) => c).some((s) => s.label === 'cuda_graphs' && s.bytes === 2 ** 20));
});

test('the rows of a figure add up to it, each overhead line its own row, in every figure and profile', () => {
  const ref = engine.estimate({ ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, ...SINGLE_GPU, profile: 'megatron-bridge' });
  for (const [r, figures] of [[trainmemResult, ['allocated', 'reserved', 'device']], [ref, ['device']]]) {
    for (const figure of figures) {
      const rows = figureRows(r, figure);
      const headline = headlineOf(r, figure);
      const sum = rows.reduce((s, row) => s + row.bytes, 0);
      assert.ok(Math.abs(sum - headline.bytes) < 1, `${r.profile} ${figure}: rows ${sum}, figure ${headline.bytes}`);
      assert.deepEqual(rows.filter((row) => row.line).map((row) => row.key), overheadLines(r, figure).filter((o) => o.included).map((o) => o.key));
    }
  }
});

test('compare: a full fine-tune pinned beside a LoRA run pairs each row with its own kind, not by position', () => {
  const base = { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, ...SINGLE_GPU, framework: 'fsdp2', data_parallel_size: 8 };
  const full = engine.estimate(base);
  const lora = engine.estimate({ ...base, peft: 'lora', lora_rank: 16 });
  assert.ok(full.ok && lora.ok);
  for (const [pinned, current] of [[full, lora], [lora, full]]) {
    const { rows, figures } = comparePairs(pinned, current);
    const of = (key) => rows.find((row) => row.key === key)?.bytes;
    // PEFT's classes are the LoRA run's only; activations are each run's own.
    const loraSide = pinned === lora ? 0 : 1;
    assert.deepEqual(of('frozen_weights'), loraSide ? [0, classBytes(lora, 'frozen_weights')] : [classBytes(lora, 'frozen_weights'), 0]);
    assert.ok(of('frozen_weights')[loraSide] > 0 && of('adapter_gradients')[loraSide] > 0);
    assert.deepEqual(of('activation'), [figureRows(pinned).find((r) => r.key === 'activation').bytes, figureRows(current).find((r) => r.key === 'activation').bytes]);
    assert.equal(new Set(rows.map((row) => row.key)).size, rows.length, 'a row twice');
    for (const i of [0, 1]) {
      const sum = rows.reduce((s, row) => s + row.bytes[i], 0);
      assert.ok(Math.abs(sum - figures[i].bytes) < 1, `side ${i}: rows ${sum}, figure ${figures[i].bytes}`);
    }
    assert.deepEqual(rows.slice(0, 6).map((row) => row.key), ['weights', 'weight_copies', 'gradients', 'master_weights', 'optimizer_states', 'buffers']);
  }
});

// ---- what a fine-tuner reads: the breakdown's terms, the method, the CSV (issue 32) ----

test('every term the breakdown can show has its one-line explanation', () => {
  const lines = [...(trainmemResult.overheads?.lines ?? []).map((o) => o.key), 'caching_allocator', 'cuda_context', 'nccl', 'paged_optimizer'];
  const keys = [...CATEGORIES.map((c) => c.key), ...PARTS.map((p) => p.key), 'activation', 'temporary', ...lines, ...Object.keys(FIGURES), 'total'];
  for (const key of keys) {
    assert.ok(typeof TERMS[key] === 'string' && TERMS[key].length >= 20 && !TERMS[key].includes('\n'), `no line for ${key}`);
  }
});

test('method: full-parameter or LoRA/QLoRA with its rank, the framework with its sharding, the recompute', () => {
  const base = { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, ...SINGLE_GPU };
  const method = (extra) => methodText(engine.estimate({ ...base, ...extra }));
  assert.equal(method({}), 'full-parameter training · Megatron · no recompute');
  assert.equal(method({ framework: 'fsdp2', data_parallel_size: 8, peft: 'lora', lora_rank: 16, recompute_granularity: 'full' }), 'LoRA rank 16 · FSDP2 (stage 3) · full recompute');
  assert.equal(method({ framework: 'fsdp2', peft: 'qlora', params_dtype: 'nf4', lora_rank: 8 }), 'QLoRA rank 8 (4-bit NF4 base) · FSDP2 (stage 3) · no recompute');
  assert.equal(method({ framework: 'deepspeed', zero_stage: 2, data_parallel_size: 4 }), 'full-parameter training · DeepSpeed ZeRO-2 · no recompute');
  assert.equal(method({ profile: 'megatron-lm' }), 'full-parameter training (megatron-lm estimator)');
  // torchtune has no DDP: the recipe it runs is the framework (framework-words.js RECIPE_WORDS).
  assert.equal(method({ framework: 'ddp', model_implementation: 'torchtune', peft: 'lora', lora_rank: 8, recompute_granularity: 'full' }),
    'LoRA rank 8 · torchtune single device recipe · full recompute');
  assert.equal(method({ framework: 'fsdp2', model_implementation: 'torchtune', data_parallel_size: 8, peft: 'lora', lora_rank: 16, recompute_granularity: 'full' }),
    'LoRA rank 16 · torchtune distributed recipe, FSDP2 (stage 3) · full recompute');
  assert.equal(method({ framework: 'ddp', peft: 'lora', lora_rank: 8 }), 'LoRA rank 8 · DDP · no recompute'); // the Trainer's
});

test('CSV: one table, whole bytes with their GiB, the run named first', () => {
  const r = trainmemResult;
  const conf = confidenceOf(r);
  const about = { model: 'Llama 3.1 8B', method: methodText(r), layout: '8 GPUs = TP 2 × PP 1 × CP 1 × DP 4', gpu: 'H100, "SXM"', capacity: 80 * 2 ** 30,
    figure: { ...headlineOf(r, 'reserved'), label: 'reserved' }, verdict: 'Fits', confidence: conf.text, confidenceGroup: conf.title, link: 'https://example.org/#v=1&tp=2', version: 'trainmem test' };
  const text = resultCsv(r, about);
  assert.ok(text.endsWith('\n') && !text.includes('\n\n'), 'a blank line splits the table');
  // Split as a CSV reader does: quoted cells hold commas and doubled quotes.
  const rows = parseCsv(text);
  assert.deepEqual(rows[0], ['section', 'name', 'part', 'value', 'unit', 'GiB']);
  for (const r6 of rows) assert.equal(r6.length, 6, r6.join('|'));
  const run = Object.fromEntries(rows.filter((x) => x[0] === 'run').map((x) => [x[1], x[3]]));
  assert.deepEqual(Object.keys(run).slice(0, 4), ['model', 'method', 'layout', 'gpu']);
  assert.equal(run.gpu, 'H100, "SXM"');
  assert.equal(run.confidence, conf.text);
  assert.equal(run.link, about.link);
  assert.equal(run.figure_bytes, String(Math.round(r.reserved_bytes)));
  assert.ok(rows.slice(1).findIndex((x) => x[0] !== 'run') >= 10 && rows.slice(1, 11).every((x) => x[0] === 'run'), 'the run comes first');
  const bytes = rows.filter((x) => x[4] === 'B');
  assert.ok(bytes.length > 40);
  for (const x of bytes) {
    assert.match(x[3], /^\d+$/, x.join('|'));
    assert.equal(x[5], (Number(x[3]) / 2 ** 30).toFixed(2), x.join('|'));
  }
  // The breakdown's class row is the class's parts summed (the core's PartBytes::total()).
  const weights = rows.find((x) => x[0] === 'breakdown' && x[1] === 'weights_bytes');
  const parts = r.state.weights;
  assert.equal(Number(weights[3]), parts.dense + parts.embedding + parts.expert);
  // A fractional figure is rounded to whole bytes, as the headline rounds it.
  assert.ok(!Number.isInteger(r.reserved_bytes));
  assert.equal(rows.find((x) => x[0] === 'figure' && x[1] === 'reserved_bytes')[3], String(Math.round(r.reserved_bytes)));
});

test('the planner says why no layout fits, from the search\'s counts (a newcomer\'s QA at stop 46)', async () => {
  const { noFitReason } = await import('../../web/js/plan-panel.js');
  const engine = await loadEngine();
  const llama8 = { ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, seq_length: 4096, micro_batch_size: 1 };
  // TP 8 held on 7 GPUs: no layout can be formed.
  const held = engine.plan({ ...llama8, tensor_model_parallel_size: 8 }, { gpus: 7, gpu_memory_bytes: 80e9, headroom: 0.1, max_results: 50, keep: ['tensor_model_parallel_size'] });
  assert.equal(held.n_fitting, 0);
  assert.match(noFitReason(held.stats, ['tensor_model_parallel_size']), /can be formed with tensor_model_parallel_size held/);
  // 405B on 8 GPUs of 80 GB: the model state alone is too large everywhere.
  const big = { ...engine.presets.find((p) => p.id === 'llama-3.1-405b').config, seq_length: 4096, micro_batch_size: 1 };
  const state = engine.plan(big, { gpus: 8, gpu_memory_bytes: 80e9, headroom: 0.1, max_results: 50, keep: [] });
  assert.equal(state.n_fitting, 0);
  assert.match(noFitReason(state.stats), /optimizer states alone exceed the limit on every layout/);
  // The activations' case and the rules' case, from counts.
  assert.match(noFitReason({ layouts: 4, candidates: 12, invalid: 2, pruned_by_state: 3 }), /with its activations/);
  assert.match(noFitReason({ layouts: 4, candidates: 12, invalid: 12, pruned_by_state: 0 }), /breaks a rule/);
});
