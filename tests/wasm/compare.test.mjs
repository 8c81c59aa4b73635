// The compare view's "these N settings differ" (web/js/compare.js) over every ordered pair of the
// fine-tuning setups: what each differing setting does to the pinned run's figure, alone or, where
// the core refuses it alone, together with the settings its objections name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { differingSettings, settingEffects } from '../../web/js/compare.js';
import { headlineOf } from '../../web/js/results.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const CAPACITY = engine.gpus.find((g) => g.id === 'h100-80gb').memory_bytes;
const estimate = (config) => engine.estimate({ ...config, gpu_memory_bytes: CAPACITY });
const setup = (id) => engine.setups.find((s) => s.id === id);

/** The page's view of two setups: the pinned one's fields, the differences, their effects. */
function compare(pinnedSetup, currentSetup) {
  const [a, b] = [estimate(pinnedSetup.config), estimate(currentSetup.config)];
  const inEffect = new Set([...engine.fieldsInEffect({ ...a.config }), ...engine.fieldsInEffect({ ...b.config })]);
  const diffs = differingSettings(a.config, b.config, inEffect);
  return { diffs, current: b.config, rows: settingEffects(pinnedSetup.config, diffs, estimate, 'device') };
}

test('every differing setting is in exactly one row, and each figure is the core\'s for the pinned run with that row\'s settings changed', () => {
  let pairs = 0;
  for (const from of engine.setups) {
    for (const to of engine.setups) {
      if (from === to) continue;
      pairs += 1;
      const { diffs, current, rows } = compare(from, to);
      const listed = rows.flatMap((r) => r.settings.map((s) => s.name));
      assert.deepEqual([...listed].sort(), diffs.map((d) => d.name).sort(), `${from.id} -> ${to.id}: rows ${listed}`);
      const base = headlineOf(estimate(from.config), 'device').bytes;
      for (const row of rows) {
        const names = row.settings.map((s) => s.name);
        if (row.delta === null) {
          // Not valid: the core's objection to it alone is its reason.
          assert.ok(row.reason && names.length === 1, `${from.id} -> ${to.id}: ${names} has no reason`);
          assert.equal(estimate({ ...from.config, [names[0]]: current[names[0]] }).ok, false);
          continue;
        }
        const changed = { ...from.config };
        for (const name of names) {
          if (current[name] === undefined || current[name] === null) delete changed[name];
          else changed[name] = current[name];
        }
        for (const name of row.unset) delete changed[name];
        const result = estimate(changed);
        assert.ok(result.ok, `${from.id} -> ${to.id}: ${names}: ${JSON.stringify(result.issues)}`);
        assert.equal(row.delta, headlineOf(result, 'device').bytes - base, `${from.id} -> ${to.id}: ${names}`);
        // A field sent unset is one the core resolves to the current run's value.
        for (const name of row.unset) assert.deepEqual(result.config[name], current[name], `${from.id} -> ${to.id}: ${name} unset`);
        // A group is there because the core refuses its first setting alone.
        if (names.length > 1) assert.ok(names.some((n) => !estimate({ ...from.config, [n]: current[n] }).ok), `${from.id} -> ${to.id}: ${names} grouped though each is valid alone`);
      }
      // Largest effect first; the settings without one last.
      const weights = rows.map((r) => (r.delta === null ? -1 : Math.abs(r.delta)));
      assert.deepEqual(weights, [...weights].sort((x, y) => y - x), `${from.id} -> ${to.id}: order`);
    }
  }
  assert.ok(pairs >= 30, `${pairs} pairs`);
});

test('LoRA pinned, QLoRA on screen: the method, its 4-bit weights and QLoRA\'s own switches are one row with one figure, and no setting is left without one', () => {
  const { rows } = compare(setup('llama-3.1-8b-lora-torchtune-1x4090'), setup('llama-3-8b-qlora-axolotl-1xa100-40gb'));
  assert.equal(rows.filter((r) => r.delta === null).length, 0, JSON.stringify(rows.filter((r) => r.delta === null)));
  const method = rows.find((r) => r.settings.some((s) => s.name === 'peft'));
  const names = method.settings.map((s) => s.name);
  for (const name of ['params_dtype', 'nf4_double_quant']) assert.ok(names.includes(name), `the method's row: ${names}`);
  assert.ok(method.delta < 0, 'a 4-bit base takes less than a bf16 one');
  // Its figure is the largest: QLoRA's base is what sets the two runs apart.
  assert.equal(rows[0], method);
});

test('pinned and current the same: no row', () => {
  const s = setup('llama-3.1-8b-lora-torchtune-1x4090');
  assert.deepEqual(compare(s, s).rows, []);
});
