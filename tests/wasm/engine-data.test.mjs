// The page's build-time data (web/wasm/trainmem-data.json, web/scripts/engine-data.mjs) is what
// the core says, and the Engine takes no data of another build: the slots follow the field
// table's order, so another build's specs would misread every field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, engineDataOf } from '../../web/js/engine.js';
import { loadEngine, readEngineData } from './load.mjs';

const engine = await loadEngine();
const data = await readEngineData();

test('trainmem-data.json is the tools module\'s data, entry for entry', () => {
  const fromModule = engineDataOf(engine.tools);
  assert.deepEqual(Object.keys(data).sort(), Object.keys(fromModule).sort());
  for (const key of Object.keys(fromModule)) assert.deepEqual(data[key], fromModule[key], key);
  // Both modules come from one core: the same table.
  assert.equal(data.fieldCount, engine.module.fieldCount());
  assert.equal(data.fieldCount, engine.fieldSpecs.length);
  assert.equal(data.version, engine.module.version());
});

test('the estimator module carries none of it (the tools module does)', () => {
  for (const name of ['fieldSpecsText', 'presets', 'gpus', 'setups', 'slotTables', 'resultSchemaText', 'methodSettingsText']) {
    assert.equal(engine.module[name], undefined, name);
    assert.equal(typeof engine.tools[name], 'function', name);
  }
});

test('data of another build is refused with a message naming the file and the fix', () => {
  const other = { ...data, fieldCount: data.fieldCount + 1 };
  assert.throws(() => new Engine(engine.module, other), (error) => {
    assert.match(error.message, /trainmem-data\.json/);
    assert.match(error.message, new RegExp(`${data.fieldCount} fields`));
    assert.match(error.message, /rebuild them together|reload the page/);
    return true;
  });
  assert.throws(() => new Engine(engine.module, { ...data, version: '0.0.0-other' }), /not of one build/);
  assert.throws(() => new Engine(engine.module, undefined), /not of one build/);
  // The same data is taken, and gives the engine the loaded engine's answer.
  const again = new Engine(engine.module, data);
  const config = { ...engine.presets[0].config, seq_length: 2048, micro_batch_size: 1 };
  assert.deepEqual(again.estimate(config).device_bytes, engine.estimate(config).device_bytes);
});
