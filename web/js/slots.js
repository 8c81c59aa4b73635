// The page's path to an estimate (core/include/trainmem/slots.hpp, which has the layout): a config
// goes to the module as numbers, one slot per field in the field table's order, and the result
// comes back as numbers and lines of text, which decode() reads front to back into exactly the
// object the JSON path returns (estimate_to_json), by the result schema the module gives
// (resultSchemaText: core/src/json/result_schema.hpp, the one declaration of a result's keys, which
// both core writers walk); a test holds the two to the same object (tests/wasm/slots.test.mjs).
// Decoding only: every value, derived ones included, is the core's, and no key is named here.
// A value no slot carries (an unknown field, a string in a number field, an object) travels as it
// is and the core reads it as a JSON reader would, so its message is the JSON path's; keys keep
// the config's order, so issues do too.

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

/** The reverse of the core's escaped() (slots.cpp): \t, \n and \\ back to a tab, a newline, a backslash. */
const unescaped = (text) => (text.includes('\\') ? text.replace(/\\([tn\\])/g, (_, c) => (c === 't' ? '\t' : c === 'n' ? '\n' : '\\')) : text);

/** A line of tab-separated texts, each escaped by the core. */
const columns = (line) => line.split('\t').map(unescaped);

/** The core's field specs from the module's fieldSpecsText(): the objects field_specs_json writes. */
export function parseFieldSpecs(text) {
  return text.split('\n').filter(Boolean).map((line) => {
    const [name, type, group, required, min, max, choices, unit, defaultText, description, trainmemOnly, linkKey, label,
      formSection, formMore, formOrder, choiceLabels] = columns(line);
    const spec = { name, type, group, required: required === '1' };
    if (min !== '') { spec.min = Number(min); spec.max = Number(max); }
    if (choices !== '') spec.choices = choices.split(',');
    if (choiceLabels !== '') spec.choice_labels = choiceLabels.split('\n');
    Object.assign(spec, { unit, default: defaultText, description, trainmem_only: trainmemOnly === '1', link_key: linkKey, label });
    if (formSection !== '') spec.form = { section: formSection, more: formMore === '1', order: Number(formOrder) };
    return spec;
  });
}

/**
 * What each fine-tuning method usually runs with, from the module's methodSettingsText() (core
 * method_settings, cited in core/src/config/fields.cpp).
 * @returns {{peft: string, field: string, value: string, why: string}[]}
 */
export function parseMethodSettings(text) {
  return text.split('\n').filter(Boolean).map((line) => {
    const [peft, field, value, why] = columns(line);
    return { peft, field, value, why };
  });
}

/** The tables the result's indices name, from the module's slotTables(): table name -> entries. */
function parseTables(text) {
  const tables = {};
  for (const line of text.split('\n').filter(Boolean)) {
    const [table, entry] = columns(line);
    (tables[table] ??= []).push(entry);
  }
  return tables;
}

/** The issues' text (core slots.hpp): one "field\tmessage\trelated,fields\trule" line each. */
const parseIssues = (text) => text.split('\n').filter(Boolean).map((line) => {
  const [field, message, related, rule] = columns(line);
  return { field, message, related: related ? related.split(',') : [], rule: rule ?? '' };
});

/**
 * Reads a result front to back (core/include/trainmem/slots.hpp): its numbers (figures, where NaN
 * is JSON's null; whole numbers: counts, flags, indices) and its text lines.
 */
class ResultReader {
  constructor(numbers, text) {
    this.n = numbers;
    this.at = 0;
    this.lines = text.split('\n');
    this.line = 0;
  }

  whole() { return this.n[this.at++]; }

  figure() {
    const v = this.n[this.at++];
    return Number.isNaN(v) ? null : v;
  }

  flag() { return this.whole() === 1; }

  text() { return unescaped(this.lines[this.line++]); }

  /** A count, then `read()` that many times. */
  list(read) {
    const out = [];
    for (let i = 0, count = this.whole(); i < count; i++) out.push(read());
    return out;
  }
}

/** The module's resultSchemaText() as a tree: {kind, key, a, b, children}, the top level's nodes. */
export function parseSchema(text) {
  const root = { kind: 'object', key: '', children: [] };
  const open = [root];
  for (const line of text.split('\n').filter(Boolean)) {
    const [depth, kind, key, a, b] = columns(line);
    const node = { kind, key, a, b, children: [] };
    open[Number(depth)].children.push(node);
    open[Number(depth) + 1] = node;
  }
  return root;
}

export class SlotCodec {
  /**
   * @param {object[]} specs the core's field specs (engine.fieldSpecs), in the table's order
   * @param {string} tablesText the module's slotTables()
   * @param {string} schemaText the module's resultSchemaText()
   */
  constructor(specs, tablesText, schemaText) {
    this.specs = specs;
    this.index = new Map(specs.map((s, i) => [s.name, i]));
    this.choiceIndex = specs.map((s) => new Map((s.choices ?? []).map((c, i) => [c, i])));
    this.tables = parseTables(tablesText);
    // The resolved config's keys, once: every decode copies this object (one shape for all the
    // copies) and overwrites its values, where adding the 100 keys one by one to a new object
    // took a fifth of the decode (24.4 -> 19.4 µs a decode in Node, the start config).
    this.configTemplate = Object.fromEntries(specs.map((s) => [s.name, null]));
    this.slots = new Float64Array(specs.length);
    // One reader per field, chosen once: a slot's number (not NaN) as the JSON path's value;
    // `lists` gives a list field's list when its slot is -1 (the list channel, slots.hpp).
    this.readers = specs.map((spec) => {
      if (spec.type === 'boolean') return (v) => v === 1;
      if (spec.type === 'choice') return (v) => spec.choices[v];
      if (spec.type === 'choice_list') return (v) => spec.choices.filter((_, c) => (v >> c) & 1);
      if (takesList(spec.type)) return (v, lists) => (v === -1 ? lists.next() : v);
      return (v) => v;
    });
    /** the result schema, and its decoder: one function per node, made once */
    this.schema = parseSchema(schemaText);
    this.fillResult = this.compileKeys(this.schema.children);
  }

  /** A function that reads one node of the schema from a ResultReader and returns its value. */
  compile(node) {
    switch (node.kind) {
      case 'figure': return (r) => r.figure();
      case 'count': return (r) => r.whole();
      case 'flag': return (r) => r.flag();
      case 'text': return (r) => r.text();
      case 'text_or_null': return (r) => { const t = r.text(); return t === '' ? null : t; };
      case 'entry': {
        const table = this.tables[node.a];
        if (!table) throw new Error(`result schema: no table ${node.a} for ${node.key}`);
        return (r) => table[r.whole()];
      }
      case 'object': {
        const fill = this.compileKeys(node.children);
        return (r) => fill(r, {});
      }
      case 'array': {
        const element = this.compile(node.children[0]);
        return (r) => {
          const out = new Array(r.whole());
          for (let i = 0; i < out.length; i++) out[i] = element(r);
          return out;
        };
      }
      case 'keyed': {
        const keys = this.tables[node.b];
        const element = this.compile(node.children[0]);
        return (r) => {
          const out = {};
          for (let i = 0, count = r.whole(); i < count; i++) { const key = keys[r.whole()]; out[key] = element(r); }
          return out;
        };
      }
      case 'config': return (r) => this.decodeConfig(r);
      case 'fields': return (r) => {
        const fields = {};
        for (let f = 0, count = r.whole(); f < count; f++) {
          const i = r.whole();
          fields[this.specs[i].name] = this.fieldValue(i, r.whole());
        }
        return fields;
      };
      default: throw new Error(`result schema: unknown node kind ${node.kind}`);
    }
  }

  /** A function that reads an object's keys (maybe and branch nodes among them) into `out`. */
  compileKeys(children) {
    // Runs of numbers (figures and counts, most of a result) are read in one step each.
    const groups = [];
    for (const child of children) {
      const plain = child.kind === 'figure' || child.kind === 'count';
      const last = groups[groups.length - 1];
      if (plain && last?.numbers) last.numbers.push(child);
      else groups.push(plain ? { numbers: [child] } : child);
    }
    const steps = groups.map((child) => {
      if (child.numbers) {
        const keys = child.numbers.map((n) => n.key);
        const nullable = child.numbers.map((n) => n.kind === 'figure');
        return (r, out) => {
          const n = r.n;
          let at = r.at;
          for (let i = 0; i < keys.length; i++) {
            const v = n[at++];
            out[keys[i]] = nullable[i] && Number.isNaN(v) ? null : v;
          }
          r.at = at;
        };
      }
      const { key } = child;
      if (child.kind === 'branch') {
        const fill = this.compileKeys(child.children);
        return (r, out) => { if (r.flag()) fill(r, out); };
      }
      if (child.kind === 'maybe') {
        const value = this.compile(child.children[0]);
        const absentIsNull = child.a === 'null';
        return (r, out) => {
          if (r.flag()) out[key] = value(r);
          else if (absentIsNull) out[key] = null;
        };
      }
      const value = this.compile(child);
      return (r, out) => { out[key] = value(r); };
    });
    return (r, out) => {
      for (const step of steps) step(r, out);
      return out;
    };
  }

  /** Field `i`'s config slot as the JSON path writes its value (null when unset). */
  fieldValue(i, v, lists) {
    return Number.isNaN(v) ? null : this.readers[i](v, lists);
  }

  /**
   * The config as the module reads it: JSON.stringify's view of it (undefined and functions
   * dropped, NaN and Infinity as null) as slots, the order of its keys, the list channel (each
   * list field at -1, in the field table's order: its length, then its entries), and the values
   * no slot carries.
   * @param {Record<string, unknown>} config
   * @returns {{slots: Float64Array, order: number[], lists: number[], others: Array<[string, string, unknown]>}}
   */
  encode(config) {
    const slots = this.slots.fill(NaN);
    const order = [];
    const others = [];
    const listOf = [];  // field index → its list (the channel goes in the field table's order)
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
      } else if (typeof value === 'number' && (type === 'integer' || type === 'number' || type === 'integer_or_list') &&
                 !(value === -1 && takesList(type))) {
        // -1 in a list field's slot means "the list is in the channel": a plain -1 goes as a value
        // no slot carries, as does a number for an integer_list field, and the core names it.
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
      } else if (Array.isArray(value) && takesList(type) && value.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        order.push(i);
        slots[i] = -1;
        listOf[i] = value;
      } else {
        other(name, ...describe(value));
      }
    }
    const lists = [];
    for (const list of listOf) {
      if (!list) continue;  // a field without a list (the array is sparse)
      lists.push(list.length);
      for (const x of list) lists.push(x);  // not push(...list): a 10^6-entry list exceeds the argument limit
    }
    return { slots, order, lists, others };
  }

  /**
   * The object the JSON path returns (estimate_to_json, or the issues), from the module's
   * numbers and text in slots.hpp's layout.
   * @param {Float64Array} numbers
   * @param {string} text
   */
  decode(numbers, text) {
    if (numbers[0] === 0) return { ok: false, issues: parseIssues(text) };
    return this.fillResult(new ResultReader(numbers, text), {});
  }

  /**
   * check_slots' answer (core slots.hpp): {ok, issues (each with its related fields), config: the
   * resolved config of the fields in effect, or null when that does not resolve}.
   */
  decodeCheck(numbers, text) {
    const r = new ResultReader(numbers, text);
    r.at = 1;  // after the leading 1 or 0
    const ok = numbers[0] === 1;
    const config = r.flag() ? this.decodeConfig(r) : null;
    return { ok, issues: ok ? [] : parseIssues(text), config };
  }

  /** The resolved config: one slot per field, then the list channel (a list per field at -1). */
  decodeConfig(r) {
    const at = r.at;
    r.at += this.specs.length;
    const lists = { next: () => r.list(() => r.figure()) };  // read in field order, as written
    const config = { ...this.configTemplate };
    for (let i = 0; i < this.specs.length; i++) config[this.specs[i].name] = this.fieldValue(i, r.n[at + i], lists);
    return config;
  }
}

/** Whether a field's slot may be -1, its list in the list channel. */
function takesList(type) {
  return type === 'integer_or_list' || type === 'integer_list';
}
