// The framework's words for the form's fields after an import: the key of the file (or the flag
// of the command line) each field was read from, as the core's import result names it
// (ImportResult::keys: the importers' Mapper::read and the Megatron-LM reader's flags). A field
// read from a formula or from several keys ("global_batch_size ← batch_size ×
// gradient_accumulation_steps × …") has no one key and keeps the trainmem words alone. Nothing
// here maps a field to a key itself, nor reads a note's text: what is shown is what the file that
// was imported used.

/** How the form names the framework of an import (the import panel's kinds). */
export const FRAMEWORK_NAMES = {
  hf: 'config.json', megatron: 'Megatron-LM', 'megatron-args': 'Megatron-LM', torchtune: 'torchtune',
  torchtitan: 'torchtitan', deepspeed: 'DeepSpeed', axolotl: 'axolotl', accelerate: 'accelerate',
};

/**
 * The file's key for each field an import read from exactly one key, where it differs from the
 * field's own name.
 * @param {Record<string, string>} keys an import result's `keys` (field -> the source's key)
 * @returns {Map<string, string>} field -> key
 */
export function keysRead(keys = {}) {
  return new Map(Object.entries(keys).filter(([field, key]) => key !== field));
}
