// wasm/trainmem.d.ts is hand-written; this test holds it to the real module so it cannot drift:
// the bound functions, and the keys of real results, field specs, presets, GPUs and setups.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadEngine, SINGLE_GPU } from './load.mjs';
import { parseSchema } from '../../web/js/slots.js';

const dts = await readFile(new URL('../../wasm/trainmem.d.ts', import.meta.url), 'utf8');
const engine = await loadEngine();

/** interface name -> { required: Set, optional: Set } of its member names, and each member's type text */
function interfaces(text) {
  const out = new Map();
  for (const m of text.matchAll(/export interface (\w+)(?: extends [\w, ]+)? \{([\s\S]*?)\n\}/g)) {
    const required = new Set();
    const optional = new Set();
    const types = new Map();
    for (const line of m[2].split('\n')) {
      const member = /^\s+(\w+)(\?)?\s*[:(]\s*(.*?);?$/.exec(line);
      if (!member) continue;
      (member[2] ? optional : required).add(member[1]);
      types.set(member[1], member[3]);
    }
    out.set(m[1], { required, optional, types });
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

// Embind marks its functions with argCount.
const boundFunctions = (m) => new Set(Object.keys(m).filter((k) => typeof m[k] === 'function' && Number.isInteger(m[k].argCount)));

test('each module binds exactly the functions its interface declares', async () => {
  assert.deepEqual(boundFunctions(engine.module), declared.get('TrainmemModule').required);
  assert.equal(engine.module.estimateSlots.argCount, 4);
  assert.equal(engine.module.estimate, undefined, 'the estimator module links no JSON API');
  const base = declared.get('TrainmemModule').required;
  const tools = declared.get('TrainmemToolsModule').required;
  assert.deepEqual(boundFunctions(engine.toolsModule), new Set([...base, ...tools]));
  const toolsDts = await readFile(new URL('../../wasm/trainmem-tools.d.ts', import.meta.url), 'utf8');
  assert.match(toolsDts, /Promise<TrainmemToolsModule>/);
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

test('the trainmem profile result has exactly the declared keys, overheads and moments included', () => {
  const r = engine.estimate({ ...deepseek.config, seq_length: 4096, micro_batch_size: 1, tensor_model_parallel_size: 2,
    pipeline_model_parallel_size: 16, data_parallel_size: 64, expert_model_parallel_size: 64,
    num_layers_in_first_pipeline_stage: 3, num_layers_in_last_pipeline_stage: 2, profile: 'trainmem',
    framework: 'megatron', gpu_memory_bytes: 80e9, optimizer_offload_fraction: 0.5, sequence_parallel: true,
    use_distributed_optimizer: true });
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assertShape('EstimateResult', [r]);
  assertShape('Overheads', [r.overheads]);
  assert.ok(r.overheads.nccl_groups.length > 0);
  assertShape('NcclGroup', r.overheads.nccl_groups);
  assert.deepEqual(r.overheads.lines.map((l) => [l.key, l.adds_to]),
    [['caching_allocator', 'reserved'], ['cuda_context', 'device'], ['nccl', 'device']]);
  assertShape('OverheadLine', r.overheads.lines);
  assertShape('Moments', [r.moments, ...r.stages.map((s) => s.moments)]);
  assertShape('Stage', r.stages);
  const ds = engine.estimate({ ...engine.presets.find((p) => p.id === 'llama-3.1-8b').config, seq_length: 2048,
    micro_batch_size: 1, data_parallel_size: 8, framework: 'deepspeed', zero_stage: 3 });
  assert.equal(ds.ok, true, JSON.stringify(ds.issues));
  assertShape('DeepSpeedEstimator', [ds.deepspeed_estimator]);
  assertShape('Confidence', [r.confidence, ds.confidence]);
  const matches = dts.match(/match: ([^;]+);/)[1];
  for (const c of [r.confidence, ds.confidence]) assert.ok(matches.includes(`'${c.match}'`), c.match);
});

test('imports and exports have exactly the declared keys', () => {
  const hf = engine.importHfConfig(JSON.stringify({ model_type: 'llama', hidden_size: 256, intermediate_size: 512,
    num_hidden_layers: 2, num_attention_heads: 4, vocab_size: 1000 }), { seq_length: 128, micro_batch_size: 1 });
  assert.equal(hf.ok, true, JSON.stringify(hf.issues));
  assertShape('ImportResult', [hf, engine.importMegatronArgs('--num-layers 2 --hidden-size 64 --num-attention-heads 4', {})]);
  assertShape('MegatronArgsExport', [engine.exportMegatronArgs(hf.config)]);
  assertShape('ConfigExport', [engine.exportConfigJson(hf.config), engine.configInputJson(hf.config)]);
  assertShape('EstimateError', [engine.importHfConfig('{}', {}), engine.exportConfigJson({ num_layers: 0 })]);
  assert.ok(engine.hfModelTypes().every((t) => typeof t === 'string'));
});

test('a plan has exactly the declared keys', () => {
  const llama = engine.presets.find((p) => p.id === 'llama-3.1-8b');
  const r = engine.plan({ ...llama.config, seq_length: 4096, micro_batch_size: 1, global_batch_size: 64 },
    { gpus: 16, gpu_memory_bytes: 80 * 2 ** 30, max_results: 5 });
  assert.equal(r.ok, true, JSON.stringify(r.issues));
  assertShape('PlanResult', [r]);
  assertShape('PlanLayout', r.layouts);
  assertShape('PlanStats', [r.stats]);
  assert.ok(r.layouts.length > 0);
  const bad = engine.plan({ ...llama.config, seq_length: 4096, micro_batch_size: 1 }, { gpus: -1 });
  assertShape('EstimateError', [bad]);
});

test('an error has exactly the declared keys', () => {
  const bad = engine.estimate({ num_layers: 'x' });
  assertShape('EstimateError', [bad]);
  assertShape('Issue', bad.issues);
});

test('field specs, presets, GPUs and setups have exactly the declared keys', () => {
  assertShape('FieldSpec', engine.fieldSpecs);
  assertShape('FormPlace', engine.fieldSpecs.filter((s) => s.form).map((s) => s.form));
  assertShape('Preset', engine.presets);
  assertShape('Gpu', engine.gpus);
  assertShape('Setup', engine.setups);
  assertShape('SetupSource', engine.setups.map((s) => s.source));
});

test('declared string unions match what the module returns', () => {
  const kinds = dts.match(/kind: ([^;]+);/)[1];
  for (const c of moeRun.components) assert.ok(kinds.includes(`'${c.kind}'`), c.kind);
  const types = dts.match(/type: ([^;]+);/)[1];
  const groups = dts.match(/group: ('[^;]+);/)[1];
  const sections = dts.match(/section: ('[^;]+);/)[1];
  for (const s of engine.fieldSpecs) {
    assert.ok(types.includes(`'${s.type}'`), s.type);
    assert.ok(groups.includes(`'${s.group}'`), s.group);
    if (s.form) assert.ok(sections.includes(`'${s.form.section}'`), s.form.section);
  }
});

test('the result interfaces are the result schema the core declares (result_schema.hpp), key for key', () => {
  const schema = parseSchema(engine.tools.resultSchemaText());
  const tables = {};
  for (const line of engine.tools.slotTables().split('\n').filter(Boolean)) {
    const [table, entry] = line.split('\t');
    (tables[table] ??= []).push(entry);
  }
  const checked = new Set();
  // An object's keys: a branch's and an omitted maybe's are optional in the .d.ts, the rest
  // required (a maybe that is null when absent is required, its type "| null").
  function keysOf(children, optional, out = new Map()) {
    for (const node of children) {
      if (node.kind === 'branch') keysOf(node.children, true, out);
      else if (node.kind === 'maybe') out.set(node.key, { node: node.children[0], optional: optional || node.a === 'omitted', nullable: node.a === 'null' });
      else out.set(node.key, { node, optional, nullable: false });
    }
    return out;
  }
  function checkObject(type, children) {
    const shape = declared.get(type);
    assert.ok(shape, `result schema object ${type}: no interface ${type} in trainmem.d.ts`);
    const keys = keysOf(children, false);
    for (const [key, { node, optional, nullable }] of keys) {
      const member = `${type}.${key}`;
      assert.ok(shape.required.has(key) || shape.optional.has(key), `${member} is in the result schema but not declared`);
      assert.equal(shape.optional.has(key), optional, `${member} must be ${optional ? 'optional' : 'required'} (as the schema writes it)`);
      if (nullable || node.kind === 'text_or_null') assert.match(shape.types.get(key), /\| null/, `${member} may be null`);
      // A union of string literals names entries of the table the slots index (adds_to: two of the three figures).
      const literals = [...(shape.types.get(key) ?? '').matchAll(/'([^']*)'/g)].map((m) => m[1]);
      assert.ok(node.kind !== 'entry' || tables[node.a], `${member}: no table ${node.a}`);
      for (const literal of node.kind === 'entry' ? literals : []) assert.ok(tables[node.a].includes(literal), `${member}: '${literal}' is not in the table ${node.a}`);
      visit(node);
    }
    for (const key of [...shape.required, ...shape.optional])
      assert.ok(keys.has(key), `${type}.${key} is declared but the result schema has no such key`);
    checked.add(type);
  }
  function visit(node) {
    if (node.kind === 'object') checkObject(node.a, node.children);
    else if (node.kind === 'array' || node.kind === 'keyed') visit(node.children[0]);
  }
  checkObject('EstimateResult', schema.children);
  for (const type of ['Stage', 'Moments', 'Confidence', 'FitVerdict', 'CapacityFit', 'Component', 'TraceEntry', 'Suggestion'])
    assert.ok(checked.has(type), `the schema reaches ${type}`);
});
