// npm run validate: every point of both tables (points.json, finetune-points.json) through the
// native CLI, compared with its measurement; prints a Markdown table per table, the summary per
// profile, both tables' targets, and the validation groups trainmem's results name (confidence).
// Prints figures, exits 0.
//   npm run validate -- --write-confidence   also writes the groups into the core
//                                            (core/src/estimate/confidence_table.inc)
import { LEANS_LOW, TABLES, by_configuration, evaluate, expressible, gib, load_points, signed_groups, summarize } from './points.mjs';
import { CONFIDENCE_FILE, WRITE_COMMAND, confidence_groups, write_confidence } from './confidence.mjs';

const write = process.argv.includes('--write-confidence');
for (const arg of process.argv.slice(2)) {
  if (arg !== '--write-confidence') throw new Error(`unknown option ${arg}; the only one is --write-confidence`);
}

// Issue 5's targets for the first table, issue 13's (the same figures) for the fine-tuning table.
const TARGET = { median: 0.05, within: 0.9, band: 0.15 };
const met = (s) => s.points > 0 && s.median <= TARGET.median && s.within >= TARGET.within;

const pct = (e) => `${e >= 0 ? '+' : ''}${(100 * e).toFixed(1)} %`;
const abs_pct = (e) => (Number.isFinite(e) ? `${(100 * e).toFixed(1)} %` : 'n/a');
const share = (e) => (Number.isFinite(e) ? `${(100 * e).toFixed(0)} %` : 'n/a');
const figure = (r) => `${r.compare.figure}, ${r.compare.stage === 'max' ? 'max over ranks' : `${r.compare.stage} stage`}`;
const names = { trainmem: 'trainmem', bridge: 'megatron-bridge', lm: 'megatron-lm' };

function print_table(rows) {
  console.log('| point | compared | measured GiB | trainmem GiB | error | bridge error | lm error |');
  console.log('|---|---|--:|--:|--:|--:|--:|');
  for (const r of rows) {
    if (r.not_expressible || r.rejected) {
      const why = r.not_expressible ? `not expressible yet: ${r.not_expressible.join(', ')}` : `rejected: ${r.rejected.join('; ')}`;
      console.log(`| ${r.id} | ${figure(r)} | ${gib(r.measured).toFixed(2)} | ${why.replaceAll('|', '/')} | — | — | — |`);
      continue;
    }
    console.log(`| ${r.id} | ${figure(r)} | ${gib(r.measured).toFixed(2)} | ${gib(r.trainmem).toFixed(2)} | ` +
                `${pct(r.error.trainmem)} | ${pct(r.error.bridge)} | ${pct(r.error.lm)} |`);
  }
}

function print_summaries(sets, { empty = false } = {}) {
  for (const [label, subset] of sets) {
    if (subset.length === 0 && !empty) continue;
    const s = summarize(subset);
    console.log(`\n${label}: ${subset.length} ${label.startsWith('distinct') ? 'rows' : 'points'} (|error|: median, maximum, share within 15 %)`);
    for (const [key, name] of Object.entries(names))
      console.log(`  ${name.padEnd(16)} median ${abs_pct(s[key].median)}, max ` +
                  `${abs_pct(s[key].max)}, within 15 %: ${share(s[key].within)}`);
  }
}

const tables = Object.fromEntries(Object.entries(TABLES).map(([key, t]) => [key, evaluate(load_points(t.file))]));

// The first table: pretraining and full training (issue 5).
const rows = tables.pretraining;
print_table(rows);
print_summaries([['all', rows], ['visible', rows.filter((r) => r.origin === 'visible')],
  ['found in public sources', rows.filter((r) => r.origin !== 'visible')],
  ['distinct configurations (points the estimator cannot tell apart merged, the worst error kept)',
   by_configuration(rows)]]);

// The second table: fine-tuning (issue 13). A point the CLI rejects is listed with its reason and
// counted apart; every statistic is over the points that ran.
const fine = tables.finetuning;
const fine_ran = expressible(fine);
const unexpressed = fine.filter((r) => r.not_expressible);
const rejected = fine.filter((r) => r.rejected);
console.log(`\n${TABLES.finetuning.title}`);
print_table(fine);
print_summaries([
  [`all that run (${fine_ran.length} of ${fine.length}; ${unexpressed.length} not expressible yet` +
   `${rejected.length ? `, ${rejected.length} rejected` : ''})`, fine_ran],
  ['distinct configurations (points the estimator cannot tell apart merged, the worst error kept)',
   by_configuration(fine)]], { empty: true });
if (unexpressed.length) {
  const fields = new Map();
  for (const r of unexpressed) for (const f of r.not_expressible) fields.set(f, (fields.get(f) ?? 0) + 1);
  console.log(`\nnot expressible yet (the CLI does not know the field): ${[...fields].map(([f, n]) => `${f} (${n} points)`).join(', ')}`);
}
const noted = load_points(TABLES.finetuning.file).filter((p) => p.measured.unit_note);
if (noted.length) {
  console.log('\nunits: GB is read as 10^9 bytes, GiB as 2^30; what the sources say of their "GB":');
  for (const p of noted) console.log(`  ${p.id}: ${p.measured.value} ${p.measured.unit}: ${p.measured.unit_note}`);
}

// Both tables' figures and targets, trainmem profile.
console.log(`\ntargets (trainmem |error|: median ≤ ${abs_pct(TARGET.median)}, at least ${share(TARGET.within)} of points within ${abs_pct(TARGET.band)})`);
for (const [key, t] of Object.entries(TABLES)) {
  const s = summarize(tables[key]).trainmem;
  const counted = `${s.points} of ${tables[key].length} points ran`;
  const status = met(s) ? 'met' : `not met${s.points === 0 ? ' (no point runs)' : ''}`;
  console.log(`  ${t.title.padEnd(58)} median ${abs_pct(s.median)}, within 15 %: ${share(s.within)} (${counted}): target ${status}`);
}

// Issue 29: no group (full, LoRA, QLoRA, MoE, each framework) may lean low: a median signed error
// below -3 % means the estimate under-reads that kind of run more often than not.
function print_signed_groups(label, list) {
  console.log(`\nsigned error by group, ${label} (trainmem; a group whose median signed error is below ${pct(LEANS_LOW)} LEANS LOW)`);
  console.log('| group | points | median abs. error | median signed error | within 15 % | |');
  console.log('|---|--:|--:|--:|--:|---|');
  for (const g of signed_groups(list)) {
    if (g.points === 0) { console.log(`| ${g.group} | 0 | n/a | n/a | n/a | no point |`); continue; }
    console.log(`| ${g.group} | ${g.points} | ${abs_pct(g.median_abs)} | ${pct(g.median_signed)} | ${share(g.within)} | ${g.leans_low ? 'LEANS LOW' : ''} |`);
  }
}
print_signed_groups('fine-tuning table', fine);
print_signed_groups('both tables', [...rows, ...fine]);

// The groups trainmem's results name ("runs like this landed within ±N %").
const all = [...rows, ...fine];
console.log(`\nvalidation groups (confidence in trainmem's results; both tables, the points that run)`);
console.log('| framework | training | recompute | points | median abs. error | 90th percentile abs. error | median signed error |');
console.log('|---|---|---|--:|--:|--:|--:|');
for (const g of confidence_groups(all))
  console.log(`| ${g.framework} | ${g.training} | ${g.recompute} | ${g.points} | ${abs_pct(g.median)} | ${abs_pct(g.p90)} | ` +
              `${pct(g.median_signed)}${g.median_signed < LEANS_LOW ? ' (leans low)' : ''} |`);
if (write) {
  write_confidence(all);
  console.log(`written to ${CONFIDENCE_FILE.pathname} (rebuild the CLI and the wasm module to use it)`);
} else {
  console.log(`(\`${WRITE_COMMAND}\` writes them into the core)`);
}

// The points that record their framework config file, through the importer (importer.mjs).
const { print_importer_table } = await import('./importer.mjs');
print_importer_table();
