// The validation groups compiled into the core (core/src/estimate/confidence_table.inc) are what
// the current validation computes (so the "runs like this landed within ±N %" a result shows
// cannot rot), and the core files each point into the group the validation does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { LEANS_LOW, TABLES, cli, expressible, load_points, median } from './points.mjs';
import { WRITE_COMMAND, committed_confidence, confidence_groups, confidence_source, evaluate_all } from './confidence.mjs';

const rows = evaluate_all();
const groups = confidence_groups(rows);
const MIN_POINTS = 3;  // k_confidence_min_points (core/include/trainmem/estimate.hpp)

test('the committed table is what the current validation computes', () => {
  assert.equal(committed_confidence(), confidence_source(rows),
               `core/src/estimate/confidence_table.inc is stale: run \`${WRITE_COMMAND}\` and rebuild`);
});

test('each group\'s median signed error is the median of its points\' signed errors, within its |error| median', () => {
  // Recomputed here from the rows, independently of confidence_groups: the widest group's and
  // each training kind's (the core's fallbacks).
  const ran = expressible(rows);
  const check = (framework, training, members) => {
    const g = groups.find((x) => x.framework === framework && x.training === training && x.recompute === 'any');
    assert.ok(g, `${framework}|${training}`);
    assert.equal(g.median_signed, Number(median(members.map((r) => r.error.trainmem)).toFixed(5)));
    assert.ok(Math.abs(g.median_signed) <= g.p90 + 1e-12);
  };
  check('any', 'any', ran);
  check('any', 'peft', ran.filter((r) => r.key.peft));
  check('any', 'full-parameter', ran.filter((r) => !r.key.peft));
});

test('every group has points, a median no larger than its 90th percentile, and the widest holds every point that runs', () => {
  for (const g of groups) {
    assert.ok(g.points > 0 && g.median <= g.p90, JSON.stringify(g));
  }
  const all = groups.find((g) => g.framework === 'any' && g.training === 'any' && g.recompute === 'any');
  assert.equal(all.points, expressible(rows).length);
});

test("the CLI names, for each point that runs, its own group's figures when that group has enough points", () => {
  const points = Object.values(TABLES).flatMap((t) => load_points(t.file));
  const byId = new Map(points.map((p) => [p.id, p]));
  let exact = 0;
  for (const r of expressible(rows)) {
    const out = spawnSync(cli, ['estimate', '-'], { input: JSON.stringify(byId.get(r.id).config), encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    const { confidence } = JSON.parse(out.stdout);
    assert.equal(confidence.source, 'npm run validate');
    const own = groups.find((g) => g.framework === r.key.framework && g.recompute === r.key.recompute
      && g.training === (r.key.peft ? 'peft' : 'full-parameter'));
    assert.ok(own, `${r.id}: no group of its own`);
    if (own.points >= MIN_POINTS) {
      assert.equal(confidence.match, 'exact', `${r.id}: ${confidence.group}`);
      assert.deepEqual([confidence.points, confidence.median_abs_error, confidence.p90_abs_error,
                        confidence.median_signed_error], [own.points, own.median, own.p90, own.median_signed], r.id);
      // Issue 29, item 8: the result says when its group leans low (median signed error below -3 %).
      assert.equal(confidence.leans_low, own.median_signed < LEANS_LOW, r.id);
      assert.equal(confidence.group, confidence.run_group);
      exact += 1;
    } else {
      assert.notEqual(confidence.match, 'exact', r.id);
      assert.ok(confidence.points >= MIN_POINTS && confidence.points > own.points, r.id);
      assert.ok(groups.some((g) => g.points === confidence.points && g.median === confidence.median_abs_error
        && g.p90 === confidence.p90_abs_error && g.median_signed === confidence.median_signed_error
        && (g.median_signed < LEANS_LOW) === confidence.leans_low), `${r.id}: figures of no group`);
    }
  }
  assert.ok(exact > 0);
});
