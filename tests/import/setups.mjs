// The fine-tuning setups (core/data/setups.json) and where each one's config comes from: what
// `trainmem import` makes of the cited config file (the setup's `import`: kind, file, gpus,
// overrides, version, as the validation table's framework_config), or, for a run with no config
// file, the validation table's mapping of it (`validation_point` in finetune-points.json: its
// expanded config, without the fields the CLI does not know yet and without gpu_memory_bytes,
// which the setup's GPU gives). tests/cli/setups.test.mjs holds every setup equal to its origin;
//
//   node tests/import/setups.mjs --write
//
// rewrites each setup's `config` (and `keys`, the file's own key for each field it set from one
// key) from it (after an importer or a field changes), and without
// --write prints the setups whose config differs. Needs the native CLI (npm run build:native).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cli, ensure_cli, load_points } from '../validation/points.mjs';
import { import_args } from '../validation/importer.mjs';

const root = new URL('../../', import.meta.url).pathname;
export const SETUPS_FILE = `${root}core/data/setups.json`;

export const readSetups = () => JSON.parse(readFileSync(SETUPS_FILE, 'utf8'));

/** The fields the CLI knows (`trainmem fields`). */
function knownFields() {
  ensure_cli();
  const r = spawnSync(cli, ['fields'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`trainmem fields failed: ${r.stderr}`);
  return new Set(JSON.parse(r.stdout).map((f) => f.name));
}

/**
 * The config a setup's origin gives: {config, command} (command: the import's argument list), or
 * {problem} when the origin cannot give one (the import fails, the point is missing).
 */
export function originConfig(setup, known = knownFields()) {
  ensure_cli();
  if (setup.import) {
    const args = import_args(setup.import);
    const r = spawnSync(cli, args, { encoding: 'utf8' });
    if (r.status !== 0) return { problem: `trainmem ${args.join(' ')} failed: ${r.stderr.trim()}` };
    // The file's own key for each field it set from one key (the CLI's "key: field ← key" lines),
    // which the page shows beside the field's words after the setup.
    const keys = Object.fromEntries(r.stderr.split('\n').map((l) => /^key: (\w+) ← (.+)$/.exec(l)).filter(Boolean)
      .map((m) => [m[1], m[2]]));
    return { config: JSON.parse(r.stdout), keys, command: args };
  }
  if (setup.validation_point) {
    const point = load_points('finetune-points.json').find((p) => p.id === setup.validation_point);
    if (!point) return { problem: `validation point ${setup.validation_point} is not in tests/validation/finetune-points.json` };
    const config = Object.fromEntries(Object.entries(point.config)
      .filter(([name]) => known.has(name) && name !== 'gpu_memory_bytes'));
    return { config };
  }
  return { problem: 'neither import nor validation_point: the config has no origin' };
}

function main() {
  const write = process.argv.includes('--write');
  const doc = readSetups();
  const known = knownFields();
  let differ = 0;
  for (const setup of doc.setups) {
    const origin = originConfig(setup, known);
    if (origin.problem) throw new Error(`${setup.id}: ${origin.problem}`);
    const keys = origin.keys && Object.keys(origin.keys).length ? origin.keys : undefined;
    if (JSON.stringify(origin.config) === JSON.stringify(setup.config) && JSON.stringify(keys) === JSON.stringify(setup.keys)) continue;
    differ += 1;
    console.log(`${setup.id}: the config or its keys differ from its origin${write ? ' (rewritten)' : ''}`);
    setup.config = origin.config;
    if (keys) setup.keys = keys;
    else delete setup.keys;
  }
  if (write && differ) writeFileSync(SETUPS_FILE, `${JSON.stringify(doc, null, 2)}\n`);
  if (!differ) console.log(`every setup's config equals its origin (${doc.setups.length} setups)`);
  else if (!write) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) main();
