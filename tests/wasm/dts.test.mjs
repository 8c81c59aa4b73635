// wasm/trainmem.d.ts is hand-written; this test holds it to the real module so it cannot drift:
// the bound functions, and the keys of real results, field specs, presets and GPUs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadEngine, SINGLE_GPU } from './load.mjs';

const dts = await readFile(new URL('../../wasm/trainmem.d.ts', import.meta.url), 'utf8');
const engine = await loadEngine();

/** interface name -> { required: Set, optional: Set } of its member names */
function interfaces(text) {
  const out = new Map();
  for (const m of text.matchAll(/export interface (\w+)(?: extends [\w, ]+)? \{([\s\S]*?)\n\}/g)) {
    const required = new Set();
    const optional = new Set();
    for (const line of m[2].split('\n')) {
      const member = /^\s+(\w+)(\?)?\s*[:(]/.exec(line);
      if (member) (member[2] ? optional : required).add(member[1]);
    }
    out.set(m[1], { required, optional });
  }
  return out;
}
const declared = interfaces(dts);

/** Every required key is present, and every present key is declared. */
function assertShape(name, objects) {
  const shape = declared.get(name);
  assert.ok(shape, `interface ${name} not found in trainmem.d.ts`);
  const seen = new Set(objects.flatMap((o) => Object.keys(o)));
  for (const key of seen) {
    assert.ok(shape.required.has(key) || shape.optional.has(key), `${name}.${key} is returned but not declared`);
  }
  for (const key of shape.required) {
    for (const o of objects) assert.ok(key in o, `${name}.${key} is declared required but missing`);
  }
}

// One MoE run with pipeline stages and a trace covers every optional part of a result.
const deepseek = engine.presets.find((p) => p.id === 'deepseek-v3');
const moeRun = engine.estimate({
  ...deepseek.config, seq_length: 4096, micro_batch_size: 1, tensor_model_parallel_size: 2,
  pipeline_model_parallel_size: 16, num_layers_in_first_pipeline_stage: 3,
  num_layers_in_last_pipeline_stage: 2, data_parallel_size: 64, expert_model_parallel_size: 64,
  expert_tensor_parallel_size: 1, sequence_parallel: true, use_distributed_optimizer: true,
}, { verbose: true });

test('the module binds exactly the functions TrainmemModule declares', () => {
  const bound = Object.keys(engine.module).filter((k) => typeof engine.module[k] === 'function'
    && Number.isInteger(engine.module[k].argCount)); // Embind marks its functions with argCount
  assert.deepEqual(new Set(bound), declared.get('TrainmemModule').required);
  assert.equal(engine.module.estimate.argCount, 2);
});

test('a result has exactly the declared keys', () => {
  assert.equal(moeRun.ok, true, JSON.stringify(moeRun.issues));
  const dense = engine.estimate({ ...engine.presets[0].config, ...SINGLE_GPU });
  assertShape('EstimateResult', [moeRun, dense]);
  assertShape('StateBreakdown', [moeRun.state]);
  assertShape('PartBytes', Object.values(moeRun.state));
  assertShape('ParamCounts', [moeRun.params]);
  assertShape('LayerCounts', [moeRun.layers]);
  assertShape('Stage', moeRun.stages);
  assertShape('TraceEntry', moeRun.trace);
  assertShape('Component', moeRun.components);
});

test('an error has exactly the declared keys', () => {
  const bad = engine.estimate({ num_layers: 'x' });
  assertShape('EstimateError', [bad]);
  assertShape('Issue', bad.issues);
});

test('field specs, presets and GPUs have exactly the declared keys', () => {
  assertShape('FieldSpec', engine.fieldSpecs);
  assertShape('Preset', engine.presets);
  assertShape('Gpu', engine.gpus);
});

test('declared string unions match what the module returns', () => {
  const kinds = dts.match(/kind: ([^;]+);/)[1];
  for (const c of moeRun.components) assert.ok(kinds.includes(`'${c.kind}'`), c.kind);
  const types = dts.match(/type: ([^;]+);/)[1];
  const groups = dts.match(/group: ([^;]+);/)[1];
  for (const s of engine.fieldSpecs) {
    assert.ok(types.includes(`'${s.type}'`), s.type);
    assert.ok(groups.includes(`'${s.group}'`), s.group);
  }
});
