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

const short = (name) => name.replace(/^[a-z]+\./, '');
const number = (v) => (Number.isInteger(v) ? formatInteger(v) : String(+v.toPrecision(8)));

/**
 * @param {object} result a verbose estimate (result.trace: [{name, value, formula}])
 * @returns {(category: string, part: string|null) => string[]} lines for a tooltip
 */
export function formulaLookup(result) {
  const byName = new Map((result.trace ?? []).map((t) => [short(t.name), t]));
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
