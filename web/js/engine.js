// The only file that touches the WebAssembly module. It loads trainmem.mjs once and exposes the
// core as plain JS objects: estimates through the numeric path (slots.js), the tools (imports,
// exports, the planner, the JSON documents) as JSON.stringify in, JSON.parse out.
// Two modules: trainmem.mjs (the estimator: everything a result needs) and trainmem-tools.mjs (the
// estimator plus importers, exporters and the planner), loaded on first use. What the page reads
// once before its first estimate (the field specs the slots follow, the result's schema, the
// presets, GPUs and setups) is trainmem-data.json beside them, written at build time from the
// tools module (web/scripts/engine-data.mjs, engineDataOf below): the estimator module neither
// carries nor formats it, so the first answer waits for no module call but its own (issue 31).
import { SlotCodec, parseFieldSpecs, parseMethodSettings } from './slots.js';

/** @typedef {import('../../wasm/trainmem').TrainmemModule} TrainmemModule */
/** @typedef {import('../../wasm/trainmem').TrainmemToolsModule} TrainmemToolsModule */
/** @typedef {import('../../wasm/trainmem').EngineData} EngineData */

/** @type {Promise<TrainmemModule> | undefined} */
let modulePromise;
/** @type {Promise<TrainmemToolsModule> | undefined} */
let toolsPromise;
/** @type {Promise<EngineData> | undefined} */
let dataPromise;

/**
 * Loads the module once; later calls share the same promise. `overrides` reaches the Emscripten
 * factory (Node passes { wasmBinary }, since fetch() cannot read file paths there).
 * @param {object} [overrides]
 * @returns {Promise<TrainmemModule>}
 */
export function loadModule(overrides = {}) {
  if (!modulePromise) {
    // The page's head script (js/boot.js) may have compiled the module already: instantiate that.
    const early = Promise.resolve(globalThis.trainmemWasm ?? null);
    modulePromise = Promise.all([import('../wasm/trainmem.mjs'), early]).then(([m, compiled]) => m.default(compiled
      ? { ...overrides, instantiateWasm: (imports, receive) => instantiateCompiled(compiled, imports, receive) }
      : overrides));
  }
  return modulePromise;
}

/** Emscripten's instantiateWasm hook over a compiled module: {} now, the instance to `receive` later. */
function instantiateCompiled(compiled, imports, receive) {
  WebAssembly.instantiate(compiled, imports).then((instance) => receive(instance, compiled),
    (error) => console.error(`the estimator module did not instantiate: ${error.message}`));
  return {};
}

/**
 * The build's data (wasm/trainmem-data.json) once: what js/boot.js fetched from the head, or
 * fetched here. Node passes it (`given`), since fetch() cannot read file paths there.
 * @param {EngineData} [given]
 * @returns {Promise<EngineData>}
 */
export function loadEngineData(given) {
  dataPromise ??= given ? Promise.resolve(given) : Promise.resolve(globalThis.trainmemData ?? null).then((early) => early
    ?? fetch(new URL('../wasm/trainmem-data.json', import.meta.url)).then(async (response) => {
      if (!response.ok) throw new Error(`wasm/trainmem-data.json could not be loaded (HTTP ${response.status})`);
      try {
        return JSON.parse(await response.text());
      } catch (error) {
        throw new Error(`wasm/trainmem-data.json is not valid JSON (${error.message}): rebuild it with web/scripts/build-wasm.sh`);
      }
    }));
  return dataPromise;
}

/**
 * What the page reads from the core before its first estimate, from a module that has it (the
 * tools module): web/scripts/engine-data.mjs writes this at build time as trainmem-data.json.
 * @param {TrainmemToolsModule} module
 * @returns {EngineData}
 */
export function engineDataOf(module) {
  return {
    version: module.version(),
    fieldCount: module.fieldCount(),
    fieldSpecsText: module.fieldSpecsText(),
    methodSettingsText: module.methodSettingsText(),
    slotTables: module.slotTables(),
    resultSchemaText: module.resultSchemaText(),
    presets: JSON.parse(module.presets()).presets,
    gpus: JSON.parse(module.gpus()).gpus,
    setups: JSON.parse(module.setups()).setups,
  };
}

/**
 * Loads the tools module once (importers, exporters, planner); `overrides` as for loadModule.
 * @returns {Promise<TrainmemToolsModule>}
 */
export function loadToolsModule(overrides = {}) {
  if (!toolsPromise) {
    toolsPromise = import('../wasm/trainmem-tools.mjs').then((m) => m.default(overrides));
  }
  return toolsPromise;
}

/**
 * Synchronous facade over a loaded module; the page calls it on every input change. The tools'
 * methods (imports, exports, plan) need `await engine.loadTools()` first.
 */
export class Engine {
  /**
   * @param {TrainmemModule} module
   * @param {EngineData} data the same build's data (trainmem-data.json, or engineDataOf(module))
   */
  constructor(module, data) {
    // The slots follow the field table's order: data of another build would misread every field.
    if (data?.version !== module.version() || data?.fieldCount !== module.fieldCount()) {
      throw new Error(`the estimator module (version ${module.version()}, ${module.fieldCount()} fields) and `
        + `wasm/trainmem-data.json (version ${data?.version}, ${data?.fieldCount} fields) are not of one build: `
        + 'rebuild them together (web/scripts/build-wasm.sh), or reload the page');
    }
    this.module = module;
    /** @type {TrainmemToolsModule | null} */
    this.toolsModule = null;
    // These never change for a given build: parse them once.
    this.fieldSpecs = parseFieldSpecs(data.fieldSpecsText);
    /** the same specs by field name */
    this.fieldSpecsByName = new Map(this.fieldSpecs.map((s) => [s.name, s]));
    /** what each fine-tuning method usually runs with (core method_settings) */
    this.methodSettings = parseMethodSettings(data.methodSettingsText);
    this.presets = data.presets;
    this.gpus = data.gpus;
    /** the fine-tuning setups (core/data/setups.json): complete runs to start from */
    this.setups = data.setups;
    this.version = data.version;
    // The fast path (slots.js): numbers in, numbers out, no JSON per call.
    this.codec = new SlotCodec(this.fieldSpecs, data.slotTables, data.resultSchemaText);
    /** module calls made so far, by kind (the page benchmark prints calls per keystroke) */
    this.calls = { view: 0, estimate: 0, fieldsInEffect: 0, check: 0 };
  }

  /**
   * @param {Record<string, unknown>} config Megatron field names -> values; unset fields omitted
   * @param {{ verbose?: boolean }} [options] verbose adds "trace" (every quantity and its formula)
   */
  estimate(config, { verbose = false } = {}) {
    this.calls.estimate += 1;
    const others = this.writeInput(config);
    this.module.estimateSlots(this.inputLengths.slots, this.inputLengths.order, others, verbose);
    // The text first: returning it may grow the module's memory, which detaches earlier views.
    const text = this.module.resultText();
    return this.codec.decode(this.module.resultNumbers(), text, verbose);
  }

  /**
   * The fields that mean something for `config` once the core resolves it, whatever its problems
   * (core fields_in_effect): a Set of names. The page shows and sends only these.
   * @param {Record<string, unknown>} config
   */
  fieldsInEffect(config) {
    this.calls.fieldsInEffect += 1;
    const others = this.writeInput(config);
    this.module.fieldsInEffectSlots(this.inputLengths.slots, this.inputLengths.order, others);
    const flags = this.module.resultNumbers();
    const names = new Set();
    this.fieldSpecs.forEach((spec, i) => { if (flags[i]) names.add(spec.name); });
    return names;
  }

  /**
   * What a view shows for the fields on screen, in one module call and one estimate (core
   * view_slots): which fields are in effect, and the result of the config without the ones that
   * are set but not in effect, with the run at each of `capacities` (result.capacity_fits).
   * @param {object} config the fields on screen (and gpu_memory_bytes)
   * @param {number[]} [capacities] bytes: the GPUs to compare with ("on every GPU")
   * @returns {{inEffect: Set<string>, result: object}}
   */
  view(config, capacities = [], { verbose = false } = {}) {
    const others = this.writeInput(config);
    this.module.viewSlots(this.inputLengths.slots, this.inputLengths.order, others, capacities, verbose);
    const text = this.module.resultText();
    const numbers = this.module.resultNumbers();
    const inEffect = new Set();
    this.fieldSpecs.forEach((spec, i) => { if (numbers[i]) inEffect.add(spec.name); });
    this.calls.view += 1;
    return { inEffect, result: this.codec.decode(numbers.subarray(this.fieldSpecs.length), text, verbose) };
  }

  /**
   * Checks a config without estimating it (core check_slots: resolve() alone): its issues, each
   * with the other fields its rule names (`related`), and the resolved config of the fields in
   * effect when that resolves.
   * @returns {{ok: boolean, issues: {field: string, message: string, related: string[]}[], config: object|null}}
   */
  check(config) {
    this.calls.check += 1;
    const others = this.writeInput(config);
    this.module.checkSlots(this.inputLengths.slots, this.inputLengths.order, others);
    const text = this.module.resultText();
    return this.codec.decodeCheck(this.module.resultNumbers(), text);
  }

  /** How many estimator passes (core estimator_passes) the module has run: the benchmark's count. */
  passes() {
    return this.module.estimatorPasses();
  }

  /** Writes a config into the module's input slots; returns the values no slot carries. */
  writeInput(config) {
    const { slots, order, lists, others } = this.codec.encode(config);
    const input = this.module.slotInput(slots.length + order.length + lists.length);
    input.set(slots);
    input.set(order, slots.length);
    input.set(lists, slots.length + order.length);
    this.inputLengths = { slots: slots.length, order: order.length };
    return others;
  }

  /** The same result as the JSON document the CLI writes (the tools module: await loadTools()). */
  estimateJson(config, { verbose = false } = {}) {
    return JSON.parse(this.tools.estimate(JSON.stringify(config), verbose));
  }

  /** Loads the tools module (once); resolves to this engine. */
  async loadTools(overrides) {
    this.toolsModule ??= await loadToolsModule(overrides);
    return this;
  }

  /** The tools module, or a clear error when loadTools() has not finished. */
  get tools() {
    if (!this.toolsModule) throw new Error('the tools module is not loaded yet: await engine.loadTools() first');
    return this.toolsModule;
  }

  /**
   * A Hugging Face config.json (text) merged over `base` (the page's config).
   * @returns {{ok: true, config: object, input: object, read: string[], assumed: string[], ignored: string[], whole_model: boolean} | {ok: false, issues: object[]}}
   */
  importHfConfig(text, base = {}) {
    return JSON.parse(this.tools.importHfConfig(String(text), JSON.stringify(base)));
  }

  /** A Megatron-LM command line (text) merged over `base`; same shape as importHfConfig. */
  importMegatronArgs(text, base = {}) {
    return JSON.parse(this.tools.importMegatronArgs(String(text), JSON.stringify(base)));
  }

  /**
   * A framework's config file (torchtune, torchtitan, axolotl, accelerate and deepspeed with the
   * launch command as text in launch or as words in overrides, megatron-args: Megatron-LM's test
   * config) as a parsed tree, with
   * what the file cannot say ({gpus, overrides, version, model, preset, hf_args, deepspeed, launch}),
   * merged over `base`; same shape as importHfConfig.
   */
  importFramework(kind, tree, options = {}, base = {}) {
    return JSON.parse(this.tools.importFramework(String(kind), JSON.stringify(tree), JSON.stringify(options), JSON.stringify(base)));
  }

  /**
   * A framework's launch command as text ('ms-swift-megatron': a Megatron-SWIFT `megatron sft`
   * command), read by the core's importer of that kind with the same options as importFramework.
   */
  importCommand(kind, text, options = {}, base = {}) {
    return JSON.parse(this.tools.importFramework(String(kind), String(text), JSON.stringify(options), JSON.stringify(base)));
  }

  /** What a parsed config tree is: 'torchtune', 'torchtitan', 'deepspeed', 'axolotl', 'accelerate', 'megatron-args', 'hf' or ''. */
  detectFramework(tree) {
    return this.tools.detectFramework(JSON.stringify(tree));
  }

  /** @returns {{ok: true, args: string, notes: string[]} | {ok: false, issues: object[]}} */
  exportMegatronArgs(config) {
    return JSON.parse(this.tools.exportMegatronArgs(JSON.stringify(config)));
  }

  /** Every resolved field: @returns {{ok: true, config: object} | {ok: false, issues: object[]}} */
  exportConfigJson(config) {
    return JSON.parse(this.tools.exportConfigJson(JSON.stringify(config)));
  }

  /** The set fields in the core's order, unresolved: {ok, config} or {ok: false, issues}. */
  configInputJson(config) {
    return JSON.parse(this.tools.configInputJson(JSON.stringify(config)));
  }

  /**
   * The planner: the layouts of `config` that fit. options: {gpus, gpu_memory_bytes, headroom,
   * max_results, solve, ...} (core/include/trainmem/planner.hpp). Can take tens of milliseconds:
   * the page runs it in a worker (plan-worker.js).
   */
  plan(config, options = {}) {
    return JSON.parse(this.tools.plan(JSON.stringify(config), JSON.stringify(options)));
  }

  /** The model types importHfConfig understands. */
  hfModelTypes() {
    return JSON.parse(this.tools.hfModelTypes());
  }
}

/**
 * @param {object} [overrides] for the Emscripten factory
 * @param {EngineData} [data] the build's data where it cannot be fetched (Node)
 */
export async function createEngine(overrides, data) {
  const [module, engineData] = await Promise.all([loadModule(overrides), loadEngineData(data)]);
  return new Engine(module, engineData);
}

/** An engine over the tools module alone (it estimates too, and has its own data): for the planner's worker. */
export async function createToolsEngine(overrides) {
  const module = await loadToolsModule(overrides);
  const engine = new Engine(module, engineDataOf(module));
  engine.toolsModule = module;
  return engine;
}
