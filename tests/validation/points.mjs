// Validation points run through the native CLI: the trainmem profile on the figure that matches
// each measurement's metric and rank, and the two reference profiles on the same model and
// layout. Two tables: points.json (pretraining and full training, issue 5) and
// finetune-points.json (fine-tuning, issue 13). Shared by validate.mjs (the tables),
// accuracy.test.mjs (the targets) and confidence.mjs (the groups the core's results name).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url).pathname;
export const cli = `${root}build/core/cli/trainmem`;

const GiB = 2 ** 30;
const MiB = 2 ** 20;
// GB is 10^9 bytes, as the unit says. Some sources write "GB" where they may have meant GiB;
// each such point's measured.unit_note says what is known, and validate.mjs prints those notes
// under its table rather than reinterpreting the unit point by point.
const unit_bytes = { B: 1, MiB, GiB, MB: 1e6, GB: 1e9 };

// The tables, each with the file it reads and how validate.mjs names it.
export const TABLES = {
  pretraining: { file: 'points.json', title: 'pretraining and full-training points (points.json)' },
  finetuning: { file: 'finetune-points.json', title: 'fine-tuning points (finetune-points.json)' },
};

// Builds the native CLI when it is missing (same commands as npm run build:native).
export function ensure_cli() {
  if (existsSync(cli)) return;
  for (const args of [['-S', '.', '-B', 'build', '-DCMAKE_BUILD_TYPE=Release'], ['--build', 'build', '-j2']]) {
    const r = spawnSync('cmake', args, { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`cmake ${args.join(' ')} failed`);
  }
}

// The CLI's answer: {result} or {issues: ["field: message", ...]} (one per line on stderr).
function run_cli(config) {
  const r = spawnSync(cli, ['estimate', '-'], { input: JSON.stringify(config), encoding: 'utf8' });
  if (r.status === 0) return { result: JSON.parse(r.stdout) };
  const issues = r.stderr.split('\n').map((line) => line.trim()).filter(Boolean);
  if (r.status !== 2 || issues.length === 0) throw new Error(`trainmem estimate failed (${r.status}): ${r.stderr.trim()}`);
  return { issues };
}

function run(config) {
  const { result, issues } = run_cli(config);
  if (issues) throw new Error(`trainmem estimate rejected the config: ${issues.join('; ')}`);
  return result;
}

// The fields only the trainmem profile reads (the reference profiles reject them).
function trainmem_only_fields() {
  const r = spawnSync(cli, ['fields'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`trainmem fields failed: ${r.stderr}`);
  return new Set(JSON.parse(r.stdout).filter((f) => f.trainmem_only).map((f) => f.name));
}

/** The points of one table file, each config expanded from its $base entries. */
export function load_points(file = TABLES.pretraining.file) {
  const data = JSON.parse(readFileSync(new URL(file, import.meta.url), 'utf8'));
  const expand = (config) => {
    const { $base = [], ...own } = config;
    const out = {};
    for (const name of $base) {
      if (!data.bases[name]) throw new Error(`unknown base ${name}`);
      Object.assign(out, data.bases[name]);
    }
    return Object.assign(out, own);
  };
  return data.points.map((p) => ({ ...p, config: expand(p.config), table: file }));
}

/** The measurement in bytes (GB: 10^9, GiB: 2^30, ...); an unknown unit is an error, not NaN. */
export function measured_bytes(p) {
  const scale = unit_bytes[p.measured.unit];
  if (!scale) throw new Error(`${p.id}: unknown unit ${p.measured.unit}`);
  return p.measured.value * scale;
}

// The figure named by compare.figure on the stage named by compare.stage.
function pick(result, compare) {
  const key = `${compare.figure}_bytes`;
  if (compare.stage === 'max') return result[key];
  const stages = result.stages;
  if (!Array.isArray(stages) || stages.length === 0) return result[key];
  const stage = compare.stage === 'last' ? stages.at(-1) : stages[0];
  return stage[key];
}

// The recompute class of a resolved config, as the core's confidence groups have it
// (core/src/estimate/confidence.cpp): torchtitan's selective_op is selective.
const RECOMPUTE_CLASS = { none: 'none', selective: 'selective', selective_op: 'selective', full: 'full' };

/**
 * The validation group a resolved config (a result's "config") falls in: framework, PEFT, recompute
 * (the core's confidence groups), and the training method (full, lora, qlora) and whether the model
 * is a mixture of experts (the groups validate.mjs prints signed errors for).
 */
export function group_key(config) {
  const recompute = RECOMPUTE_CLASS[config.recompute_granularity];
  if (!recompute) throw new Error(`unknown recompute_granularity ${config.recompute_granularity}`);
  const method = config.peft == null ? 'none' : config.peft;
  return { framework: config.framework, peft: method !== 'none', recompute,
           method, moe: (config.num_moe_experts ?? 0) > 0 };
}

// A rejected config: the fields the CLI does not know ("not expressible yet"), or, when it knows
// every field, the messages (a config trainmem should express but refuses: a defect).
function rejection(issues) {
  const unknown = issues.map((line) => /^(.+?): unknown field(?:;|$)/.exec(line)?.[1]).filter(Boolean);
  return unknown.length > 0 ? { not_expressible: unknown, issues } : { rejected: issues };
}

// One row per point: measured bytes, trainmem's figure and both references', signed errors, and
// the point's validation group. A point the CLI rejects keeps its row, with not_expressible (the
// fields the CLI does not know yet) or rejected (its messages) instead of figures: no point is
// dropped. `references: false` skips the two reference profiles.
export function evaluate(points = load_points(), { references = true } = {}) {
  ensure_cli();
  const only = trainmem_only_fields();
  return points.map((p) => {
    const measured = measured_bytes(p);
    const row = { id: p.id, origin: p.origin, table: p.table, compare: p.compare, measured,
                  configuration: configuration_key(p) };
    const own = run_cli(p.config);
    if (own.issues) return Object.assign(row, rejection(own.issues));
    const trainmem = pick(own.result, p.compare);
    const error = (estimate) => (estimate - measured) / measured;
    Object.assign(row, { trainmem, key: group_key(own.result.config), error: { trainmem: error(trainmem) } });
    if (!references) return row;
    const reference = Object.fromEntries(
      Object.entries(p.config).filter(([name]) => !only.has(name) && name !== 'profile'));
    Object.assign(reference, p.reference?.overrides ?? {});
    const bridge = run({ ...reference, profile: 'megatron-bridge' }).total_bytes;
    const lm = run({ ...reference, profile: 'megatron-lm' }).total_bytes;
    return Object.assign(row, { bridge, lm, error: { trainmem: error(trainmem), bridge: error(bridge), lm: error(lm) } });
  });
}

/** The rows that have figures (the point ran), which every statistic is computed over. */
export const expressible = (rows) => rows.filter((r) => r.error !== undefined);

// What the estimator sees of a point: its expanded configuration and the figure and stage compared
// (keys sorted, so the order fields were written in does not matter).
function configuration_key(p) {
  const sorted = Object.fromEntries(Object.entries(p.config).sort(([a], [b]) => (a < b ? -1 : 1)));
  return JSON.stringify([sorted, p.compare.figure, p.compare.stage]);
}

// One row per distinct configuration: points that differ only in what no field expresses (sibling
// CI cases, reruns, the same script on other hardware) are one configuration, and its error is its
// worst point's, so a setup measured twice counts once and a miss is never averaged away.
export function by_configuration(rows) {
  const groups = new Map();
  for (const r of expressible(rows)) {
    if (!groups.has(r.configuration)) groups.set(r.configuration, []);
    groups.get(r.configuration).push(r);
  }
  const worst = (list, key) =>
    list.reduce((w, r) => (Math.abs(r.error[key]) > Math.abs(w) ? r.error[key] : w), 0);
  return [...groups.values()].map((list) => ({
    id: list.map((r) => r.id).join(' = '), origin: list[0].origin,
    error: Object.fromEntries(Object.keys(list[0].error).map((key) => [key, worst(list, key)])),
  }));
}

export function median(values) {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The 90th percentile by nearest rank: the smallest value that at least 90 % of the values do not
// exceed, so "within ±p90" holds for at least 90 % of the points.
export function p90(values) {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v[Math.ceil(0.9 * v.length) - 1];
}

// Median and maximum absolute error and the share of points within `band` (0.15), per profile,
// over the expressible rows (NaN when there are none).
export function summarize(rows, band = 0.15) {
  const out = {};
  const ran = expressible(rows);
  for (const profile of ['trainmem', 'bridge', 'lm']) {
    const abs = ran.filter((r) => r.error[profile] !== undefined).map((r) => Math.abs(r.error[profile]));
    out[profile] = {
      points: abs.length,
      median: median(abs),
      max: abs.length ? Math.max(...abs) : NaN,
      within: abs.length ? abs.filter((e) => e <= band).length / abs.length : NaN,
    };
  }
  return out;
}

export const gib = (bytes) => bytes / GiB;

// The groups issue 29 holds to "no median signed error below -3 %": the training method (full
// parameters, LoRA, QLoRA), mixture-of-experts models, and each framework. A point counts in its
// method's group, in the MoE group when its model has experts, and in its framework's group.
export const LEANS_LOW = -0.03;
const METHOD_GROUPS = [['full', 'full-parameter'], ['lora', 'LoRA'], ['qlora', 'QLoRA']];

/**
 * Per group, over the rows that ran (trainmem profile): {group, points, median_abs, median_signed,
 * within (share within `band`), leans_low (median signed error below LEANS_LOW)}. Groups with no
 * point are listed with points 0 and NaN figures, so a missing group shows.
 */
export function signed_groups(rows, band = 0.15) {
  const ran = expressible(rows);
  const frameworks = [...new Set(ran.map((r) => r.key.framework))].sort();
  const groups = [
    ...METHOD_GROUPS.map(([method, label]) => [label, (r) => r.key.method === (method === 'full' ? 'none' : method)]),
    ['MoE', (r) => r.key.moe],
    ...frameworks.map((f) => [`framework ${f}`, (r) => r.key.framework === f]),
  ];
  return groups.map(([group, member]) => {
    const errors = ran.filter(member).map((r) => r.error.trainmem);
    const median_signed = median(errors);
    return {
      group, points: errors.length,
      median_abs: median(errors.map(Math.abs)),
      median_signed,
      within: errors.length ? errors.filter((e) => Math.abs(e) <= band).length / errors.length : NaN,
      leans_low: median_signed < LEANS_LOW,
    };
  });
}
