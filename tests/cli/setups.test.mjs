// The fine-tuning setups (core/data/setups.json) as `trainmem setups` gives them, each held to
// its one source of truth: what `trainmem import` makes of the cited config file (the setup's
// `import`), or the validation table's mapping of the run (`validation_point`). When an importer
// or a field changes, `node tests/import/setups.mjs --write` rewrites the configs. Needs the
// native build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { originConfig, readSetups } from '../import/setups.mjs';
import { load_points } from '../validation/points.mjs';

const root = new URL('../../', import.meta.url).pathname;
const cli = `${root}build/core/cli/trainmem`;
const run = (args, input) => spawnSync(cli, args, { input, encoding: 'utf8', maxBuffer: 1 << 26 });
const doc = readSetups();
const presets = JSON.parse(run(['presets']).stdout).presets;
const gpus = JSON.parse(run(['gpus']).stdout).gpus;

test('trainmem setups prints core/data/setups.json as embedded', () => {
  const r = run(['setups']);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), doc);
  assert.equal(doc.schema, 1);
  assert.ok(doc.setups.length >= 5 && doc.setups.length <= 8, `${doc.setups.length} setups`);
});

for (const setup of doc.setups) {
  test(`${setup.id}: the config is what its origin makes (${setup.import ? `trainmem import ${setup.import.kind}` : `validation point ${setup.validation_point}`})`, () => {
    const origin = originConfig(setup);
    assert.equal(origin.problem, undefined, origin.problem);
    assert.deepEqual(setup.config, origin.config,
      `${setup.id}: core/data/setups.json differs from its origin; run node tests/import/setups.mjs --write`);
    // The file's words for the fields it set (the page shows them after the setup): the import's.
    assert.deepEqual(setup.keys ?? {}, origin.keys ?? {},
      `${setup.id}: its keys differ from its import's; run node tests/import/setups.mjs --write`);
  });
}

test('each setup cites a file at a commit; an imported one cites the fixture it is imported from', () => {
  const ids = new Set();
  for (const s of doc.setups) {
    assert.match(s.id, /^[a-z0-9.]+(-[a-z0-9.]+)*$/, s.id);
    assert.ok(!ids.has(s.id), `${s.id} twice`);
    ids.add(s.id);
    for (const key of ['name', 'framework', 'method', 'summary', 'preset', 'gpu']) assert.ok(s[key], `${s.id}: no ${key}`);
    const { repo, path, commit, url } = s.source;
    assert.match(commit, /^[0-9a-f]{40}$/, `${s.id}: commit`);
    assert.equal(url, `https://github.com/${repo}/blob/${commit}/${path}`, `${s.id}: url`);
    if (s.import) {
      const fixture = `${root}${s.import.file}`;
      assert.ok(existsSync(fixture), `${s.id}: ${s.import.file} missing`);
      // The fixture's .source first line, as every fixture has one: "owner/repo path @ commit"
      // (further lines say how the file was taken from it).
      assert.equal(readFileSync(`${fixture}.source`, 'utf8').split('\n')[0].trim(), `${repo} ${path} @ ${commit}`, `${s.id}: source`);
    } else {
      assert.ok(s.validation_point, `${s.id}: no origin`);
    }
  }
});

test('a setup renamed keeps its old id as an alias: trainmem setups OLD_ID gives the same run', () => {
  const renamed = doc.setups.filter((s) => s.aliases?.length);
  assert.ok(renamed.length >= 2, 'the two setups that moved off the RTX 4090 keep their ids as aliases');
  const ids = new Set(doc.setups.map((s) => s.id));
  for (const s of renamed) {
    for (const alias of s.aliases) {
      assert.ok(!ids.has(alias), `${alias} is an id and an alias`);
      const now = run(['setups', s.id]), before = run(['setups', alias]);
      assert.equal(before.status, 0, before.stderr);
      assert.equal(before.stdout, now.stdout, `${alias} gives ${s.id}'s run`);
    }
  }
});

test('each setup names a preset with its model, a GPU, and as many GPUs as the config resolves to', () => {
  const points = new Set(load_points('finetune-points.json').map((p) => p.id));
  for (const s of doc.setups) {
    const preset = presets.find((p) => p.id === s.preset);
    assert.ok(preset, `${s.id}: preset ${s.preset}`);
    for (const name of ['num_layers', 'hidden_size', 'num_attention_heads', 'num_query_groups', 'ffn_hidden_size'])
      assert.equal(s.config[name], preset.config[name], `${s.id}: ${name} differs from ${s.preset}`);
    assert.ok(gpus.some((g) => g.id === s.gpu), `${s.id}: GPU ${s.gpu}`);
    if (s.validation_point) assert.ok(points.has(s.validation_point), `${s.id}: ${s.validation_point}`);
    const r = run(['setups', s.id]);
    assert.equal(r.status, 0, r.stderr);
    const config = JSON.parse(r.stdout);
    assert.equal(config.gpu_memory_bytes, gpus.find((g) => g.id === s.gpu).memory_bytes);
    const e = run(['estimate', '-'], r.stdout);
    assert.equal(e.status, 0, `${s.id}: ${e.stderr}`);
    const result = JSON.parse(e.stdout);
    assert.equal(result.config.world_size, s.gpus, `${s.id}: world size`);
    assert.ok(result.device_bytes > 0 && Number.isFinite(result.device_bytes));
  }
});

test('trainmem setups ID: an unknown ID is exit 2 with the IDs there are, nothing on stdout', () => {
  const r = run(['setups', 'llama-9b-nope']);
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^setups: unknown setup "llama-9b-nope"; the setups are llama-3\.1-8b-qlora-torchtune-1x4090, /);
  const two = run(['setups', 'a', 'b']);
  assert.equal(two.status, 2);
  assert.match(two.stderr, /setups takes at most one setup ID/);
});
