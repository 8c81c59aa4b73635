// What both oracle drivers (compare.mjs, timeline.mjs) share: their command line
// ([--n N] [--seed S] [--strict] [--json FILE] [--cli PATH]), running an oracle script under
// Debian's python3-torch, and the trainmem CLI's estimate of a config.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');

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

/**
 * Runs tests/oracle/`script` with /usr/bin/python3 and `args`; resolves to {code, lines (one JSON
 * object per stdout line), log (stderr)}; rejects on an exit code not in `accepted`.
 */
export function runPython(script, args, accepted = [0]) {
  return new Promise((ok, fail) => {
    const p = spawn('/usr/bin/python3', [resolve(here, script), ...args],
      { cwd: root, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', fail);
    p.on('close', (code) => {
      if (!accepted.includes(code)) return fail(new Error(`${script} exited ${code}:\n${err}`));
      ok({ code, lines: out.split('\n').filter(Boolean).map((l) => JSON.parse(l)), log: err.trim() });
    });
  });
}

/** The trainmem CLI's JSON estimate of `config` (with its trace when `verbose`): {ok: true, out} or {ok: false, messages}. */
export function estimate(cli, config, verbose = false) {
  const args = ['estimate', '-', '--format', 'json', ...(verbose ? ['--verbose'] : [])];
  const r = spawnSync(cli, args, { input: JSON.stringify(config), encoding: 'utf8' });
  if (r.error) return { ok: false, messages: [`cannot run ${cli}: ${r.error.message}`] };
  if (r.status !== 0) {
    const messages = (r.stderr || r.stdout || '').split('\n').map((s) => s.trim()).filter(Boolean);
    return { ok: false, messages: messages.length ? messages : [`exit status ${r.status}`] };
  }
  return { ok: true, out: JSON.parse(r.stdout) };
}
