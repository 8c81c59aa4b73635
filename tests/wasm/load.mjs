// Loads the built module for Node tests. The module is built for the web (ENVIRONMENT=web,worker),
// and Node's fetch() cannot read file paths, so the bytes are handed over as wasmBinary.
import { readFile } from 'node:fs/promises';
import { createEngine } from '../../web/js/engine.js';

export const WASM_URL = new URL('../../web/wasm/trainmem.wasm', import.meta.url);
export const TOOLS_WASM_URL = new URL('../../web/wasm/trainmem-tools.wasm', import.meta.url);
/** The build's data beside the modules (web/scripts/engine-data.mjs). */
export const DATA_URL = new URL('../../web/wasm/trainmem-data.json', import.meta.url);

/** The build's data as the page fetches it. */
export async function readEngineData() {
  return JSON.parse(await readFile(DATA_URL, 'utf8'));
}

/** The page's engine with both modules loaded (the estimator, and the tools: imports, plan). */
export async function loadEngine() {
  const engine = await createEngine({ wasmBinary: await readFile(WASM_URL) }, await readEngineData());
  return engine.loadTools({ wasmBinary: await readFile(TOOLS_WASM_URL) });
}

/** A training setup every preset accepts (1 GPU, no parallelism). */
export const SINGLE_GPU = { seq_length: 4096, micro_batch_size: 1 };
