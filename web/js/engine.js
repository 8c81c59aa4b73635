// The only file that touches the WebAssembly module. It loads trainmem.mjs once and exposes the
// core's JSON API as plain JS objects (JSON.stringify in, JSON.parse out).
/** @typedef {import('../../wasm/trainmem').TrainmemModule} TrainmemModule */

/** @type {Promise<TrainmemModule> | undefined} */
let modulePromise;

/**
 * Loads the module once; later calls share the same promise. `overrides` reaches the Emscripten
 * factory (Node passes { wasmBinary }, since fetch() cannot read file paths there).
 * @param {object} [overrides]
 * @returns {Promise<TrainmemModule>}
 */
export function loadModule(overrides = {}) {
  if (!modulePromise) {
    modulePromise = import('../wasm/trainmem.mjs').then((m) => m.default(overrides));
  }
  return modulePromise;
}

/** Synchronous facade over a loaded module; the page calls it on every input change. */
export class Engine {
  /** @param {TrainmemModule} module */
  constructor(module) {
    this.module = module;
    // These never change for a given build: parse them once.
    this.fieldSpecs = JSON.parse(module.fieldSpecs());
    this.presets = JSON.parse(module.presets()).presets;
    this.gpus = JSON.parse(module.gpus()).gpus;
    this.version = module.version();
  }

  /**
   * @param {Record<string, unknown>} config Megatron field names -> values; unset fields omitted
   * @param {{ verbose?: boolean }} [options] verbose adds "trace" (every quantity and its formula)
   */
  estimate(config, { verbose = false } = {}) {
    return JSON.parse(this.module.estimate(JSON.stringify(config), verbose));
  }
}

/** @param {object} [overrides] */
export async function createEngine(overrides) {
  return new Engine(await loadModule(overrides));
}
