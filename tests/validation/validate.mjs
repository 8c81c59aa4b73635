// npm run validate: every point of points.json through the native CLI, compared with its
// measurement; prints a Markdown table and the summary per profile. Prints figures, exits 0.
import { by_configuration, evaluate, gib, summarize } from './points.mjs';

const rows = evaluate();
const pct = (e) => `${e >= 0 ? '+' : ''}${(100 * e).toFixed(1)} %`;
const figure = (r) => `${r.compare.figure}, ${r.compare.stage === 'max' ? 'max over ranks' : `${r.compare.stage} stage`}`;

console.log('| point | compared | measured GiB | trainmem GiB | error | bridge error | lm error |');
console.log('|---|---|--:|--:|--:|--:|--:|');
for (const r of rows)
  console.log(`| ${r.id} | ${figure(r)} | ${gib(r.measured).toFixed(2)} | ${gib(r.trainmem).toFixed(2)} | ` +
              `${pct(r.error.trainmem)} | ${pct(r.error.bridge)} | ${pct(r.error.lm)} |`);

const names = { trainmem: 'trainmem', bridge: 'megatron-bridge', lm: 'megatron-lm' };
const sets = [['all', rows], ['visible', rows.filter((r) => r.origin === 'visible')],
              ['found in public sources', rows.filter((r) => r.origin !== 'visible')],
              ['distinct configurations (points the estimator cannot tell apart merged, the worst error kept)',
               by_configuration(rows)]];
for (const [label, subset] of sets) {
  if (subset.length === 0) continue;
  const s = summarize(subset);
  console.log(`\n${label}: ${subset.length} ${label.startsWith('distinct') ? 'rows' : 'points'} (|error|: median, maximum, share within 15 %)`);
  for (const [key, name] of Object.entries(names))
    console.log(`  ${name.padEnd(16)} median ${(100 * s[key].median).toFixed(1)} %, max ` +
                `${(100 * s[key].max).toFixed(1)} %, within 15 %: ${(100 * s[key].within).toFixed(0)} %`);
}

// The points that record their framework config file, through the importer (importer.mjs).
const { print_importer_table } = await import('./importer.mjs');
print_importer_table();
