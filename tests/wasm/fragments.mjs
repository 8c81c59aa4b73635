// Random share-link fragments for the property tests (url-fuzz.test.mjs: the decoder;
// views.test.mjs: the three views' figures): a seeded generator, valid page states, and the
// mutations that make partial and tampered links out of them. Seeded, so a failure reproduces.
import { PAGE_KEYS, encodeState, keyOf } from '../../web/js/url-state.js';

/**
 * The seed of a property test: `env` when set; one fixed seed when CI is set, so that CI's
 * verdict does not depend on the day; else a new one on every run, to explore.
 */
export function seedOf(env, ciSeed) {
  return Number(process.env[env] ?? (process.env.CI ? ciSeed : Date.now() % 2 ** 31));
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (list) => list[Math.floor(next() * list.length)];
  return { next, int, pick, chance: (p) => next() < p };
}

/**
 * Runs `body(r, i)` on exactly `count` cases, the same ones for the same seed whatever the
 * machine's load (a time limit made the case count, and a minimum asserted on it, depend on
 * it); with `longRun` (a soak run asked for by its environment variable), for the whole `budgetMs`
 * instead. Each label gets its own sequence from the seed. Returns the cases run.
 */
export function fuzz({ seed, budgetMs, longRun = false, name }, label, count, body) {
  const r = prng(seed ^ [...label].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619), 2166136261));
  const start = performance.now();
  const end = start + budgetMs;
  let i = 0;
  while (longRun ? performance.now() < end : i < count) {
    body(r, i);
    i += 1;
  }
  console.log(`${name} ${label}: ${i} cases in ${(performance.now() - start).toFixed(0)} ms`);
  return i;
}

export const HOSTILE_NUMBERS = ['NaN', 'Infinity', '-Infinity', '-0', '0', '1e999', '-1e999', '1e308', '1e-400', '1e+21',
  '9'.repeat(400), `0.${'0'.repeat(400)}1`, '0x10', '1_000', ' 1', '1 ', '+1', '.5', '5.', '1e', 'e5', '--1', '1e5.5',
  '4294967296', '9007199254740993', '-9007199254740993', '2.5', '1,2', '1*999999', '[0]*100001', '0*3,1*58'];
export const HOSTILE_TEXT = ['<img src=x onerror=window.__pwned=1>', '<script>window.__pwned=1</script>', '"><svg onload=alert(1)>',
  "javascript:alert('x')", '${alert(1)}', '__proto__', 'constructor', 'toString', '~', '~~', '', ' ', '&', '=', '#', '%', '%%',
  '%G1', '%E0%A4%A', '%ED%A0%80', '%00', '%C0%AF', '%uD800', '\u0000', '\u202e', '😀', 'ünïcödé', '\\', '\n\r\t'];
const JUNK_CHARS = '&=#%~,:*+[]-.e0123456789abcdefxyzABC<>"\' \t\n\u00e9\u{1F600}';

export function randomText(r, maxLen = 24) {
  let s = '';
  const n = r.int(0, maxLen);
  for (let i = 0; i < n; i += 1) s += r.chance(0.1) ? String.fromCharCode(r.int(0, 0xd7ff)) : r.pick([...JUNK_CHARS]);
  return s;
}

/** A valid value of a field's type, within its documented range. */
export function validValue(r, spec) {
  const lo = Number.isFinite(spec.min) ? spec.min : 0;
  const hi = Number.isFinite(spec.max) ? spec.max : 1e6;
  switch (spec.type) {
    case 'boolean': return r.chance(0.5);
    case 'choice': return r.pick(spec.choices);
    case 'choice_list': return spec.choices.filter(() => r.chance(0.4));
    case 'integer': return r.chance(0.2) ? Math.floor(hi) : r.int(Math.ceil(lo), Math.min(Math.floor(hi), 1e6));
    case 'number': {
      if (r.chance(0.15)) return hi; // e.g. 1e15: written as "1000000000000000"
      if (r.chance(0.1) && hi >= 1e21) return 1e21;
      const x = lo + r.next() * (Math.min(hi, 1e4) - lo);
      return r.chance(0.5) ? x : Math.round(x * 100) / 100;
    }
    case 'integer_or_list':
      if (r.chance(0.5)) return r.int(1, 8);
      return Array.from({ length: r.int(1, 70) }, () => (r.chance(0.7) ? 1 : 0));
    case 'integer_list':
      return Array.from({ length: r.int(1, 16) }, () => r.int(Math.ceil(lo), Math.min(Math.floor(hi), 12)));
    default: throw new Error(`no generator for type ${spec.type}`);
  }
}

/**
 * A valid page state of encodeState's shape: some fields set, some resolved (written as
 * "~value"), any values of each field's type, any page strings.
 * @param {{presets: object[], gpus: object[]}} engine
 * @param {Map<string, object>} specs
 */
export function validState(r, engine, specs) {
  const names = [...specs.values()].filter(() => r.chance(0.3)).map((s) => s.name);
  const fields = {};
  const resolved = {};
  for (const name of names) {
    const v = validValue(r, specs.get(name));
    if (r.chance(0.6)) fields[name] = v;
    else resolved[name] = v;
  }
  const text = () => (r.chance(0.3) ? r.pick(HOSTILE_TEXT.filter((t) => !/%ED|%uD|%C0|%E0/.test(t))) : randomText(r));
  const state = {
    fields, names, resolved,
    preset: r.chance(0.5) ? r.pick(engine.presets).id : (r.chance(0.5) ? text() : null),
    gpu: r.chance(0.6) ? r.pick(engine.gpus).id : (r.chance(0.5) ? 'custom' : text()),
    unit: r.pick(['GiB', 'GB']),
  };
  if (r.chance(0.3)) state.capacity = r.chance(0.5) ? `${r.int(1, 500)}GB` : text();
  if (r.chance(0.3)) state.figure = r.pick(['allocated', 'reserved', 'device']);
  if (r.chance(0.2)) state.pin = encodeState({ ...validState(r, engine, specs), pin: undefined }, specs);
  return state;
}

/** The pairs of a fragment, without the checksum. */
export const pairsOf = (fragment) => fragment.replace(/&ck=[0-9a-z]*$/, '').split('&');

/** Inserted, replaced, dropped and malformed pairs (`specs`: the core's, by name, for their link keys); `touched` names the keys involved. */
export function mutatePairs(r, specs, pairs) {
  const out = [...pairs];
  const touched = new Set();
  const n = r.int(1, 4);
  for (let i = 0; i < n; i += 1) {
    const at = r.int(0, out.length);
    const key = r.chance(0.7) ? r.pick([...[...specs.keys()].map((name) => keyOf(specs, name)), ...Object.values(PAGE_KEYS), 'v', 'ck'])
      : r.pick(['zzz', '__proto__', 'constructor', 'theme', 'V2', 'num_layers', '', '%', randomText(r, 8)]);
    const value = r.chance(0.5) ? r.pick(HOSTILE_NUMBERS) : (r.chance(0.6) ? r.pick(HOSTILE_TEXT) : randomText(r));
    const raw = r.chance(0.5) ? `${key}=${value}` : `${encodeURIComponent(key)}=${encodeURIComponent(value)}`;
    switch (r.int(0, 4)) {
      case 0: out.splice(at, 0, raw); touched.add(key); break; // insert (often a repeated key)
      case 1: if (out.length) { touched.add(out[Math.min(at, out.length - 1)].split('=')[0]); out[Math.min(at, out.length - 1)] = raw; touched.add(key); } break;
      case 2: if (out.length) { touched.add(out[Math.min(at, out.length - 1)].split('=')[0]); out.splice(Math.min(at, out.length - 1), 1); } break;
      case 3: out.splice(at, 0, r.pick([key, `${key}=`, '=', '==', '&&', `${key}==${value}`])); touched.add(key); break;
      default: out.splice(at, 0, `v=${r.pick(['2', '999999', '0', '-1', '1.5', 'x', '1e400', '9'.repeat(30)])}`); touched.add('v');
    }
  }
  return { pairs: out, touched };
}

/** Byte-level damage: truncation, random characters, percent-encoding junk. */
export function mutateText(r, text) {
  let s = text;
  const n = r.int(1, 3);
  for (let i = 0; i < n; i += 1) {
    const at = r.int(0, s.length);
    switch (r.int(0, 3)) {
      case 0: s = s.slice(0, at); break;
      case 1: s = s.slice(0, at) + randomText(r, 6) + s.slice(at); break;
      case 2: s = s.slice(0, at) + r.pick(['%', '%2', '%ZZ', '%E0%A4%A', '%ED%A0%80', '%FF', '%25', '%26', '%3D', '#']) + s.slice(at); break;
      default: s = s.slice(0, at) + s.slice(at + r.int(1, 5));
    }
  }
  return s;
}
