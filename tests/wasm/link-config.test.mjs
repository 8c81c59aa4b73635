// Reading a link for every view (web/js/link-config.js): the page, the embed view and the
// <trainmem-calculator> element all call restoreLink, so these properties hold for all three.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LINK_FALLBACK, START, configFromLink, editableState, estimateView, linkOfAttributes, linkProblems, pageLinkOf, restoreLink, splitViewOptions } from '../../web/js/link-config.js';
import { encodeState } from '../../web/js/url-state.js';
import { elementAttributes } from '../../web/js/share.js';
import { loadEngine } from './load.mjs';
import { execFileSync } from 'node:child_process';

const engine = await loadEngine();
const presetConfig = (id) => engine.presets.find((p) => p.id === id).config;
// The documentation's short form (docs/embedding.md): no checksum, only the fields it means.
const SHORT_FORM = 'v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb';
const SHORT_FIELDS = { tensor_model_parallel_size: 8, pipeline_model_parallel_size: 2, data_parallel_size: 4, seq_length: 8192, micro_batch_size: 1 };

test('a link means its fields: the short form is the preset plus them, as a config given to the CLI', () => {
  const link = restoreLink(SHORT_FORM, engine);
  const { gpu_memory_bytes: capacity, ...config } = link.config;
  assert.deepEqual(config, { ...presetConfig('llama-3.1-70b'), ...SHORT_FIELDS });
  assert.equal(capacity, engine.gpus.find((g) => g.id === 'h100-80gb').memory_bytes);
  // Fields the link lacks are left to the core: no page default turns them on.
  for (const name of ['sequence_parallel', 'use_distributed_optimizer', 'recompute_granularity']) assert.ok(!(name in link.fields), name);
  assert.deepEqual(link.rejected, []);
  assert.ok(engine.estimate(link.config).ok);
});

test('the page, the embed view and the element read the same state the same way', () => {
  // The embed gets it with view options; the element from its attributes (no "v", no checksum).
  const views = [
    restoreLink(SHORT_FORM, engine),
    restoreLink(splitViewOptions(`#${SHORT_FORM}&theme=dark`).state, engine),
    restoreLink('m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb', engine),
  ];
  const bytes = views.map((v) => engine.estimate(v.config).device_bytes);
  assert.ok(bytes.every((b) => b === bytes[0]) && bytes[0] > 0, String(bytes));
  for (const v of views) assert.deepEqual([v.gpu, v.unit, v.figure, v.name], ['h100-80gb', 'GiB', 'device', 'Llama 3.1 70B']);
});

test('no state is START for every view: a fine-tuning setup, as its own link gives it; the CLI gives its figure', () => {
  const start = restoreLink('', engine);
  const setup = engine.setups.find((s) => s.id === START.setup[0]);
  assert.equal(start.setup.id, setup.id);
  assert.equal(setup.method, 'LoRA');
  assert.deepEqual([start.preset.id, start.gpu, start.name], [setup.preset, setup.gpu, 'Llama 3.1 8B']);
  // The setup's fields, all of them: the setup fixes the accumulation (torchtune's
  // gradient_accumulation_steps), not the global batch, so a GPU count typed next meets no fixed
  // product.
  const rest = setup.config;
  assert.equal(rest.global_batch_size, undefined);
  assert.equal(rest.num_microbatches, 1);
  assert.deepEqual(start.fields, rest);
  assert.deepEqual([start.rejected, start.notes], [[], []]);
  // The fresh page is the setup's own link ("#su=<id>"): the same GPU, the same bytes.
  const asLink = restoreLink(`su=${setup.id}`, engine);
  assert.deepEqual([asLink.fields, asLink.gpu], [setup.config, start.gpu]);
  // The short link has nothing to keep or check: no note on its version or checksum (a link with a
  // value beside it is noted as of no version; a hand-written link gets no checksum note since
  // stop 46: only one cut from the page's is named).
  assert.deepEqual([asLink.notes, asLink.rejected], [[], []]);
  assert.deepEqual(restoreLink(`su=${setup.id}&s=4096`, engine).notes, ['The link has no format version; it was read as version 1.']);
  // A renamed setup's old id (its alias) still opens it: links written before the rename.
  for (const renamed of engine.setups.filter((s) => s.aliases?.length)) {
    const old = restoreLink(`su=${renamed.aliases[0]}`, engine);
    assert.deepEqual([old.setup.id, old.fields, old.rejected], [renamed.id, renamed.config, []]);
  }
  assert.equal(engine.estimate(start.config).device_bytes, engine.estimate(asLink.config).device_bytes);
  // Two GPUs are torchtune's distributed recipe, FSDP2 (the page's framework follows the GPU
  // count: recipe-words.js): the setup's single-device framework there is the core's named error.
  const onTwo = estimateView(engine, { ...editableState(start), fields: { ...rest, data_parallel_size: undefined, world_size: 2 } });
  assert.ok(!onTwo.result.ok && onTwo.result.issues.some((i) => i.rule === 'framework/torchtune-distributed'), JSON.stringify(onTwo.result.issues));
  const twoGpus = estimateView(engine, { ...editableState(start), fields: { ...rest, data_parallel_size: undefined, world_size: 2, framework: 'fsdp2' } });
  assert.ok(twoGpus.result.ok, JSON.stringify(twoGpus.result.issues));
  // Two GPUs keep the setup's accumulation (one batch of 2 per step on each), as torchtune does.
  assert.deepEqual([twoGpus.result.config.data_parallel_size, twoGpus.result.config.num_microbatches, twoGpus.result.config.micro_batch_size], [2, 1, 2]);
  // The native CLI's figure for the setup (`trainmem setups ID`: its config and its GPU's memory).
  const cli = new URL('../../build/core/cli/trainmem', import.meta.url).pathname;
  const config = execFileSync(cli, ['setups', setup.id]);
  const expected = JSON.parse(execFileSync(cli, ['estimate', '-'], { input: config }).toString());
  const view = estimateView(engine, editableState(start));
  assert.equal(view.headline.bytes, Math.round(expected.device_bytes));
  assert.equal(view.result.verdicts.device.fit, 'fits');
});

test("old links keep their bytes: what a link lacks still comes from the Megatron example links of format 1 were read against", () => {
  // The values links were read against before the fresh page became a fine-tuning run, written
  // out here by hand (not read from LINK_FALLBACK): Llama 3.1 8B on an H100 80GB, sequence 8192,
  // micro batch 1; a field the link gives is its own.
  const llama = presetConfig('llama-3.1-8b');
  const h100 = engine.gpus.find((g) => g.id === 'h100-80gb').memory_bytes;
  const cli = new URL('../../build/core/cli/trainmem', import.meta.url).pathname;
  const cliBytes = (config) => Math.round(JSON.parse(execFileSync(cli, ['estimate', '-'], { input: JSON.stringify(config) }).toString()).device_bytes);
  const cases = [
    // A whole link as the page wrote one (every applicable field, its checksum), from the old opening.
    ['v=1&m=llama-3.1-8b&tp=2&pp=1&dp=4&s=8192&b=1&sp=1&dopt=1&rc=selective&gpu=h100-80gb', { ...llama, seq_length: 8192, micro_batch_size: 1,
      tensor_model_parallel_size: 2, pipeline_model_parallel_size: 1, data_parallel_size: 4, sequence_parallel: true, use_distributed_optimizer: true, recompute_granularity: 'selective' }],
    // Partial ones: no GPU, no sequence, no micro batch, no model.
    ['v=1&m=llama-3.1-8b&tp=2&dp=4', { ...llama, seq_length: 8192, micro_batch_size: 1, tensor_model_parallel_size: 2, data_parallel_size: 4 }],
    ['v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&b=2', { ...presetConfig('llama-3.1-70b'), seq_length: 8192, micro_batch_size: 2, tensor_model_parallel_size: 8, pipeline_model_parallel_size: 2, data_parallel_size: 4 }],
    ['v=1&s=4096&tp=2', { ...llama, seq_length: 4096, micro_batch_size: 1, tensor_model_parallel_size: 2 }],
    ['v=1&peft=qlora&fw=ddp&rc=full&s=2048', { ...llama, seq_length: 2048, micro_batch_size: 1, peft: 'qlora', framework: 'ddp', recompute_granularity: 'full' }],
  ];
  for (const [fragment, expected] of cases) {
    const link = restoreLink(fragment, engine);
    assert.deepEqual([link.gpu, link.rejected], ['h100-80gb', []], fragment);
    const { gpu_memory_bytes: capacity, ...config } = link.config;
    assert.deepEqual([config, capacity], [expected, h100], fragment);
    const view = estimateView(engine, editableState(link));
    assert.equal(view.headline?.bytes, cliBytes({ ...expected, gpu_memory_bytes: h100 }), fragment);
  }
  assert.deepEqual([LINK_FALLBACK.fields.seq_length, LINK_FALLBACK.fields.micro_batch_size, LINK_FALLBACK.gpu[0], LINK_FALLBACK.preset[0]],
    [8192, 1, 'h100-80gb', 'llama-3.1-8b']);
});

test('an unknown GPU falls back to the links\' GPU, as a link of format 1 always did', () => {
  const unknown = restoreLink('v=1&m=llama-3.1-8b&s=4096&b=1&gpu=no-such-gpu', engine);
  assert.equal(unknown.gpu, 'h100-80gb');
  assert.deepEqual(unknown.rejected.map((r) => r.key), ['gpu']);
  assert.equal(restoreLink('v=1&m=llama-3.1-8b&s=4096&b=1', engine).gpu, 'h100-80gb');
});

test('a key given twice and a capacity that is not used are named, not silent (a newcomer\'s QA at stop 46)', () => {
  const twice = restoreLink('v=1&m=llama-3.1-8b&s=2048&b=1&gpu=h100-80gb&s=1024', engine);
  assert.equal(twice.fields.seq_length, 1024);
  assert.deepEqual(twice.rejected, [{ key: 's', reason: 'given twice: the later s=1024 was used, not 2048', replaced: true }]);
  // The same value twice changes nothing: nothing to say. And no fallback is said to have taken
  // a replaced value's place.
  assert.deepEqual(restoreLink('v=1&m=llama-3.1-8b&s=2048&b=1&gpu=h100-80gb&s=2048', engine).rejected, []);
  assert.deepEqual(linkProblems(twice, estimateView(engine, twice).result), ['s: given twice: the later s=1024 was used, not 2048']);
  // A field's key and its name are the same field.
  assert.deepEqual(restoreLink('v=1&m=llama-3.1-8b&seq_length=2048&b=1&s=4096', engine).rejected.map((r) => r.key), ['seq_length']);
  const beside = restoreLink('v=1&m=llama-3.1-8b&s=2048&b=1&gpu=h100-80gb&cap=40GB', engine);
  assert.equal(beside.capacity, engine.gpus.find((g) => g.id === 'h100-80gb').memory_bytes);
  assert.match(beside.rejected[0].reason, /^is read only with gpu=custom: the NVIDIA H100 80GB .*'s capacity was used$/);
  for (const cap of ['-5GB', 'abc', '0', '0.001']) {
    const bad = restoreLink(`v=1&m=llama-3.1-8b&s=2048&b=1&gpu=custom&cap=${cap}`, engine);
    assert.equal(bad.capacity, null, cap);
    assert.deepEqual(bad.rejected, [{ key: 'cap', reason: `must be a size of at least 1 GB, such as 96 GB or 80 GiB, got "${cap}"` }], cap);
  }
  const good = restoreLink('v=1&m=llama-3.1-8b&s=2048&b=1&gpu=custom&cap=40GB', engine);
  assert.deepEqual([good.capacity, good.rejected], [40e9, []]);
});

test('a link cut short or edited: the page\'s notice and the embed\'s and element\'s problems say so; a hand-written one gets no such note', () => {
  // A link as the page writes it: the fields set, every other field that applies as "~value".
  const fields = { ...presetConfig('llama-3.1-8b'), seq_length: 4096, micro_batch_size: 2, tensor_model_parallel_size: 2 };
  const { names, result } = estimateView(engine, { fields, gpu: 'h100-80gb', capacityText: '', unit: 'GiB', figure: 'device' });
  const written = encodeState({ fields, names, resolved: result.config, preset: 'llama-3.1-8b', gpu: 'h100-80gb', unit: 'GiB' }, engine.fieldSpecsByName);
  assert.ok(written.split('&').length >= 40 && written.includes('=~'), written);
  const cutAt = written.indexOf('&', written.length / 2);
  const cut = restoreLink(written.slice(0, cutAt), engine);
  const cutNote = cut.notes.find((n) => n.startsWith('The link was cut short: it ends at'));
  assert.ok(cutNote, cut.notes.join('\n'));
  assert.ok(linkProblems(cut, estimateView(engine, cut).result).includes(cutNote));
  const edited = restoreLink(written.replace('s=4096', 's=2048'), engine);
  assert.ok(linkProblems(edited, estimateView(engine, edited).result).some((p) => /checksum does not match/.test(p)));
  const whole = restoreLink(written, engine);
  assert.deepEqual([whole.notes, linkProblems(whole, estimateView(engine, whole).result)], [[], []]);
  const byHand = restoreLink(SHORT_FORM, engine);
  assert.deepEqual([byHand.notes, byHand.warnings], [[], []]);
  // A rejected value: the embed and the element say what took its place.
  const bad = restoreLink('v=1&m=llama-3.1-8b&s=abc&b=1&gpu=h100-80gb', engine);
  assert.deepEqual(linkProblems(bad, estimateView(engine, bad).result),
    ['seq_length: must be an integer, got the string "abc"', 'The figure uses the preset\'s or the default values in their place.']);
});

test('the Embed dialog\'s element, however many attributes: no note of a cut link, and its "Open in trainmem" link opens without notes (QA at stop 46)', () => {
  const start = restoreLink('', engine);
  const { names } = estimateView(engine, start);
  const attributes = elementAttributes({ ...start, capacity: '', names }, engine.fieldSpecsByName).map(([name, value]) => ({ name, value }));
  assert.ok(attributes.length >= 20, `${attributes.length} attributes`);
  const state = linkOfAttributes(attributes, engine.fieldSpecsByName);
  const element = restoreLink(state, engine);
  assert.deepEqual([element.warnings, linkProblems(element, estimateView(engine, element).result)], [[], []]);
  const opened = restoreLink(pageLinkOf(state), engine);
  assert.deepEqual([opened.notes, opened.rejected], [[], []]);
  assert.equal(engine.estimate(opened.config).device_bytes, engine.estimate(element.config).device_bytes);
});

test('what the core rejects is dropped, named, and falls back to the preset or to unset', () => {
  const link = restoreLink('v=1&m=llama-3.1-8b&L=abc&tp=3&s=4096&b=2', engine);
  const byKey = Object.fromEntries(link.rejected.map((r) => [r.key, r]));
  assert.equal(byKey.num_layers.value, 'abc');
  assert.equal(byKey.tensor_model_parallel_size.value, 3);
  assert.match(byKey.tensor_model_parallel_size.reason, /divisible by tensor_model_parallel_size \(3\)/);
  assert.equal(link.fields.num_layers, presetConfig('llama-3.1-8b').num_layers);
  assert.ok(!('tensor_model_parallel_size' in link.fields), 'a rejected field without a preset value is unset');
  assert.deepEqual([link.fields.seq_length, link.fields.micro_batch_size], [4096, 2], 'the valid fields are kept');
  assert.ok(engine.estimate(link.config).ok);
});

test('a link that lacks a required field or names no known preset still shows a result', () => {
  const cut = restoreLink('v=1&m=llama-3.1-70b&L=80', engine);
  assert.equal(cut.fields.micro_batch_size, LINK_FALLBACK.fields.micro_batch_size);
  assert.ok(engine.estimate(cut.config).ok);
  const unknown = restoreLink('v=1&m=no-such-model&s=4096', engine);
  assert.deepEqual(unknown.rejected.map((r) => r.key), ['m']);
  // The model it runs is the links' default preset's, and is named so (until stop 46: "Custom model").
  assert.deepEqual([unknown.name, unknown.preset.id], ['Llama 3.1 8B', 'llama-3.1-8b']);
  assert.ok(engine.estimate(unknown.config).ok);
});

test('configFromLink reads without the core; restoreLink checks the pin, read exactly as written', () => {
  const pin = `v=1&m=llama-3.1-8b&${new URLSearchParams({ L: 32, h: 4096, a: 32, g: 8, kv: 128, ffn: 14336, V: 128256, Vdiv: 128,
    tied: 0, glu: 1, act: 'silu', norm: 'RMSNorm', bias: 0, s: 4096, b: 1 })}`;
  const read = configFromLink(`v=1&m=llama-3.1-8b&s=4096&b=1&pin=${encodeURIComponent(pin)}`, engine);
  assert.equal(read.pin, pin);
  const restored = restoreLink(`v=1&m=llama-3.1-8b&s=4096&b=1&pin=${encodeURIComponent(pin)}`, engine);
  assert.deepEqual(restored.pin, { config: { ...presetConfig('llama-3.1-8b'), seq_length: 4096, micro_batch_size: 1 }, preset: 'llama-3.1-8b', label: 'Llama 3.1 8B' });
  const bad = restoreLink(`v=1&m=llama-3.1-8b&s=4096&b=1&pin=${encodeURIComponent('v=1&L=x')}`, engine);
  assert.equal(bad.pin, null);
  assert.deepEqual(bad.rejected.map((r) => r.key), ['pin']);
});

test("the Embed dialog's element attributes survive HTML's lowercase names and read back as the link's fields", () => {
  // A custom model (no preset): every field is an attribute, L, V and E among them.
  const fields = { num_layers: 40, hidden_size: 5120, num_attention_heads: 40, ffn_hidden_size: 13824, vocab_size: 32000,
    num_moe_experts: 8, moe_router_topk: 2, seq_length: 4096, micro_batch_size: 1, tensor_model_parallel_size: 4 };
  const attributes = elementAttributes({ fields, names: Object.keys(fields), preset: null, gpu: 'h100-80gb', unit: 'GB', figure: 'reserved' }, engine.fieldSpecsByName);
  for (const [name] of attributes) assert.equal(name, name.toLowerCase(), `${name} would reach the element as ${name.toLowerCase()}`);
  const link = restoreLink(linkOfAttributes(attributes.map(([name, value]) => ({ name: name.toLowerCase(), value })), engine.fieldSpecsByName), engine);
  assert.deepEqual(link.rejected, []);
  assert.deepEqual(Object.fromEntries(Object.keys(fields).map((name) => [name, link.fields[name]])), fields);
  assert.deepEqual([link.gpu, link.unit, link.figure], ['h100-80gb', 'GB', 'reserved']);
  // Written by hand with the link's short keys, as HTML keeps them: l and e are L and E.
  const byHand = restoreLink(linkOfAttributes([{ name: 'l', value: '40' }, { name: 'e', value: '8' }, { name: 'class', value: 'x' }], engine.fieldSpecsByName), engine);
  assert.deepEqual([byHand.fields.num_layers, byHand.fields.num_moe_experts, byHand.rejected], [40, 8, []]);
});

test('a link field that does not apply to the state is named when the core rejects it there, not dropped without a word', () => {
  const cases = [
    // A value of the wrong type in a field the default framework (megatron) has no use for.
    ['v=1&tc=yes', 'torch_compile', /^torch_compile: must be true or false, got the string "yes"$/],
    // A field of FSDP2's under DDP.
    ['v=1&feu=1&fw=ddp', 'fsdp_embedding_units', /^fsdp_embedding_units: needs framework fsdp2/],
    ['v=1&lr=16', 'lora_rank', /^lora_rank: applies to peft "lora" or "qlora" only$/],
    // torchtitan's per-op save list under Megatron's default recompute.
    ['v=1&sacc=0', 'op_sac_saves_cudnn_attention', /^op_sac_saves_cudnn_attention: applies to recompute_granularity "selective_op" only$/],
  ];
  for (const [fragment, field, reason] of cases) {
    const link = restoreLink(fragment, engine);
    assert.deepEqual(link.rejected.map((r) => r.key), [field], fragment);
    assert.match(link.rejected[0].reason, reason);
    assert.ok(!(field in link.fields), `${fragment}: ${field} kept`);
    assert.ok(engine.estimate(link.config).ok, fragment);
  }
  // The link's other values stay; one that applies and is valid is not named.
  const ddp = restoreLink('v=1&feu=1&fw=ddp&s=4096', engine);
  assert.deepEqual([ddp.fields.framework, ddp.fields.seq_length], ['ddp', 4096]);
  const fsdp = restoreLink('v=1&feu=1&fw=fsdp2&tc=1', engine);
  assert.deepEqual(fsdp.rejected, []);
  assert.deepEqual([fsdp.config.fsdp_embedding_units, fsdp.config.torch_compile], [true, true]);
  // Under per-op SAC with cuDNN attention the key changes the figure: the attention output and its
  // statistics are no longer saved.
  const saved = restoreLink('v=1&fw=fsdp2&rc=selective_op&attn=fused', engine);
  const recomputed = restoreLink('v=1&fw=fsdp2&rc=selective_op&attn=fused&sacc=0', engine);
  assert.deepEqual(recomputed.rejected, []);
  assert.equal(recomputed.config.op_sac_saves_cudnn_attention, false);
  const [a, b] = [engine.estimate(saved.config), engine.estimate(recomputed.config)];
  assert.ok(a.ok && b.ok && b.activation_bytes < a.activation_bytes);
});

test('what applies follows the change at once: FSDP2 makes the model code torchtitan, so torch.compile applies and the chunked loss does not', () => {
  // A Megatron run from a link (the links' example: Llama 3.1 8B, TP 2 × DP 4 on H100s).
  const start = editableState(restoreLink('v=1&m=llama-3.1-8b&tp=2&dp=4&sp=1&dopt=1&s=8192&b=1', engine));
  const megatron = estimateView(engine, { ...start, fields: { ...start.fields, recompute_granularity: 'full' } });
  assert.ok(megatron.result.ok && !megatron.names.includes('torch_compile'));
  // The core answers for the fields as they are now: fsdp2 resolves the model code to torchtitan.
  const fields = { ...start.fields, recompute_granularity: 'full', framework: 'fsdp2', torch_compile: true };
  const fsdp = estimateView(engine, { ...start, fields });
  assert.equal(fsdp.result.config.model_implementation, 'torchtitan');
  assert.ok(fsdp.names.includes('torch_compile') && !fsdp.names.includes('cross_entropy_chunks'), fsdp.names.join());
  assert.equal(fsdp.config.torch_compile, true, 'the set torch_compile reaches the core');
  assert.equal(fsdp.result.config.torch_compile, true);
});
