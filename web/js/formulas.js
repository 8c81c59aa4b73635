// Formula text for the chart tooltips, taken from the core's trace (verbose mode). The page never
// derives a number here: it picks the trace entries behind a segment and prints them.
import { formatInteger } from './format.js';

// Trace entries (without their profile prefix, "bridge." or "lm.") behind each part.
const PART_ENTRIES = {
  dense: ['dense_per_gpu', 'dense_optimizer_shard', 'dense_bytes_per_parameter'],
  embedding: ['dense_per_gpu', 'dense_optimizer_shard', 'dense_bytes_per_parameter'],
  expert: ['routed_per_gpu', 'expert_optimizer_shard', 'expert_bytes_per_parameter'],
  activation: ['mlp_width_ratio', 'activation_per_layer', 'activation_layers',
    'activation_with_embedding', 'activation_bytes'],
};

// How the bytes per parameter split into tensor classes: the byte model the core states in its
// assumptions (Megatron's bf16 mixed-precision Adam, distributed-optimizer table).
const CLASS_NOTES = {
  weights: 'bf16 weight: 2 B per parameter',
  gradients: 'fp32 main gradient: 4 B per parameter',
  master_weights: 'fp32 master weight: 4 B per parameter, ÷ optimizer shard',
  optimizer_states: 'Adam m and v: 8 B per parameter, ÷ optimizer shard',
};

// trainmem profile: the resolved fields that set each class's bytes, and its trace entries.
const TRAINMEM_FIELDS = {
  weights: ['params_dtype', 'expert_params_dtype', 'fp8_param_gather', 'offload_params'],
  weight_copies: ['compute_dtype', 'fp8_recipe'],
  gradients: ['main_grads_dtype', 'framework', 'zero_stage'],
  master_weights: ['master_weights', 'main_params_dtype', 'optimizer_offload_fraction'],
  optimizer_states: ['optimizer', 'exp_avg_dtype', 'exp_avg_sq_dtype', 'optimizer_offload_fraction'],
  buffers: ['framework', 'zero_stage'],
  activation: ['attention_backend', 'recompute_granularity', 'pipeline_schedule'],
};
const TRAINMEM_PART_ENTRIES = {
  dense: ['params_on_gpu', 'dense_shard_group'],
  embedding: ['params_on_gpu', 'dense_shard_group'],
  expert: ['params_on_gpu', 'expert_shard_group'],
};

const short = (name) => name.replace(/^[a-z]+\./, '');
const number = (v) => (Number.isInteger(v) ? formatInteger(v) : String(+v.toPrecision(8)));

/**
 * @param {object} result a verbose estimate (result.trace: [{name, value, formula}])
 * @returns {(category: string, part: string|null) => string[]} lines for a tooltip
 */
export function formulaLookup(result) {
  const byName = new Map((result.trace ?? []).map((t) => [short(t.name), t]));
  if (result.profile === 'trainmem') {
    const config = result.config ?? {};
    const stage = result.stages?.find((s) => s.stage === result.most_loaded_stage);
    return (category, part) => {
      const lines = [];
      const set = (TRAINMEM_FIELDS[category] ?? []).filter((n) => config[n] !== undefined && config[n] !== null);
      if (set.length) lines.push(set.map((n) => `${n} = ${JSON.stringify(config[n])}`).join(', '));
      if (category === 'activation' && stage?.microbatches_in_flight) {
        lines.push(`microbatches_in_flight = ${stage.microbatches_in_flight} on stage ${stage.stage}`);
      }
      for (const name of TRAINMEM_PART_ENTRIES[part] ?? []) {
        const t = byName.get(name);
        if (t) lines.push(`${name} = ${number(t.value)} = ${t.formula}`);
      }
      return lines;
    };
  }
  return (category, part) => {
    const lines = [];
    if (CLASS_NOTES[category]) lines.push(CLASS_NOTES[category]);
    for (const name of PART_ENTRIES[part ?? category] ?? []) {
      const t = byName.get(name);
      if (t) lines.push(`${name} = ${number(t.value)} = ${t.formula}`);
    }
    return lines;
  };
}
