// The trainmem profile against published measurements (points.json, the data `npm run validate`
// prints): the targets of issue 5, item 6, on the figure and rank each measurement reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, load_points, summarize } from './points.mjs';

// Issue 5's targets are a median absolute error of 5 % and 90 % of points within 15 %. The median
// target is met (4.7 % on 55 points); the share within 15 % is NOT (82 %; README, "Accuracy
// against measured runs", lists the misses). The median is held to its target; the share is
// guarded at what was measured so accuracy cannot silently get worse: tighten it as the model
// improves, up to the target.
const MEDIAN_TARGET = 0.05;
const WITHIN_TARGET = 0.9;
const MEDIAN_GUARD = MEDIAN_TARGET;  // median absolute error must not exceed this
const BAND = 0.15;                   // a point is close when its absolute error is within this
const WITHIN_GUARD = 0.81;           // share of points that must stay close

const FIGURES = new Set(['allocated', 'reserved', 'device']);
const STAGES = new Set(['first', 'last', 'max']);

const points = load_points();
const rows = evaluate(points);
const summary = summarize(rows, BAND);
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

test(`trainmem's median absolute error stays at most ${pct(MEDIAN_GUARD)} (target ${pct(MEDIAN_TARGET)})`, () => {
  assert.ok(summary.trainmem.median <= MEDIAN_GUARD,
            `median |error| ${pct(summary.trainmem.median)} over ${rows.length} points`);
});

test(`at least ${pct(WITHIN_GUARD)} of points stay within ${pct(BAND)} (target ${pct(WITHIN_TARGET)})`, () => {
  const misses = rows.filter((r) => Math.abs(r.error.trainmem) > BAND)
    .map((r) => `${r.id} ${r.error.trainmem >= 0 ? '+' : ''}${pct(r.error.trainmem)}`);
  assert.ok(summary.trainmem.within >= WITHIN_GUARD,
            `${pct(summary.trainmem.within)} within ${pct(BAND)}; misses: ${misses.join(', ')}`);
});

test('trainmem is closer than both reference profiles on the median', () => {
  assert.ok(summary.trainmem.median < summary.bridge.median && summary.trainmem.median < summary.lm.median);
});
