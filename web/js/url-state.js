// The share link: the whole page state in the URL fragment, readable and versioned.
//
//   #v=1&m=llama-3.1-8b&L=32&h=4096&a=32&g=~8&...&tp=2&pp=4&gpu=h100-80gb&u=GiB&ck=1x9z0a
//
// - A fragment never reaches a server and needs no routing, so links work on any static host.
// - `v` is the format version. A reader of version N reads the keys it knows from any version
//   and names the rest as rejected; it never guesses.
// - Every applicable field is written. A field the user left unset is written as `~value`, the
//   value the core resolved it to when the link was made. If a later core resolves it
//   differently, the page pins the link's value, so a link means the same after defaults change.
// - `ck` is a checksum of everything before it: a truncated or hand-edited link is reported.
// Nothing here validates a field's value: the core does that (link-config.js drops what it rejects).

export const FORMAT_VERSION = 1;

// Each field's link key is the core's (its field row: short, stable, append-only; a hand-written
// link may also use the field's Megatron name): the specs carry it as `link_key`.

// Page state that is not a core field.
// `pin` holds a second, complete state (a pinned configuration to compare with), encoded the same way.
// `su` names the fine-tuning setup the state started from (core/data/setups.json): its fields and
// GPU fill what the link leaves out, so "#su=<id>" alone is that setup.
export const PAGE_KEYS = Object.freeze({ preset: 'm', gpu: 'gpu', capacity: 'cap', unit: 'u', figure: 'fig', pin: 'pin', setup: 'su' });
const UNITS = ['GiB', 'GB'];
const LIST_TYPES = new Set(['choice_list', 'integer_list', 'integer_or_list']);
const FIGURES = ['allocated', 'reserved', 'device'];

const fieldsByKey = new WeakMap();
/** The field a link key names (its link key or its name), from the core's specs; undefined if none. */
export function fieldOfKey(specs, key) {
  if (!fieldsByKey.has(specs)) fieldsByKey.set(specs, new Map([...specs.values()].map((s) => [s.link_key || s.name, s.name])));
  return fieldsByKey.get(specs).get(key) ?? (specs.has(key) ? key : undefined);
}
/** The link key of a field: the core's short key, or its Megatron name. */
export const keyOf = (specs, field) => specs.get(field)?.link_key || field;

// ---- value text ----

const MAX_LIST = 100000;
/** A number the core can be given: finite, and 0 rather than -0 (which writes back as "0"). */
const finite = (x) => (Number.isFinite(x) ? x + 0 : null);
// Written so that no part can match the same characters as its neighbour: they run in linear
// time on any text (the earlier /^-?\d*\.?\d+/ backtracked quadratically on a long digit run).
export const NUMBER_TEXT = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
export const INTEGER_TEXT = /^-?\d+(?:\.\d+)?(?:e\+?\d+)?$/i;
/** Number(text) if the text is a number of that pattern and a finite double; else the text itself. */
export function numberOrText(text, pattern) {
  return pattern.test(text) ? finite(Number(text)) ?? text : text;
}

/** 0/1 lists are written as runs, "0*3,1*58" (DeepSeek-V3's moe_layer_freq is 61 entries). */
export function listToText(list) {
  const runs = [];
  for (const x of list) {
    const last = runs[runs.length - 1];
    if (last && last[0] === x) last[1] += 1;
    else runs.push([x, 1]);
  }
  return runs.map(([x, n]) => (n === 1 ? String(x) : `${x}*${n}`)).join(',');
}

/** Inverse of listToText; also reads Megatron's "[0]*3+[1]*58" and JSON "[0,1,1]". null if neither. */
export function textToList(text) {
  // Blanks around the punctuation go; blanks between two numbers would join them ("20 12" is not
  // 2012): such text is no list, and the core names it.
  const t = String(text).trim().replace(/\s*([,+*[\]])\s*/g, '$1');
  if (/\s/.test(t)) return null;
  const parts = t.includes('+') ? t.split('+') : t.replace(/^\[|\]$/g, '').split(',');
  const out = [];
  for (const part of parts) {
    const m = /^\[?(-?\d+)\]?(?:\*(\d+))?$/.exec(part);
    if (!m) return null;
    const x = finite(Number(m[1]));
    const n = m[2] === undefined ? 1 : Number(m[2]);
    if (n === 0) return null;  // "3*0": a run of nothing is a typo, not an empty run
    // A link is not a way to allocate gigabytes: the whole list, not each run, is bounded.
    if (x === null || out.length + n > MAX_LIST) return null;
    for (let i = 0; i < n; i += 1) out.push(x);
  }
  return out.length ? out : null;
}

export function valueToText(value) {
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (Array.isArray(value)) {
    if (value.some((x) => typeof x === 'string')) return value.join(',');
    // "[1]", not "1": a one-layer pattern is not the same as moe_layer_freq = 1 (every layer).
    return value.length === 1 ? `[${value[0]}]` : listToText(value);
  }
  return String(value);
}

/**
 * Reads a value written by valueToText, given the field's type from the core's field specs.
 * Text that does not fit the type is returned unchanged, so the core names the problem.
 */
export function textToValue(text, type) {
  if (type === 'boolean') {
    if (text === '1' || text === 'true') return true;
    if (text === '0' || text === 'false') return false;
    return text;
  }
  if (type === 'choice_list') return text.split(',').filter(Boolean);
  // Numbers beyond a double (1e999) stay text too: as Infinity they would reach the core as null,
  // i.e. unset, and the page would silently answer for the default.
  if (type === 'number') return numberOrText(text, NUMBER_TEXT);
  if (type === 'integer_list') return textToList(text) ?? text;
  if (type === 'integer' || type === 'integer_or_list') {
    const n = numberOrText(text, INTEGER_TEXT);
    if (typeof n === 'number' || type === 'integer') return n;
    return textToList(text) ?? text;
  }
  return text;
}

// ---- fragment text ----

// Keep the fragment readable: encodeURIComponent escapes ",", ":" and "*"-free text that is
// legal in a fragment; undo it for the characters our values use.
// A lone surrogate (half an emoji, cut by hand or by a truncation) would make encodeURIComponent
// throw; it becomes U+FFFD both when reading and when writing.
const wellFormed = (s) => String(s).replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
export const escapeText = (s) => encodeURIComponent(wellFormed(s)).replace(/%2C/gi, ',').replace(/%3A/gi, ':');

/** FNV-1a 32-bit, base 36: short, and enough to notice a cut or an edit (not a security check). */
export function checksum(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36);
}

/**
 * @param {object} state
 * @param {Record<string, unknown>} state.fields  values the user set (unset fields absent)
 * @param {string[]} state.names                  fields that apply to this model, in page order
 * @param {Record<string, unknown>} state.resolved the core's resolved config (result.config)
 * @param {string|null} state.preset
 * @param {string|null} [state.setup]            the fine-tuning setup the state started from
 * @param {string} state.gpu
 * @param {string} [state.capacity]               custom capacity text, e.g. "96GB"
 * @param {string} state.unit                     "GiB" or "GB"
 * @param {string} [state.figure]                 trainmem profile: allocated, reserved or device
 * @param {string} [state.pin]                    a pinned configuration, itself an encoded state
 * @param {Map<string, {link_key: string}>} specs  the core's field specs by name (their link keys)
 * @returns {string} the fragment without "#"
 */
export function encodeState({ fields, names, resolved = {}, preset, setup, gpu, capacity, unit, figure, pin }, specs) {
  const pairs = [['v', String(FORMAT_VERSION)]];
  if (preset) pairs.push([PAGE_KEYS.preset, preset]);
  if (setup) pairs.push([PAGE_KEYS.setup, setup]);
  for (const name of names) {
    if (fields[name] !== undefined && fields[name] !== null) {
      // A "~" first means an unset field's resolved value. A list set by the user whose first
      // entry begins with one (read from ",~x": textToValue drops the empty entry) is written the
      // same way, so that it reads back as itself and not as unset (url-fuzz seed 601556413).
      const text = valueToText(fields[name]);
      pairs.push([keyOf(specs, name), text.startsWith('~') && Array.isArray(fields[name]) ? `,${text}` : text]);
    } else if (resolved[name] !== undefined && resolved[name] !== null) {
      pairs.push([keyOf(specs, name), `~${valueToText(resolved[name])}`]);
    }
  }
  pairs.push([PAGE_KEYS.gpu, gpu]);
  if (capacity) pairs.push([PAGE_KEYS.capacity, capacity]);
  pairs.push([PAGE_KEYS.unit, unit]);
  if (figure) pairs.push([PAGE_KEYS.figure, figure]);
  if (pin) pairs.push([PAGE_KEYS.pin, pin]);
  return withChecksum(pairs.map(([k, v]) => `${escapeText(k)}=${escapeText(v)}`).join('&'));
}

/** A link's body with its checksum last, as the page writes every link. */
export const withChecksum = (body) => `${body}&ck=${checksum(body)}`;

// A link that begins "v=", without a checksum, and with this many pairs or more is one the page
// wrote, cut short: the page writes every field that applies (40 and more); the documentation's
// hand-written short forms have at most 12.
const CUT_PAIRS = 20;

/** `text` URL-decoded where it can be (a cut may split an escape), as it is where not. */
function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The note on a link without "v=": read as format 1. */
export const NO_VERSION_NOTE = 'The link has no format version; it was read as version 1.';

/**
 * Splits a fragment into page state. Unknown keys, malformed pairs and values of the wrong shape
 * are listed in `rejected`; everything else is kept.
 * @param {string} fragment location.hash, with or without "#"
 * @param {Map<string, {type: string}>} specs the core's field specs by name
 */
export function decodeState(fragment, specs) {
  const out = {
    version: null, fields: {}, auto: {}, preset: null, setup: null, gpu: null, capacity: null, unit: null, figure: null,
    pin: null, rejected: [], integrity: 'ok', lastPair: null, notes: [],
  };
  let text = String(fragment ?? '').replace(/^#/, '');
  if (!text) return out;

  const ck = /&ck=([0-9a-z]*)$/.exec(text);
  if (!ck) out.integrity = 'missing';
  else {
    text = text.slice(0, ck.index);
    if (ck[1] !== checksum(text)) out.integrity = 'mismatch';
  }

  const seen = new Map(); // a key (a field by its name) -> its pair, for one given twice
  for (const pair of text.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    let key;
    let value;
    try {
      key = wellFormed(decodeURIComponent(eq < 0 ? pair : pair.slice(0, eq)));
      value = eq < 0 ? null : wellFormed(decodeURIComponent(pair.slice(eq + 1)));
    } catch {
      out.rejected.push({ key: pair, reason: 'not valid URL text' });
      continue;
    }
    if (value === null) {
      out.rejected.push({ key, reason: 'has no value' });
      continue;
    }
    // A key given twice: the later value is read, and the earlier is named as not used (a
    // newcomer's QA at stop 46: "&s=1024" added to a link changed the run without a word).
    const same = fieldOfKey(specs, key) ?? key;
    const before = seen.get(same);
    if (before && before.value !== value) out.rejected.push({ key: before.key, reason: `given twice: the later ${key}=${value} was used, not ${before.value}`, replaced: true });
    seen.set(same, { key, value });
    readPair(out, key, value, specs);
  }

  // No checksum: written by hand (the documentation's short forms: a few pairs, values as given)
  // or cut from a link the page wrote, which carries an unset field's value after "~" and every
  // field that applies (forty pairs and more). A cut link is named with where it ends (a
  // newcomer's QA at stop 46: a link cut in half read 54.89 GiB for 37.80 with a note that could
  // have been about a hand-written one).
  if (out.integrity === 'missing') {
    const pairs = text.split('&').filter(Boolean);
    // The page's links begin with "v=": an element's attributes, read as a link, do not (QA at
    // stop 46: the Embed dialog's element, 28 attributes, read as a cut link).
    if (pairs[0]?.startsWith('v=') && (Object.keys(out.auto).length > 0 || pairs.length >= CUT_PAIRS)) {
      out.lastPair = safeDecode(pairs.at(-1));
      // Ending with the page's last keys, it lacks only the checksum: nothing of it is missing (a
      // pin is whole when it ends with its own checksum).
      const lastKey = out.lastPair.split('=')[0];
      const whole = lastKey === PAGE_KEYS.unit || lastKey === PAGE_KEYS.figure || (lastKey === PAGE_KEYS.pin && /&ck=[0-9a-z]+$/.test(out.lastPair));
      out.integrity = whole ? 'unchecked' : 'cut';
    }
  }
  if (out.version === null) out.notes.push(NO_VERSION_NOTE);
  else if (out.version > FORMAT_VERSION) {
    out.notes.push(`The link was made by a newer trainmem (link format ${out.version}); fields this version knows were kept.`);
  }
  return out;
}

function readPair(out, key, value, specs) {
  if (key === 'v') {
    const n = Number(value);
    if (Number.isInteger(n) && n > 0) out.version = n;
    else out.rejected.push({ key, reason: `unknown link format "${value}"` });
    return;
  }
  if (key === PAGE_KEYS.preset) out.preset = value;
  else if (key === PAGE_KEYS.setup) out.setup = value;
  else if (key === PAGE_KEYS.gpu) out.gpu = value;
  else if (key === PAGE_KEYS.capacity) out.capacity = value;
  else if (key === PAGE_KEYS.unit) {
    if (UNITS.includes(value)) out.unit = value;
    else out.rejected.push({ key, reason: `unit must be GiB or GB, got "${value}"` });
  } else if (key === PAGE_KEYS.pin) {
    out.pin = value;
  } else if (key === PAGE_KEYS.figure) {
    if (FIGURES.includes(value)) out.figure = value;
    else out.rejected.push({ key, reason: `figure must be allocated, reserved or device, got "${value}"` });
  } else {
    const name = fieldOfKey(specs, key);
    const spec = name && specs.get(name);
    if (!spec) {
      out.rejected.push({ key, reason: 'unknown field' });
      return;
    }
    // "~" alone is a list resolved to none; for any other type, a value cut after its "~".
    if (value === '~' && !LIST_TYPES.has(spec.type)) out.rejected.push({ key, reason: 'has no value' });
    else if (value.startsWith('~')) out.auto[name] = textToValue(value.slice(1), spec.type);
    else out.fields[name] = textToValue(value, spec.type);
  }
}
