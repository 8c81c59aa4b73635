// The trainmem profile against published measurements (the data `npm run validate` prints):
// points.json held to the targets of issue 5, item 6, on the figure and rank each measurement
// reports; finetune-points.json (issue 13, item 9) held to what is true of it today: every point
// runs or is listed as not expressible with its reason, and the statistics are over the points
// that run. Its target (the same figures) is printed by validate, met or not, not asserted here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TABLES, by_configuration, evaluate, expressible, load_points, measured_bytes, summarize } from './points.mjs';
import { IMPORTER_TARGET, evaluate_importer, importer_summary } from './importer.mjs';

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

test('every point of points.json runs (none is left out of the statistics)', () => {
  assert.equal(expressible(rows).length, rows.length,
               rows.filter((r) => !r.error).map((r) => `${r.id}: ${(r.not_expressible ?? r.rejected).join(', ')}`).join('; '));
  assert.equal(summary.trainmem.points, points.length);
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

// The fine-tuning table (finetune-points.json).
const fine_points = load_points(TABLES.finetuning.file);
const fine = evaluate(fine_points);
const fine_summary = summarize(fine, BAND);
const fine_ran = expressible(fine);

test('fine-tuning: every point names its source, measurement, unit, compared figure and reasons', () => {
  const ids = new Set(points.map((p) => p.id));
  for (const p of fine_points) {
    assert.ok(!ids.has(p.id), `duplicate id ${p.id}`);
    ids.add(p.id);
    assert.match(p.source, /\S+\/\S+/, `${p.id}: source names no repository or path`);
    assert.ok(p.measured.value > 0 && p.measured.metric && p.measured.rank, `${p.id}: measurement incomplete`);
    assert.ok(measured_bytes(p) > 0, `${p.id}: unit`);
    // "GB" is read as 10^9 bytes; a point published in GB says what is known of the source's unit.
    if (p.measured.unit === 'GB') assert.ok(p.measured.unit_note, `${p.id}: GB without a unit_note`);
    assert.ok(FIGURES.has(p.compare.figure) && STAGES.has(p.compare.stage), `${p.id}: compare`);
    assert.equal(p.config.profile, 'trainmem', `${p.id}: not the trainmem profile`);
    assert.ok(Object.keys(p.why ?? {}).length > 0, `${p.id}: no justification`);
    assert.ok(p.reference?.note, `${p.id}: no note on the reference profiles' mapping`);
  }
});

test('fine-tuning: GB is 10^9 bytes and GiB 2^30', () => {
  assert.equal(measured_bytes({ id: 'x', measured: { value: 64, unit: 'GB' } }), 64e9);
  assert.equal(measured_bytes({ id: 'x', measured: { value: 60, unit: 'GiB' } }), 60 * 2 ** 30);
  assert.throws(() => measured_bytes({ id: 'x', measured: { value: 1, unit: 'gigs' } }), /unknown unit/);
});

test('fine-tuning: every point runs or is listed as not expressible yet, with the fields the CLI does not know', () => {
  assert.equal(fine.length, fine_points.length, 'a point was dropped');
  for (const [i, r] of fine.entries()) {
    assert.equal(r.id, fine_points[i].id);
    assert.equal(r.rejected, undefined, `${r.id}: the CLI rejects a config it should express: ${r.rejected?.join('; ')}`);
    if (r.not_expressible) {
      assert.ok(r.not_expressible.length > 0, `${r.id}: no reason`);
      for (const field of r.not_expressible)
        assert.ok(field in fine_points[i].config, `${r.id}: ${field} is not in the point's config`);
      assert.equal(r.error, undefined, `${r.id}: figures for a point that did not run`);
    } else {
      assert.ok(Number.isFinite(r.trainmem) && r.trainmem > 0, `${r.id}: trainmem`);
      assert.ok(Number.isFinite(r.bridge) && r.bridge > 0, `${r.id}: megatron-bridge`);
      assert.ok(Number.isFinite(r.lm) && r.lm > 0, `${r.id}: megatron-lm`);
    }
  }
});

test('fine-tuning: the statistics are computed over the points that run, and only those', () => {
  assert.equal(fine_summary.trainmem.points, fine_ran.length);
  assert.equal(fine_ran.length + fine.filter((r) => r.not_expressible).length, fine_points.length);
  if (fine_ran.length === 0) {
    assert.ok(Number.isNaN(fine_summary.trainmem.median) && Number.isNaN(fine_summary.trainmem.within),
              'no point runs: the statistics are n/a, not 0');
    return;
  }
  const abs = fine_ran.map((r) => Math.abs(r.error.trainmem)).sort((a, b) => a - b);
  assert.equal(fine_summary.trainmem.max, abs.at(-1));
  assert.equal(fine_summary.trainmem.within, abs.filter((e) => e <= BAND).length / abs.length);
  const m = abs.length >> 1;
  assert.equal(fine_summary.trainmem.median, abs.length % 2 ? abs[m] : (abs[m - 1] + abs[m]) / 2);
});

// Issue 14, item 5: the points whose framework has a config file record it. Every recorded point
// of both tables imports and lands where its hand mapping does (78 points: 4.1 % median, 91 %
// within 15 %, as by hand), so the importer shares the hand mapping's misses, which are issue 13's
// and whose target the validate report prints, met or not; the pretraining table's recorded
// points meet the targets (3.1 % median, 97 % within 15 % of 59 points).
test('every Megatron-LM CI point records its test config, and every recorded config names its source', () => {
  const all = [...load_points(), ...load_points(TABLES.finetuning.file)];
  for (const p of all) {
    if (/Megatron-LM tests\/functional_tests\/test_cases\//.test(p.source))
      assert.equal(p.framework_config?.kind, 'megatron-args', `${p.id}: its test case's model_config.yaml is not recorded`);
    if (p.framework_config) assert.ok(p.framework_config.source, `${p.id}: framework_config names no source`);
  }
});

const importer_rows = evaluate_importer();

test(`through the importer, points.json: median at most ${pct(IMPORTER_TARGET.median)} and ${pct(IMPORTER_TARGET.within)} within ${pct(BAND)}`, () => {
  const rows_here = importer_rows.filter((r) => r.table === 'points.json');
  const s = importer_summary(rows_here, 'importer', BAND);
  const misses = rows_here.filter((r) => !(Math.abs(r.importer) <= BAND)).map((r) => `${r.id} ${r.importer === null ? r.problem : pct(r.importer)}`);
  assert.ok(s.median <= IMPORTER_TARGET.median, `median ${pct(s.median)}`);
  assert.ok(s.within >= IMPORTER_TARGET.within, `${pct(s.within)} within; misses: ${misses.join('; ')}`);
});

test('through the importer, both tables: every recorded point imports and lands where its hand mapping does', () => {
  assert.ok(importer_rows.some((r) => r.id.startsWith('PEFT-')), 'the PEFT docs\' accelerate runs record their config');
  assert.ok(importer_rows.filter((r) => r.table === 'points.json').length >= 59, 'the pretraining table\'s configs');
  for (const r of importer_rows) {
    assert.notEqual(r.importer, null, `${r.id}: ${r.problem}`);
    // The same figure to a tenth of a percentage point: the importer reads what the hand did.
    assert.ok(Math.abs(r.importer - r.hand) < 1e-3, `${r.id}: by hand ${pct(r.hand)}, through the importer ${pct(r.importer)}`);
  }
});
