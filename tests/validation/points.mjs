// Validation points (points.json) run through the native CLI: the trainmem profile on the
// figure that matches each measurement's metric and rank, and the two reference profiles on the
// same model and layout. Shared by validate.mjs (the table) and accuracy.test.mjs (the targets).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url).pathname;
export const cli = `${root}build/core/cli/trainmem`;

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const unit_bytes = { B: 1, MiB, GiB };

// Builds the native CLI when it is missing (same commands as npm run build:native).
export function ensure_cli() {
  if (existsSync(cli)) return;
  for (const args of [['-S', '.', '-B', 'build', '-DCMAKE_BUILD_TYPE=Release'], ['--build', 'build', '-j2']]) {
    const r = spawnSync('cmake', args, { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`cmake ${args.join(' ')} failed`);
  }
}

function run(config) {
  const r = spawnSync(cli, ['estimate', '-'], { input: JSON.stringify(config), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`trainmem estimate failed (${r.status}): ${r.stderr.trim()}`);
  return JSON.parse(r.stdout);
}

// The fields only the trainmem profile reads (the reference profiles reject them).
function trainmem_only_fields() {
  const r = spawnSync(cli, ['fields'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`trainmem fields failed: ${r.stderr}`);
  return new Set(JSON.parse(r.stdout).filter((f) => f.trainmem_only).map((f) => f.name));
}

export function load_points() {
  const data = JSON.parse(readFileSync(new URL('points.json', import.meta.url), 'utf8'));
  const expand = (config) => {
    const { $base = [], ...own } = config;
    const out = {};
    for (const name of $base) {
      if (!data.bases[name]) throw new Error(`unknown base ${name}`);
      Object.assign(out, data.bases[name]);
    }
    return Object.assign(out, own);
  };
  return data.points.map((p) => ({ ...p, config: expand(p.config) }));
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

// One row per point: measured bytes, trainmem's figure and both references', signed errors.
export function evaluate(points = load_points()) {
  ensure_cli();
  const only = trainmem_only_fields();
  return points.map((p) => {
    const measured = p.measured.value * unit_bytes[p.measured.unit];
    const trainmem = pick(run(p.config), p.compare);
    const reference = Object.fromEntries(
      Object.entries(p.config).filter(([name]) => !only.has(name) && name !== 'profile'));
    Object.assign(reference, p.reference?.overrides ?? {});
    const error = (estimate) => (estimate - measured) / measured;
    const bridge = run({ ...reference, profile: 'megatron-bridge' }).total_bytes;
    const lm = run({ ...reference, profile: 'megatron-lm' }).total_bytes;
    return {
      id: p.id, origin: p.origin, compare: p.compare, measured, trainmem, bridge, lm,
      configuration: configuration_key(p),
      error: { trainmem: error(trainmem), bridge: error(bridge), lm: error(lm) },
    };
  });
}

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
  for (const r of rows) {
    if (!groups.has(r.configuration)) groups.set(r.configuration, []);
    groups.get(r.configuration).push(r);
  }
  const worst = (list, key) =>
    list.reduce((w, r) => (Math.abs(r.error[key]) > Math.abs(w) ? r.error[key] : w), 0);
  return [...groups.values()].map((list) => ({
    id: list.map((r) => r.id).join(' = '), origin: list[0].origin,
    error: { trainmem: worst(list, 'trainmem'), bridge: worst(list, 'bridge'), lm: worst(list, 'lm') },
  }));
}

function median(values) {
  const v = [...values].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Median and maximum absolute error and the share of points within `band` (0.15), per profile.
export function summarize(rows, band = 0.15) {
  const out = {};
  for (const profile of ['trainmem', 'bridge', 'lm']) {
    const abs = rows.map((r) => Math.abs(r.error[profile]));
    out[profile] = {
      median: median(abs),
      max: Math.max(...abs),
      within: abs.filter((e) => e <= band).length / abs.length,
    };
  }
  return out;
}

export const gib = (bytes) => bytes / GiB;
