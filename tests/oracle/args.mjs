// The command line both oracle drivers take (compare.mjs, timeline.mjs):
//   [--n N] [--seed S] [--strict] [--json FILE] [--cli PATH]
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Parses argv for `script` (its name in messages), with `n` configs by default; exits on --help or a bad argument. */
export function parseArgs(argv, script, n) {
  const opts = { n, seed: 13, strict: false, json: null, cli: resolve(root, 'build/core/cli/trainmem') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--n') opts.n = Number(argv[++i]);
    else if (a === '--seed') opts.seed = Number(argv[++i]);
    else if (a === '--strict') opts.strict = true;
    else if (a === '--json') opts.json = argv[++i];
    else if (a === '--cli') opts.cli = resolve(argv[++i]);
    else if (a === '--help' || a === '-h') {
      console.log(`usage: node tests/oracle/${script}.mjs [--n ${n}] [--seed 13] [--strict] [--json FILE] [--cli PATH]`);
      process.exit(0);
    } else {
      console.error(`${script}: unknown argument ${a}`);
      process.exit(2);
    }
  }
  return opts;
}
