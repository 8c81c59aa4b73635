// The fine-tuning setups (the tools module's setups(): core/data/setups.json, embedded; the page reads
// them from wasm/trainmem-data.json) and the
// share link's `su` key, which every view reads with restoreLink (link-config.js): "#su=<id>" is
// the setup, a link's own values win over it, and an unknown id is named without losing the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { configFromLink, coreConfig, editableState, estimateView, restoreLink, setupById } from '../../web/js/link-config.js';
import { decodeState, encodeState } from '../../web/js/url-state.js';
import { setupChanges, valueText } from '../../web/js/setup-picker.js';
import { headlineOf } from '../../web/js/results.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const specs = new Map(engine.fieldSpecs.map((s) => [s.name, s]));
const file = JSON.parse(await readFile(new URL('../../core/data/setups.json', import.meta.url), 'utf8'));
const qlora = setupById(engine, 'llama-3.1-8b-qlora-torchtune-1x4090');
const capacityOf = (gpu) => engine.gpus.find((g) => g.id === gpu).memory_bytes;

test("setups() is core/data/setups.json as embedded, as the page's data has it, and each setup estimates on its GPU", () => {
  assert.deepEqual(JSON.parse(engine.tools.setups()), file);
  assert.deepEqual(engine.setups, file.setups);
  assert.ok(qlora, 'the torchtune 8B QLoRA setup');
  for (const s of engine.setups) {
    const r = engine.estimate({ ...s.config, gpu_memory_bytes: capacityOf(s.gpu) });
    assert.equal(r.ok, true, `${s.id}: ${JSON.stringify(r.issues)}`);
    assert.equal(r.config.world_size, s.gpus, s.id);
    // The numeric path the page takes and the JSON path the CLI takes give the same figure.
    const json = engine.estimateJson({ ...s.config, gpu_memory_bytes: capacityOf(s.gpu) });
    assert.equal(r.device_bytes, json.device_bytes, s.id);
  }
});

// A setup is offered as a run on its GPU ("1× RTX 4090"): its own estimate must keep that promise.
// The verdict is the core's (fit_verdict: over the capacity, within the headroom kept free, or
// with the validation spread crossing the capacity are not "fits"), on the figure the page heads
// with (results.js headlineOf). axolotl's 8B QLoRA example read 24.49 GiB against a 4090's 23.99.
test('every setup fits the GPU it names: the headline\'s verdict is "fits", not tight or over', () => {
  for (const s of engine.setups) {
    const r = engine.estimate({ ...s.config, gpu_memory_bytes: capacityOf(s.gpu) });
    const headline = headlineOf(r);
    const v = r.verdicts?.[headline?.key];
    assert.ok(v, `${s.id}: no verdict`);
    assert.equal(v.fit, 'fits', `${s.id} on ${s.gpu}: ${v.fit} (${v.reason ?? ''}), ${v.figure_bytes} of ${v.capacity_bytes} B`);
    // The name promises the GPU count and the GPU the setup runs on ("· 1× A100 40GB": each word
    // of it in the GPU's name).
    const gpu = engine.gpus.find((g) => g.id === s.gpu).name.split(' ');
    const [, count, words] = s.name.match(/ (\d+)× ([^·]+)$/) ?? [];
    assert.equal(Number(count), s.gpus, `${s.id}: "${s.name}"`);
    assert.ok(words.split(' ').every((w) => gpu.includes(w)), `${s.id}: "${s.name}" on ${gpu.join(' ')}`);
  }
});

test('a link "#su=<id>" is the setup: its fields, its model and its GPU, in every view', () => {
  for (const s of engine.setups) {
    const link = restoreLink(`v=1&su=${s.id}`, engine);
    assert.deepEqual(link.rejected, [], s.id);
    assert.equal(link.setup.id, s.id);
    assert.equal(link.preset.id, s.preset);
    assert.equal(link.gpu, s.gpu);
    const { gpu_memory_bytes: capacity, ...config } = link.config;
    assert.equal(capacity, capacityOf(s.gpu));
    // What applies of the setup's fields reaches the core, nothing else.
    assert.deepEqual(config, coreConfig(engine, s.config, null).config, s.id);
    // The page's editable state keeps the setup by id; the embed and element read the same link.
    assert.equal(editableState(link).setup, s.id);
    assert.equal(configFromLink(`su=${s.id}`, engine).setup.id, s.id);
    const view = estimateView(engine, editableState(link));
    const direct = engine.estimate({ ...s.config, gpu_memory_bytes: capacityOf(s.gpu) });
    assert.equal(view.result.device_bytes, direct.device_bytes, s.id);
  }
});

test('a link\'s own values win over its setup\'s; a preset named beside it keeps its model', () => {
  const link = restoreLink(`v=1&su=${qlora.id}&s=4096&b=1&gpu=a100-80gb`, engine);
  assert.deepEqual(link.rejected, []);
  assert.equal(link.fields.seq_length, 4096);
  assert.equal(link.fields.micro_batch_size, 1);
  assert.equal(link.fields.peft, 'qlora');
  assert.equal(link.gpu, 'a100-80gb');
  const other = restoreLink(`v=1&su=${qlora.id}&m=llama-3.2-3b`, engine);
  assert.equal(other.preset.id, 'llama-3.2-3b');
  assert.equal(other.fields.num_layers, 28);
  assert.equal(other.fields.peft, 'qlora');
});

test('an unknown setup id is named with the ids there are; the link\'s other values are kept', () => {
  const link = restoreLink('v=1&m=llama-3.1-70b&su=llama-9b-nope&s=2048&tp=8&dp=1&gpu=h100-80gb', engine);
  assert.equal(link.setup, null);
  assert.deepEqual(link.rejected.map((r) => r.key), ['su']);
  assert.match(link.rejected[0].reason, /^unknown fine-tuning setup "llama-9b-nope"; the setups are llama-3\.1-8b-qlora-torchtune-1x4090, /);
  assert.equal(link.preset.id, 'llama-3.1-70b');
  assert.equal(link.fields.seq_length, 2048);
  assert.equal(link.fields.tensor_model_parallel_size, 8);
  assert.equal(link.gpu, 'h100-80gb');
  assert.ok(engine.estimate(link.config).ok);
});

test('the page writes the setup it started from into the link, and reads it back', () => {
  const text = encodeState({ fields: qlora.config, names: Object.keys(qlora.config), preset: qlora.preset, setup: qlora.id,
    gpu: qlora.gpu, unit: 'GiB' }, specs);
  assert.match(text, /^v=1&m=llama-3\.1-8b&su=llama-3\.1-8b-qlora-torchtune-1x4090&/);
  const back = decodeState(text, specs);
  assert.equal(back.setup, qlora.id);
  assert.deepEqual(back.rejected, []);
  assert.equal(restoreLink(text, engine).setup.id, qlora.id);
  // No setup, no key: the links written before setups existed read as they did.
  assert.doesNotMatch(encodeState({ fields: {}, names: [], preset: null, gpu: 'h100-80gb', unit: 'GiB' }, specs), /su=/);
});

test('what starting from a setup changes: the model, the GPU, each setting, and what goes back to its default', () => {
  // From a Megatron pretraining run (a link: Llama 3.1 8B, TP 2 × DP 4, sequence 8192, on H100s).
  const start = restoreLink('v=1&m=llama-3.1-8b&tp=2&dp=4&sp=1&dopt=1&rc=selective&s=8192&b=1', engine);
  const resolvedOf = (fields, gpu) => engine.estimate({ ...fields, gpu_memory_bytes: capacityOf(gpu) }).config;
  const before = { fields: start.fields, preset: start.preset.id, gpu: start.gpu, resolved: resolvedOf(start.fields, start.gpu) };
  const changes = setupChanges(before, qlora, specs, resolvedOf(qlora.config, qlora.gpu));
  assert.equal(changes.model, false, 'the link\'s preset is Llama 3.1 8B: the setup keeps its shapes');
  assert.equal(changes.gpu, true);
  const changed = new Map(changes.changed.map((c) => [c.name, c]));
  // An unset field shows what it had resolved to.
  assert.deepEqual([changed.get('peft').from, changed.get('peft').to], ['none', 'qlora']);
  assert.deepEqual([changed.get('framework').from, changed.get('framework').to], ['megatron', 'ddp']);
  assert.deepEqual([changed.get('seq_length').from, changed.get('seq_length').to], [8192, 2048]);
  // The link's TP 2 goes back to 1; its PP 1 stays 1 (the default), so it is no change.
  const cleared = new Map(changes.cleared.map((c) => [c.name, c]));
  assert.deepEqual([cleared.get('tensor_model_parallel_size').from, cleared.get('tensor_model_parallel_size').to], [2, 1]);
  assert.ok(!cleared.has('pipeline_model_parallel_size'));
  // Nothing changes when the page already is the setup.
  const again = setupChanges({ fields: { ...qlora.config }, preset: qlora.preset, gpu: qlora.gpu }, qlora, specs);
  assert.deepEqual(again, { model: false, gpu: false, changed: [], cleared: [] });
  // Another model is one change however many shape fields differ.
  const seventy = setupChanges(before, setupById(engine, 'llama-3.1-70b-lora-torchtune-8xa100'), specs);
  assert.equal(seventy.model, true);
  assert.ok(!seventy.changed.some((c) => c.name === 'num_layers'));
  // From the fresh page (LoRA of the same model on the same GPU): the method and what follows it.
  const fresh = restoreLink('', engine);
  const fromFresh = setupChanges({ fields: fresh.fields, preset: fresh.preset.id, gpu: fresh.gpu, resolved: resolvedOf(fresh.fields, fresh.gpu) },
    qlora, specs, resolvedOf(qlora.config, qlora.gpu));
  assert.deepEqual([fromFresh.model, fromFresh.gpu], [false, false]);
  const fromLora = new Map(fromFresh.changed.map((c) => [c.name, c]));
  assert.deepEqual([fromLora.get('peft').from, fromLora.get('peft').to], ['lora', 'qlora']);
  assert.ok(!fromLora.has('framework') && !fromLora.has('seq_length'), [...fromLora.keys()].join());
  assert.equal(valueText(['q_proj', 'v_proj']), 'q_proj, v_proj');
  assert.equal(valueText(undefined), 'unset');
});

test('a setup\'s link with an unknown GPU falls back to the setup\'s GPU, not the start page\'s', () => {
  const link = restoreLink(`v=1&su=${qlora.id}&gpu=no-such-gpu`, engine);
  assert.deepEqual(link.rejected.map((r) => r.key), ['gpu']);
  assert.equal(link.gpu, qlora.gpu);
  assert.equal(link.capacity, capacityOf(qlora.gpu));
  // Without a setup an unknown GPU is the links' (link-config.js LINK_FALLBACK), as before.
  assert.equal(restoreLink('v=1&gpu=no-such-gpu', engine).gpu, 'h100-80gb');
});
