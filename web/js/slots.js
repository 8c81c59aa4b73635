// The page's fast path to an estimate (core/include/trainmem/slots.hpp): a config goes to the
// module as numbers, one slot per field in the field table's order, and the result comes back as
// numbers in the order write_result_slots (core/src/json/slots.cpp) writes them, plus a few lines
// of text. decode() rebuilds exactly the object the JSON path returns (estimate_to_json); a test
// holds the two to the same object (tests/wasm/slots.test.mjs). A config the slots cannot carry
// (an unknown field, a value of the wrong type: cases whose message the JSON path words) is left
// to the JSON path: encode() returns null.

const SLOT_TYPES = new Set(['integer', 'number', 'boolean', 'choice', 'choice_list', 'integer_or_list']);

/** The names the result's numbers index, from the module's slotTables() text. */
function parseTables(text) {
  const tables = {};
  for (const line of text.split('\n')) {
    if (!line) continue;
    const tab = line.indexOf('\t');
    (tables[line.slice(0, tab)] ??= []).push(line.slice(tab + 1));
  }
  return tables;
}

export class SlotCodec {
  /**
   * @param {object[]} specs the core's field specs (engine.fieldSpecs), in the table's order
   * @param {string} tablesText the module's slotTables()
   */
  constructor(specs, tablesText) {
    this.specs = specs;
    this.index = new Map(specs.map((s, i) => [s.name, i]));
    this.choiceIndex = specs.map((s) => new Map((s.choices ?? []).map((c, i) => [c, i])));
    this.tables = parseTables(tablesText);
    this.profiles = specs[this.index.get('profile')].choices;
    this.slots = new Float64Array(specs.length);
  }

  /**
   * @param {Record<string, unknown>} config
   * @returns {{slots: Float64Array, layers: number[]} | null} null when only the JSON path can say what is wrong
   */
  encode(config) {
    const slots = this.slots.fill(NaN);
    let layers = [];
    for (const [name, value] of Object.entries(config)) {
      const i = this.index.get(name);
      if (i === undefined) return null;
      if (value === null || value === undefined) continue;
      const spec = this.specs[i];
      if (!SLOT_TYPES.has(spec.type)) return null;
      if (typeof value === 'number') {
        // JSON would write NaN and Infinity as null (unset): let the JSON path keep that meaning.
        if (!Number.isFinite(value) || spec.type === 'boolean' || spec.type === 'choice' || spec.type === 'choice_list') return null;
        slots[i] = value;
      } else if (typeof value === 'boolean') {
        if (spec.type !== 'boolean') return null;
        slots[i] = value ? 1 : 0;
      } else if (typeof value === 'string') {
        const choice = this.choiceIndex[i].get(value);
        if (spec.type !== 'choice' || choice === undefined) return null;
        slots[i] = choice;
      } else if (Array.isArray(value)) {
        if (spec.type === 'choice_list' && value.every((v) => typeof v === 'string')) {
          let mask = 0;
          for (const v of value) {
            const choice = this.choiceIndex[i].get(v);
            if (choice === undefined) return null;
            mask |= 1 << choice;
          }
          slots[i] = mask;
        } else if (spec.type === 'integer_or_list' && value.every((v) => typeof v === 'number' && Number.isFinite(v))) {
          slots[i] = -1;
          layers = value;
        } else {
          return null;
        }
      } else {
        return null;
      }
    }
    return { slots, layers };
  }

  /**
   * The result object of the JSON path, from the module's numbers and text.
   * @param {Float64Array} n
   * @param {string} text
   */
  decode(n, text) {
    const lines = text.split('\n');
    if (n[0] === 0) {
      const issues = lines.filter(Boolean).map((line) => {
        const tab = line.indexOf('\t');
        return { field: line.slice(0, tab), message: line.slice(tab + 1) };
      });
      return { ok: false, issues };
    }
    const { tables } = this;
    let at = 1;
    const next = () => n[at++];
    const bytes = () => { const v = n[at++]; return Number.isNaN(v) ? null : v; };
    const moments = () => ({
      forward: next(), backward: next(), optimizer_step: next(), peak: tables.moment[next()],
      peak_activation_bytes: next(), peak_temporary_bytes: next(),
    });
    const part = () => ({ dense: next(), embedding: next(), expert: next() });

    const out = { ok: true };
    out.profile = this.profiles[next()];
    const trainmem = out.profile === 'trainmem';
    out.weight_and_optimizer_bytes = next();
    out.activation_bytes = bytes();
    out.total_bytes = next();
    const components = [];
    for (let i = 0, count = next(); i < count; i++) {
      const kind = next();
      components.push({
        name: tables.component[kind], kind: kind === 1 ? 'routed_experts' : 'dense_and_embedding',
        parameter_count: next(), parameter_count_per_gpu: next(), bytes_per_parameter: next(),
        optimizer_shard_size: next(), memory_bytes: next(),
      });
    }
    if (out.activation_bytes !== null) components.push({ name: 'activation', kind: 'activation', memory_bytes: out.activation_bytes });
    out.components = components;
    out.state = {
      weights: part(), weight_copies: part(), gradients: part(), master_weights: part(),
      optimizer_states: part(), buffers: part(),
    };
    out.cpu_bytes = next();
    let textLine = 2;  // after the summary and the training log's line
    if (trainmem) {
      out.allocated_bytes = out.total_bytes;
      out.reserved_bytes = next();
      out.device_bytes = next();
      const overheads = {
        allocator_bytes: out.reserved_bytes - out.total_bytes, cuda_context_bytes: next(), nccl_bytes: next(),
        nccl_communicators: 0, workspace_bytes: next(),
      };
      const groups = [];
      const nGroups = next();
      overheads.nccl_communicators = nGroups;
      for (let i = 0; i < nGroups; i++) groups.push({ name: lines[textLine++], gpus: next(), gpus_on_node: next(), bytes: next() });
      overheads.nccl_groups = groups;
      const overheadLines = [];
      for (let i = 0, count = next(); i < count; i++) {
        overheadLines.push({ key: tables.overhead[next()], bytes: next(), adds_to: tables.figure[next()] });
      }
      overheads.lines = overheadLines;
      out.overheads = overheads;
      out.most_loaded_stage = next();
      out.moments = moments();
      out.minimum_devices = bytes();
      const dsGpu = next();
      const dsCpu = next();
      if (dsGpu > 0) out.deepspeed_estimator = { gpu_bytes: dsGpu, cpu_bytes: dsCpu };
    }
    out.params = {
      total: next(), dense_transformer: next(), embedding: next(), routed_experts: next(), active: next(),
      per_gpu: next(), dense_per_gpu: next(), embedding_per_gpu: next(), routed_per_gpu: next(),
    };
    out.layers = { total: next(), dense: next(), moe: next() };
    const stages = [];
    for (let r = 0, count = next(); r < count; r++) {
      const stage = { stage: r, num_layers: next(), dense_params: next(), routed_params: next(), weight_and_optimizer_bytes: next() };
      if (trainmem) {
        stage.activation_bytes = next();
        stage.microbatches_in_flight = next();
        stage.moments = moments();
        stage.total_bytes = next();
        stage.allocated_bytes = stage.total_bytes;
        stage.reserved_bytes = next();
        stage.device_bytes = next();
      } else {
        stage.activation_bytes = bytes();
      }
      stages.push(stage);
    }
    out.stages = stages;
    const assumptions = [];
    for (let i = 0, count = next(); i < count; i++) assumptions.push(tables.assumption[next()]);
    out.assumptions = assumptions;
    out.report = lines[1] === '' ? null : lines[1];
    out.summary = lines[0];
    out.config = this.decodeConfig(n, at);
    return out;
  }

  /** The resolved config's slots (from `at`) as the JSON path's "config" object. */
  decodeConfig(n, at) {
    const config = {};
    const layersAt = at + this.specs.length;
    for (let i = 0; i < this.specs.length; i++) {
      const spec = this.specs[i];
      const v = n[at + i];
      let value;
      if (Number.isNaN(v)) value = null;
      else if (spec.type === 'boolean') value = v === 1;
      else if (spec.type === 'choice') value = spec.choices[v];
      else if (spec.type === 'choice_list') value = spec.choices.filter((_, c) => (v >> c) & 1);
      else if (spec.type === 'integer_or_list' && v === -1) value = Array.from(n.subarray(layersAt + 1, layersAt + 1 + n[layersAt]));
      else value = v;
      config[spec.name] = value;
    }
    return config;
  }
}
