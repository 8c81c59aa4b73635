// The share-link format (web/js/url-state.js): round trips, a pinned encoding, and what a reader
// does with tampered, truncated and future links. Values are judged by the core, not here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FORMAT_VERSION, PAGE_KEYS, checksum, decodeState, encodeState, fieldOfKey, listToText, textToList,
} from '../../web/js/url-state.js';
import { parseInput } from '../../web/js/form.js';
import { loadEngine } from './load.mjs';

const engine = await loadEngine();
const specs = new Map(engine.fieldSpecs.map((s) => [s.name, s]));

const STATE = {
  fields: { num_layers: 32, hidden_size: 4096, gated_linear_unit: true, activation_func: 'silu',
    moe_layer_freq: [0, 0, 0, 1, 1, 1], tensor_model_parallel_size: 2 },
  names: ['num_layers', 'hidden_size', 'num_query_groups', 'gated_linear_unit', 'activation_func',
    'moe_layer_freq', 'tensor_model_parallel_size'],
  resolved: { num_query_groups: 32 },
  preset: 'llama-3.1-8b', gpu: 'h100-80gb', capacity: '', unit: 'GiB',
};

test('the encoding of a fixed state is pinned (links made today must stay readable)', () => {
  assert.equal(encodeState(STATE, specs),
    'v=1&m=llama-3.1-8b&L=32&h=4096&g=~32&glu=1&act=silu&freq=0*3,1*3&tp=2&gpu=h100-80gb&u=GiB&ck=17m85re');
});

test('decode(encode(state)) gives back the set fields, the resolved defaults and the page state', () => {
  const back = decodeState(`#${encodeState(STATE, specs)}`, specs);
  assert.deepEqual(back.fields, STATE.fields);
  assert.deepEqual(back.auto, { num_query_groups: 32 });
  assert.equal(back.preset, 'llama-3.1-8b');
  assert.equal(back.gpu, 'h100-80gb');
  assert.equal(back.unit, 'GiB');
  assert.equal(back.version, FORMAT_VERSION);
  assert.equal(back.integrity, 'ok');
  assert.deepEqual(back.rejected, []);
  assert.deepEqual(back.notes, []);
});

test('a custom capacity survives the trip', () => {
  const back = decodeState(encodeState({ ...STATE, gpu: 'custom', capacity: '95.5GiB' }, specs), specs);
  assert.equal(back.gpu, 'custom');
  assert.equal(back.capacity, '95.5GiB');
});

// The link keys links were published with (web/js/url-state.js FIELD_KEYS until the core's field
// rows carried them, and every key added since). Keys are append-only: a link someone shared must
// keep its meaning, so a key here must name the same field for ever. A new field adds a line.
const PUBLISHED_KEYS = Object.freeze({
  profile: 'prof', num_layers: 'L', hidden_size: 'h', num_attention_heads: 'a', num_query_groups: 'g',
  kv_channels: 'kv', ffn_hidden_size: 'ffn', vocab_size: 'V', make_vocab_size_divisible_by: 'Vdiv',
  should_pad_vocab: 'Vpad', share_embeddings_and_output_weights: 'tied', gated_linear_unit: 'glu', swiglu: 'swiglu',
  add_bias_linear: 'bias', activation_func: 'act', normalization: 'norm', num_moe_experts: 'E', moe_layer_freq: 'freq',
  moe_ffn_hidden_size: 'fe', moe_router_topk: 'topk', moe_shared_expert_intermediate_size: 'fs', moe_latent_size: 'lat',
  moe_shared_expert_gate: 'sgate', mtp_num_layers: 'mtp', multi_latent_attention: 'mla', q_lora_rank: 'qr',
  kv_lora_rank: 'kvr', qk_head_dim: 'qkd', qk_pos_emb_head_dim: 'roped', v_head_dim: 'vd', seq_length: 's',
  micro_batch_size: 'b', global_batch_size: 'gbs', num_microbatches: 'nmb', use_distributed_optimizer: 'dopt',
  sequence_parallel: 'sp', recompute_granularity: 'rc', tensor_model_parallel_size: 'tp',
  pipeline_model_parallel_size: 'pp', virtual_pipeline_model_parallel_size: 'vpp',
  num_layers_in_first_pipeline_stage: 'ppf', num_layers_in_last_pipeline_stage: 'ppl', pipeline_stage_layers: 'ppsl',
  context_parallel_size: 'cp', expert_model_parallel_size: 'ep', expert_tensor_parallel_size: 'etp',
  data_parallel_size: 'dp', world_size: 'world', max_position_embeddings: 'maxpos', add_qkv_bias: 'qkvb',
  qk_layernorm: 'qkln', framework: 'fw', zero_stage: 'zero', data_parallel_shard_size: 'dps', gpus_per_node: 'gpn',
  params_dtype: 'dt', expert_params_dtype: 'edt', compute_dtype: 'cdt', master_weights: 'mw', main_params_dtype: 'mdt',
  main_grads_dtype: 'gdt', exp_avg_dtype: 'm1dt', exp_avg_sq_dtype: 'm2dt', fp8_recipe: 'fp8', fp8_param_gather: 'fp8pg',
  optimizer: 'opt', momentum: 'mom', optimizer_implementation: 'oimpl', optimizer_offload_fraction: 'ooff',
  offload_params: 'poff', zero_init: 'zinit', additional_buffer_factor: 'abf', reduce_bucket_size: 'rbs',
  contiguous_gradients: 'cgr', overlap_comm: 'ovc', gradient_as_bucket_view: 'gbv', allocator_fragmentation: 'frag',
  cuda_context_bytes: 'ctx', nccl_bytes_per_communicator: 'nccl', nccl_nvls: 'nvls', workspace_bytes: 'ws',
  attention_backend: 'attn', attention_dropout: 'adrop', hidden_dropout: 'hdrop', moe_expert_capacity_factor: 'cf',
  recompute_method: 'rcm', recompute_num_layers: 'rcn', recompute_modules: 'rcmod', pipeline_schedule: 'sched',
  pipeline_outputs: 'ppout', cross_entropy_loss_fusion: 'cef', peft: 'peft', lora_rank: 'lr', lora_target_modules: 'ltm',
  lora_dropout: 'ldrop', lora_modules_to_save: 'lms', optimizer_in_backward: 'oib', activation_offload: 'aoff',
  paged_optimizer: 'paged', cross_entropy_chunks: 'cec', model_implementation: 'mimpl', torch_compile: 'tc',
  fused_linear_cross_entropy: 'flce', moe_routing_imbalance: 'mri', fsdp_embedding_units: 'feu',
  op_sac_saves_cudnn_attention: 'sacc', nf4_double_quant: 'dq', quantize_lm_head: 'qlmh', kbit_upcast: 'kbu',
  bnb_keeps_matmul_input: 'bkmi', cut_cross_entropy: 'cce', fsdp_version: 'fsdpv',
  store_param_remainders: 'spr',
});

test('every published link key still names its field, every field has a key and a label, and no two share a key', () => {
  for (const [name, key] of Object.entries(PUBLISHED_KEYS)) {
    assert.equal(specs.get(name)?.link_key, key, `${name}: a published link key must not change`);
    assert.equal(fieldOfKey(specs, key), name);
  }
  const keys = [...specs.values()].map((s) => s.link_key);
  for (const spec of specs.values()) {
    assert.ok(spec.link_key, `${spec.name} has no link key`);
    assert.ok(spec.label, `${spec.name} has no label`);
  }
  assert.equal(new Set(keys).size, keys.length, 'two fields share a link key');
  // A key must not be another field's name (a link may spell either).
  for (const spec of specs.values()) assert.ok(!specs.has(spec.link_key) || spec.link_key === spec.name, spec.name);
  // Nor a page key ("m", "gpu", ...) or the format version.
  for (const key of ['v', 'ck', ...Object.values(PAGE_KEYS)]) assert.ok(!keys.includes(key), key);
});

test('0/1 layer patterns are written as runs and read in three spellings', () => {
  const pattern = [0, 0, 0, ...Array(58).fill(1)];
  assert.equal(listToText(pattern), '0*3,1*58');
  assert.deepEqual(textToList('0*3,1*58'), pattern);
  assert.deepEqual(textToList('[0]*3+[1]*58'), pattern);
  assert.deepEqual(textToList('[0,0,0,1]'), [0, 0, 0, 1]);
  assert.equal(textToList('[0]*3+banana'), null);
  assert.equal(textToList('1*99999999'), null); // no giant allocations from a link
});

test('unknown keys, pairs without a value and broken escapes are rejected by name; the rest is kept', () => {
  const body = 'v=1&L=32&zzz=4&h&tp=%E0%A4%A&s=4096';
  const back = decodeState(`${body}&ck=${checksum(body)}`, specs);
  assert.deepEqual(back.fields, { num_layers: 32, seq_length: 4096 });
  assert.deepEqual(back.rejected.map((r) => r.key), ['zzz', 'h', 'tp=%E0%A4%A']);
  assert.equal(back.integrity, 'ok');
});

test('values of the wrong shape are kept as text, so the core names the problem', () => {
  const back = decodeState('v=1&L=thirty&glu=maybe&tp=2.5', specs);
  assert.deepEqual(back.fields, { num_layers: 'thirty', gated_linear_unit: 'maybe', tensor_model_parallel_size: 2.5 });
  const result = engine.estimate({ ...back.fields, hidden_size: 64, num_attention_heads: 8, vocab_size: 100,
    seq_length: 16, micro_batch_size: 1 });
  assert.equal(result.ok, false);
  assert.deepEqual(result.issues.map((i) => i.field).sort(),
    ['gated_linear_unit', 'num_layers', 'tensor_model_parallel_size']);
});

test('a truncated or edited link is flagged, and what is left is still read', () => {
  const full = encodeState(STATE, specs);
  const cut = decodeState(full.slice(0, full.indexOf('&act=')), specs);
  assert.equal(cut.integrity, 'cut');
  assert.equal(cut.lastPair, full.slice(0, full.indexOf('&act=')).split('&').at(-1));
  assert.equal(cut.fields.num_layers, 32);
  // Cut just before the checksum: nothing is missing but the check.
  assert.equal(decodeState(full.replace(/&ck=[0-9a-z]+$/, ''), specs).integrity, 'unchecked');
  // A hand-written link (a few pairs, no "~"): no checksum, nothing said of one.
  assert.equal(decodeState('v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb', specs).integrity, 'missing');
  // A value cut after its "~" is named, where the field's type has no empty value.
  assert.deepEqual(decodeState('v=1&L=32&tp=~', specs).rejected, [{ key: 'tp', reason: 'has no value' }]);
  const edited = decodeState(full.replace('L=32', 'L=33'), specs);
  assert.equal(edited.integrity, 'mismatch');
  assert.equal(edited.fields.num_layers, 33);
});

test('a link from a newer version is read with the keys this version knows, with a note', () => {
  const back = decodeState('v=7&L=32&warp=9', specs);
  assert.equal(back.version, 7);
  assert.equal(back.fields.num_layers, 32);
  assert.deepEqual(back.rejected.map((r) => r.key), ['warp']);
  assert.match(back.notes.join(' '), /newer trainmem \(link format 7\)/);
});

test('Megatron field names work as keys in a hand-written link', () => {
  const back = decodeState('num_layers=12&hidden_size=768', specs);
  assert.deepEqual(back.fields, { num_layers: 12, hidden_size: 768 });
  assert.match(back.notes.join(' '), /no format version/);
});

test('typed input: separators are allowed in integers, anything else goes to the core as text', () => {
  assert.equal(parseInput('8,192', 'integer'), 8192);
  assert.equal(parseInput(' 8_192 ', 'integer'), 8192);
  assert.equal(parseInput('', 'integer'), undefined);
  assert.equal(parseInput('12a', 'integer'), '12a');
  assert.equal(parseInput('1.5', 'integer'), 1.5);
  // Thousands separators only between groups of three digits, one kind in a number; elsewhere a
  // separator makes the text no number (QA at stop 46: "1,5" was read as 15, "0,1" as 1, "1,,2"
  // as 12 and "4,09,6" as 4096, each without a word).
  for (const [typed, type, value] of [['2,048', 'integer', 2048], ['1,000,000', 'integer', 1e6], ['1 000 000', 'integer', 1e6],
    ['1\u202f000', 'integer', 1000], ['1,234.5', 'number', 1234.5], ['1e30', 'number', 1e30],
    ['1,250', 'integer', 1250], ['85,520,809,984', 'number', 85520809984]]) {
    assert.equal(parseInput(typed, type), value, typed);
  }
  for (const [typed, type] of [['1,5', 'integer'], ['0,1', 'number'], ['0,05', 'number'], ['1,,2', 'integer'], ['4,09,6', 'integer'],
    ['1,000_000', 'integer'], ['1.234,5', 'number'], ['12,34', 'integer'], [',5', 'number'], ['5,', 'integer'],
    // A decimal comma before three digits, in a field of decimals (second QA pass): no number.
    ['1,250', 'number'], ['1,500', 'number'], ['1 250', 'number'], ['0,125', 'number'], ['0,125', 'integer']]) {
    assert.equal(parseInput(typed, type), typed, typed);
  }
  assert.equal(parseInput('1 000', 'integer_or_list'), 1000);
  assert.equal(parseInput('1 0', 'integer_or_list'), '1 0');
  assert.equal(parseInput('2', 'integer_or_list'), 2);
  assert.deepEqual(parseInput('[0]*2+[1]', 'integer_or_list'), [0, 0, 1]);
  // A per-stage list: commas or runs, blanks around them; blanks between two numbers would join
  // them ("20 12" is not 2012), and a run of none is no run: both go to the core as text.
  assert.deepEqual(parseInput(' 7 , 8*3 , 7 ', 'integer_list'), [7, 8, 8, 8, 7]);
  assert.deepEqual(parseInput('[7] + [8]*2', 'integer_list'), [7, 8, 8]);
  assert.equal(parseInput('20 12', 'integer_list'), '20 12');
  assert.equal(parseInput('1 6, 16', 'integer_list'), '1 6, 16');
  assert.equal(parseInput('3*0,32', 'integer_list'), '3*0,32');
});

test('the compared figure and a pinned configuration travel in the link and come back', () => {
  const pin = encodeState({ fields: { num_layers: 16, seq_length: 4096 }, names: ['num_layers', 'seq_length'],
    preset: null, gpu: 'h100-80gb', unit: 'GiB' }, specs);
  const text = encodeState({ ...STATE, figure: 'reserved', pin }, specs);
  const back = decodeState(text, specs);
  assert.equal(back.figure, 'reserved');
  assert.equal(back.pin, pin);
  assert.equal(back.integrity, 'ok');
  assert.deepEqual(back.rejected, []);
  const inner = decodeState(back.pin, specs);
  assert.deepEqual(inner.fields, { num_layers: 16, seq_length: 4096 });
  assert.equal(inner.integrity, 'ok');
  assert.deepEqual(decodeState('v=1&fig=most', specs).rejected.map((r) => r.key), ['fig']);
});

test('trainmem-profile fields have short keys and round-trip, lists included', () => {
  const fields = { framework: 'deepspeed', zero_stage: 3, optimizer: 'adamw', recompute_modules: ['core_attn', 'mlp'],
    optimizer_offload_fraction: 0.5, cuda_context_bytes: 536870912 };
  const names = Object.keys(fields);
  const text = encodeState({ fields, names, preset: null, gpu: 'h100-80gb', unit: 'GiB' }, specs);
  assert.match(text, /&fw=deepspeed&zero=3&opt=adamw&rcmod=core_attn,mlp&ooff=0\.5&ctx=536870912&/);
  assert.deepEqual(decodeState(text, specs).fields, fields);
});
