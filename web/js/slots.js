// The page's path to an estimate (core/include/trainmem/slots.hpp): a config goes to the module
// as numbers, one slot per field in the field table's order, and the result comes back as numbers
// in the order write_result_slots (core/src/json/slots.cpp) writes them, plus a few lines of text.
// decode() rebuilds exactly the object the JSON path returns (estimate_to_json); a test holds the
// two to the same object (tests/wasm/slots.test.mjs). A value no slot carries (an unknown field, a
// string in a number field, an object) travels as it is and the core reads it as a JSON reader
// would, so its message is the JSON path's; keys keep the config's order, so issues do too.

/** A value as JSON would carry it: [kind, value] for the module's other values (bindings.cpp). */
function describe(value) {
  if (value === null) return ['null', null];
  if (typeof value === 'number') return ['number', value];
  if (typeof value === 'boolean') return ['boolean', value];
  if (typeof value === 'string') return ['string', value];
  if (Array.isArray(value)) {
    // JSON writes undefined, functions and non-finite numbers inside a list as null.
    const list = value.map((v) => (v === undefined || typeof v === 'function' || (typeof v === 'number' && !Number.isFinite(v)) ? null : v));
    if (list.every((v) => typeof v === 'number')) return ['numbers', list];
    if (list.every((v) => typeof v === 'string')) return ['strings', list];
    return ['shape', 'a list'];
  }
  return ['shape', typeof value === 'object' ? 'an object' : 'a value'];
}

/** The core's field specs from the module's fieldSpecsText(): the objects field_specs_json writes. */
export function parseFieldSpecs(text) {
  return text.split('\n').filter(Boolean).map((line) => {
    const [name, type, group, required, min, max, choices, unit, defaultText, description, trainmemOnly] = line.split('\t');
    const spec = { name, type, group, required: required === '1' };
    if (min !== '') { spec.min = Number(min); spec.max = Number(max); }
    if (choices !== '') spec.choices = choices.split(',');
    Object.assign(spec, { unit, default: defaultText, description, trainmem_only: trainmemOnly === '1' });
    return spec;
  });
}

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

/** The reverse of the core's escaped() (slots.cpp): \t, \n and \\ back to a tab, a newline, a backslash. */
const unescaped = (text) => text.replace(/\\([tn\\])/g, (_, c) => (c === 't' ? '\t' : c === 'n' ? '\n' : '\\'));

/** The issues' text: one "field\tmessage" line each, tabs and newlines inside escaped. */
function parseIssues(text) {
  return text.split('\n').filter(Boolean).map((line) => {
    const [field, message] = line.split('\t');
    return { field: unescaped(field), message: unescaped(message) };
  });
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
    // One reader per field, chosen once: a slot's number as the JSON path's value.
    this.readers = specs.map((spec) => {
      if (spec.type === 'boolean') return (v) => v === 1;
      if (spec.type === 'choice') return (v) => spec.choices[v];
      if (spec.type === 'choice_list') return (v) => spec.choices.filter((_, c) => (v >> c) & 1);
      if (spec.type === 'integer_or_list') {
        return (v, n, layersAt) => (v === -1 ? Array.from(n.subarray(layersAt + 1, layersAt + 1 + n[layersAt])) : v);
      }
      return (v) => v;
    });
  }

  /**
   * The config as the module reads it: JSON.stringify's view of it (undefined and functions
   * dropped, NaN and Infinity as null) as slots, the order of its keys, moe_layer_freq's list,
   * and the values no slot carries.
   * @param {Record<string, unknown>} config
   * @returns {{slots: Float64Array, order: number[], layers: number[], others: Array<[string, string, unknown]>}}
   */
  encode(config) {
    const slots = this.slots.fill(NaN);
    const order = [];
    const others = [];
    let layers = [];
    const other = (name, kind, value) => { order.push(this.specs.length + others.length); others.push([name, kind, value]); };
    for (const [name, raw] of Object.entries(config)) {
      if (raw === undefined || typeof raw === 'function' || typeof raw === 'symbol') continue;
      const value = typeof raw === 'number' && !Number.isFinite(raw) ? null : raw;
      const i = this.index.get(name);
      const type = i === undefined ? null : this.specs[i].type;
      if (i === undefined) {
        other(name, ...describe(value));
      } else if (value === null) {
        order.push(i);  // unset
      } else if (typeof value === 'number' && (type === 'integer' || type === 'number' || type === 'integer_or_list')) {
        order.push(i);
        slots[i] = value;
      } else if (typeof value === 'boolean' && type === 'boolean') {
        order.push(i);
        slots[i] = value ? 1 : 0;
      } else if (typeof value === 'string' && type === 'choice' && this.choiceIndex[i].has(value)) {
        order.push(i);
        slots[i] = this.choiceIndex[i].get(value);
      } else if (Array.isArray(value) && type === 'choice_list' && value.every((v) => this.choiceIndex[i].has(v))) {
        order.push(i);
        slots[i] = value.reduce((mask, v) => mask | (1 << this.choiceIndex[i].get(v)), 0);
      } else if (Array.isArray(value) && type === 'integer_or_list' && value.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        order.push(i);
        slots[i] = -1;
        layers = value;
      } else {
        other(name, ...describe(value));
      }
    }
    return { slots, order, layers, others };
  }

  /**
   * The result object of the JSON path, from the module's numbers and text.
   * @param {Float64Array} n
   * @param {string} text
   * @param {boolean} [verbose] the text carries the trace
   */
  decode(n, text, verbose = false) {
    if (n[0] === 0) return { ok: false, issues: parseIssues(text) };
    const lines = text.split('\n');
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
        name: tables.component[kind], kind: tables.component_kind[kind],
        parameter_count: next(), parameter_count_per_gpu: next(), bytes_per_parameter: next(),
        optimizer_shard_size: next(), memory_bytes: next(),
      });
    }
    if (out.activation_bytes !== null) components.push({ name: 'activation', kind: 'activation', memory_bytes: out.activation_bytes });
    out.components = components;
    // The state rows come in the order the module's tables name them (k_state_rows).
    out.state = Object.fromEntries(tables.state.map((row) => [row, part()]));
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
      // The closest validation group (core confidence.cpp): its names are the text lines after
      // the NCCL communicators'.
      if (next() === 1) {
        const match = tables.confidence_match[next()];
        const points = next();
        const median = next();
        const p90 = next();
        out.confidence = {
          group: lines[textLine++], run_group: lines[textLine++], match, points,
          median_abs_error: median, p90_abs_error: p90, source: tables.confidence_source[0],
        };
      } else {
        out.confidence = null;
      }
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
    const suggestions = [];
    for (let i = 0, count = next(); i < count; i++) {
      const rank = next();
      const figure = next();
      const fields = {};
      for (let f = 0, nf = next(); f < nf; f++) {
        const spec = this.specs[next()];
        const kind = next();
        const v = next();
        fields[spec.name] = kind === 0 ? null : kind === 1 ? v === 1 : kind === 2 ? v : spec.choices[v];
      }
      suggestions.push({ fields, [trainmem ? 'device_bytes' : 'total_bytes']: figure, what: unescaped(lines[textLine++]), rank });
    }
    out.suggestions = suggestions;
    out.report = lines[1] === '' ? null : lines[1];
    out.summary = lines[0];
    out.config = this.decodeConfig(n, at);
    // With verbose, the text ends with the trace: "name\tvalue\tformula" per line.
    if (verbose) {
      out.trace = lines.slice(textLine).filter(Boolean).map((line) => {
        const [name, value, formula] = line.split('\t');
        return { name, value: value === 'null' ? null : Number(value), formula };
      });
    }
    return out;
  }

  /** The resolved config's slots (from `at`) as the JSON path's "config" object. */
  decodeConfig(n, at) {
    const config = {};
    const { specs, readers } = this;
    const layersAt = at + specs.length;
    for (let i = 0; i < specs.length; i++) {
      const v = n[at + i];
      config[specs[i].name] = Number.isNaN(v) ? null : readers[i](v, n, layersAt);
    }
    return config;
  }
}
