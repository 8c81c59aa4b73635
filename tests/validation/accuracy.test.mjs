// The trainmem profile against published measurements (points.json, the data `npm run validate`
// prints): the targets of issue 5, item 6, on the figure and rank each measurement reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { by_configuration, evaluate, load_points, summarize } from './points.mjs';

// Issue 5's targets are a median absolute error of 5 % and 90 % of points within 15 %. Both are
// met on the 75 points (3.7 % median, 91 % within) and on the 61 distinct configurations (points
// the estimator cannot tell apart merged, the worst error kept: 90 % within), so both are held to
// the targets on both counts; README, "Accuracy against measured runs", lists the misses.
const MEDIAN_TARGET = 0.05;
const WITHIN_TARGET = 0.9;
const BAND = 0.15;  // a point is close when its absolute error is within this

const FIGURES = new Set(['allocated', 'reserved', 'device']);
const STAGES = new Set(['first', 'last', 'max']);

const points = load_points();
const rows = evaluate(points);
const summary = summarize(rows, BAND);
const configurations = by_configuration(rows);
const per_configuration = summarize(configurations, BAND);
const pct = (e) => `${(100 * e).toFixed(1)} %`;

test('every point names its source, metric, rank, compared figure and reasons', () => {
  const ids = new Set();
  for (const p of points) {
    assert.ok(!ids.has(p.id), `duplicate id ${p.id}`);
    ids.add(p.id);
    assert.match(p.source, /\S+\/\S+/, `${p.id}: source names no repository or path`);
    assert.ok(p.measured.value > 0 && p.measured.metric && p.measured.rank, `${p.id}: measurement incomplete`);
    assert.ok(FIGURES.has(p.compare.figure) && STAGES.has(p.compare.stage), `${p.id}: compare`);
    assert.equal(p.config.profile, 'trainmem', `${p.id}: not the trainmem profile`);
    assert.ok(Object.keys(p.why ?? {}).length > 0, `${p.id}: no justification`);
    assert.ok(p.reference?.note, `${p.id}: no note on the reference profiles' mapping`);
  }
});

test('the reference profiles are evaluated on every point', () => {
  for (const r of rows) {
    assert.ok(Number.isFinite(r.bridge) && r.bridge > 0, `${r.id}: megatron-bridge`);
    assert.ok(Number.isFinite(r.lm) && r.lm > 0, `${r.id}: megatron-lm`);
  }
});

test(`trainmem's median absolute error is at most ${pct(MEDIAN_TARGET)}`, () => {
  assert.ok(summary.trainmem.median <= MEDIAN_TARGET,
            `median |error| ${pct(summary.trainmem.median)} over ${rows.length} points`);
  assert.ok(per_configuration.trainmem.median <= MEDIAN_TARGET,
            `median |error| ${pct(per_configuration.trainmem.median)} over ${configurations.length} configurations`);
});

const misses = (list) => list.filter((r) => Math.abs(r.error.trainmem) > BAND)
  .map((r) => `${r.id} ${r.error.trainmem >= 0 ? '+' : ''}${pct(r.error.trainmem)}`).join(', ');

test(`at least ${pct(WITHIN_TARGET)} of points are within ${pct(BAND)}`, () => {
  assert.ok(summary.trainmem.within >= WITHIN_TARGET,
            `${pct(summary.trainmem.within)} within ${pct(BAND)}; misses: ${misses(rows)}`);
});

test(`at least ${pct(WITHIN_TARGET)} of distinct configurations are within ${pct(BAND)} at their worst point`, () => {
  assert.ok(configurations.length < rows.length, 'some points share a configuration');
  assert.ok(per_configuration.trainmem.within >= WITHIN_TARGET,
            `${pct(per_configuration.trainmem.within)} within ${pct(BAND)}; misses: ${misses(configurations)}`);
});

test('trainmem is closer than both reference profiles on the median', () => {
  assert.ok(summary.trainmem.median < summary.bridge.median && summary.trainmem.median < summary.lm.median);
});
