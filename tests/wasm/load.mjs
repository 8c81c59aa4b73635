// Loads the built module for Node tests. The module is built for the web (ENVIRONMENT=web,worker),
// and Node's fetch() cannot read file paths, so the bytes are handed over as wasmBinary.
import { readFile } from 'node:fs/promises';
import { createEngine } from '../../web/js/engine.js';

export const WASM_URL = new URL('../../web/wasm/trainmem.wasm', import.meta.url);

export async function loadEngine() {
  return createEngine({ wasmBinary: await readFile(WASM_URL) });
}

/** A training setup every preset accepts (1 GPU, no parallelism). */
export const SINGLE_GPU = { seq_length: 4096, micro_batch_size: 1 };
