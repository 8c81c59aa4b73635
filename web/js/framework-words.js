// The framework's words for the form's fields after an import: the key of the file (or the flag
// of the command line) each field was read from, as the core's import notes say it. The notes are
// the importers' Mapper::read lines (core/src/import/mapping.hpp: "field ← key = value";
// the Megatron-LM reader's "field ← --flag value"). A field read from a formula or from several
// keys ("global_batch_size ← batch_size × gradient_accumulation_steps × …") has no one key and
// keeps the trainmem words alone. Nothing here maps a field to a key itself: what is shown is what
// the file that was imported used.

/** How the form names the framework of an import (the import panel's kinds). */
export const FRAMEWORK_NAMES = {
  hf: 'config.json', megatron: 'Megatron-LM', 'megatron-args': 'Megatron-LM', torchtune: 'torchtune',
  torchtitan: 'torchtitan', deepspeed: 'DeepSpeed', axolotl: 'axolotl', accelerate: 'accelerate',
};

const READ = /^(\w+) ← (--[\w-]+(?= )|[A-Za-z_][\w.-]*(?= = ))/;

/**
 * The file's key for each field an import read from exactly one key, where it differs from the
 * field's own name.
 * @param {string[]} notes an import result's `read`
 * @returns {Map<string, string>} field -> key
 */
export function keysRead(notes = []) {
  const keys = new Map();
  for (const note of notes) {
    const m = READ.exec(note);
    if (m && m[2] !== m[1] && !keys.has(m[1])) keys.set(m[1], m[2]);
  }
  return keys;
}
