// Every framework config under tests/import/fixtures/, imported as a user would without --base:
// the import gives either a config that estimates, or (exit 2) the problems of the config it would
// have made, each naming its field, and nothing on stdout (issue 30 item 5: one step from an
// import to a config); an overlay source (Megatron-LM's) prints its config with the same problems
// as "needs:" lines. Needs the native build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const root = new URL('../../', import.meta.url).pathname;
const cli = `${root}build/core/cli/trainmem`;
const fixtures = `${root}tests/import/fixtures`;
const run = (args, input) => spawnSync(cli, args, { encoding: 'utf8', input });

// What each kind's file cannot say, given as a user gives it on the command line.
const EXTRA = {
  torchtune: ['--gpus', '8'],
  torchtitan: ['--gpus', '8'],
  axolotl: ['--gpus', '2'],
  deepspeed: ['--preset', 'llama-3.1-8b', '--', 'torchrun', '--nproc_per_node', '8', 'train.py', '--per_device_train_batch_size', '1'],
  megatron: ['--gpus', '8'],
  accelerate: ['--', 'accelerate', 'launch', 'train.py', '--model_name_or_path', 'meta-llama/Llama-2-70b-hf', '--max_seq_len', '2048',
    '--per_device_train_batch_size', '1'],
};
const KIND = { megatron: 'megatron-args' };
// The field names a problem may start with: every field of the table, and the import's options.
const fields = new Set(JSON.parse(run(['fields']).stdout).map((f) => f.name));

for (const dir of Object.keys(EXTRA)) {
  for (const file of readdirSync(`${fixtures}/${dir}`).filter((f) => !f.endsWith('.source'))) {
    test(`import ${dir} ${file}: a config that estimates, or the named problems of the one it would make`, () => {
      const imported = run(['import', KIND[dir] ?? dir, `${fixtures}/${dir}/${file}`, ...EXTRA[dir]]);
      if (imported.status === 0) {
        const estimated = run(['estimate', '-'], imported.stdout);
        // An overlay (a Megatron-LM line or test config, which a tokenizer file completes) may
        // print a config with what it lacks as "needs:" lines: exactly what the estimate refuses.
        const needs = imported.stderr.split('\n').filter((l) => l.startsWith('needs: ')).map((l) => l.slice(7));
        if (needs.length) {
          assert.equal(estimated.status, 2);
          assert.deepEqual(estimated.stderr.trim().split('\n'), needs.map((n) => n.replace(/(\(a positive integer\)): .*/, '$1')));
          return;
        }
        assert.equal(estimated.status, 0, `the imported config does not estimate: ${estimated.stderr}`);
        assert.ok(JSON.parse(estimated.stdout).total_bytes > 0);
        return;
      }
      assert.equal(imported.status, 2, imported.stderr);
      assert.equal(imported.stdout, '');
      const problems = imported.stderr.split('\n').filter((l) => l && !/^(read: |key: |assumed: |ignored: |give )/.test(l));
      assert.ok(problems.length > 0, imported.stderr);
      // Each names a field of the config, or the file's key or the option it comes from.
      for (const line of problems) assert.ok(fields.has(line.split(':')[0]) || /^[\w.[\]-]+: /.test(line), `not named: ${line}`);
    });
  }
}
