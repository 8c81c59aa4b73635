// One state, one figure: a randomized property test that the page (web/js/main.js), the embed view
// (embed.js) and the <trainmem-calculator> element (trainmem-element.js) show the same headline
// for the same state. Each view is run here by the code it runs itself, from the fragment (or the
// element's attributes) to the bytes and the figure its headline shows (data-bytes, data-figure):
//   page     applyLink: editableState(restoreLink(splitViewOptions(location.hash).state)), the
//            last result cleared;
//            recompute: estimateView(state, {verbose})
//   embed    restoreLink(splitViewOptions(location.hash).state), estimateView(link, {verbose})
//   element  restoreLink(linkOfAttributes(attributes, SPECS)), estimateView(link)
// and the page again as opened by the embed's and the element's "Open in trainmem" links.
// Fragments: the page's own links (valid), links cut short or reduced to a few pairs (partial),
// and mutated, byte-damaged and random-valued ones (tampered). Seeded, so a failure reproduces:
//   VIEWS_FUZZ_SEED=1234 node --test tests/wasm/views.test.mjs
//   VIEWS_FUZZ_MS=60000 node --test tests/wasm/views.test.mjs    (run longer on demand)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PAGE_KEYS, checksum, encodeState, keyOf } from '../../web/js/url-state.js';
import { attributeOf, editableState, estimateView, linkOfAttributes, restoreLink, splitViewOptions } from '../../web/js/link-config.js';
import { loadEngine } from './load.mjs';
import { fuzz as runFuzz, mutatePairs, mutateText, pairsOf, prng, seedOf, validState } from './fragments.mjs';

const engine = await loadEngine();
const SPECS = new Map(engine.fieldSpecs.map((s) => [s.name, s]));
const SEED = seedOf('VIEWS_FUZZ_SEED', 11520254);
const BUDGET_MS = Number(process.env.VIEWS_FUZZ_MS ?? 0); // per property, for a soak run only
console.log(`views seed ${SEED} (reproduce with VIEWS_FUZZ_SEED=${SEED})`);
const fuzz = (label, count, body) => runFuzz({ seed: SEED, budgetMs: BUDGET_MS, longRun: Boolean(process.env.VIEWS_FUZZ_MS), name: 'views' }, label, count, body);

// ---- the views ----

/** What a view's headline shows: the figure, its bytes (data-figure, data-bytes) and the capacity it is compared with. */
const shown = ({ headline, capacity }) => ({ figure: headline?.key ?? null, bytes: headline?.bytes ?? null, capacity });

// restoreLink is a pure function of its text and the engine, and the slow step (a rejected field
// costs an estimate): within a case, views that read the same text share its answer.
const restored = new Map();
const restore = (state) => {
  if (!restored.has(state)) restored.set(state, restoreLink(state, engine));
  return restored.get(state);
};

/** The page at index.html#fragment (main.js: applyLink, then recompute). */
const page = (fragment) => estimateView(engine, editableState(restore(splitViewOptions(fragment).state)), { verbose: true });
/** The embed view at embed.html#fragment (embed.js: render), and the state its "Open in trainmem" link carries. */
function embed(fragment) {
  const { state } = splitViewOptions(fragment);
  return { view: estimateView(engine, restore(state), { verbose: true }), open: `#${state}` };
}
/** The element with these attributes (trainmem-element.js: render), and the state its "Open in trainmem" link carries. */
function element(attributes) {
  const state = linkOfAttributes(attributes, SPECS);
  return { view: estimateView(engine, restore(state)), open: `#${state}` };
}

const SHORT_KEYS = new Map([...SPECS.keys()].map((name) => [keyOf(SPECS, name), name]));
/** What a link key means: a field (by its short key or Megatron name), a page key, or undefined. */
const meaningOf = (key) => SHORT_KEYS.get(key) ?? (SPECS.has(key) ? key : Object.values(PAGE_KEYS).includes(key) || key === 'v' ? `#${key}` : undefined);
const asciiLower = (s) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
// What each attribute name means (HTML keeps names in ASCII lowercase): a field's short key or
// Megatron name, a page key, "preset" for m; "v" is the version, so V (vocab_size) has no short name.
const MEANINGS_OF_NAME = new Map();
for (const key of [...SHORT_KEYS.keys(), ...SPECS.keys(), ...Object.values(PAGE_KEYS)]) {
  const name = asciiLower(key);
  if (!MEANINGS_OF_NAME.has(name)) MEANINGS_OF_NAME.set(name, new Set());
  MEANINGS_OF_NAME.get(name).add(meaningOf(key));
}
MEANINGS_OF_NAME.set('v', new Set(['#v']));
MEANINGS_OF_NAME.set('preset', new Set([`#${PAGE_KEYS.preset}`]));
const ATTRIBUTE_NAME = /^[A-Za-z_:][A-Za-z0-9_:.-]*$/;

/**
 * The element's attributes for a fragment, as a host page writes them: each pair an attribute,
 * named as HTML keeps it (ASCII lowercase); a field as the Embed dialog writes it, or by its link
 * key or Megatron name; `m` sometimes as `preset`. Pairs that no attribute can hold (no value, not
 * URL text, no attribute name) are left out: a link uses nothing of them either. null when the
 * attributes cannot hold the same state: a key whose lowercase means something else ("V" as "v",
 * the version; an unknown "l" as L), two pairs on one attribute, or nothing left of a state.
 */
function attributesOf(fragment, r) {
  const attributes = [];
  const names = new Set();
  for (const pair of fragment.replace(/^#/, '').split('&')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    let key;
    let value;
    try {
      key = decodeURIComponent(pair.slice(0, eq));
      value = decodeURIComponent(pair.slice(eq + 1));
    } catch {
      continue;
    }
    if (!ATTRIBUTE_NAME.test(key)) continue;
    const meaning = meaningOf(key);
    const field = SPECS.has(meaning) ? meaning : null;
    let name = asciiLower(field && r.chance(0.5) ? (r.chance(0.5) ? attributeOf(SPECS, field) : field) : key);
    if (name === 'm' && r.chance(0.5)) name = 'preset';
    const read = MEANINGS_OF_NAME.get(name) ?? new Set();
    if (meaning === undefined ? read.size > 0 : read.size !== 1 || !read.has(meaning)) return null;
    const slot = name === 'preset' ? PAGE_KEYS.preset : name;
    if (names.has(slot)) return null;
    names.add(slot);
    attributes.push({ name, value });
  }
  // A state with nothing an attribute holds is no state at all for the element (START), while
  // the link, however empty of use, is read as a link.
  const empty = (state) => state === '';
  return empty(linkOfAttributes(attributes, SPECS)) === empty(splitViewOptions(fragment).state) ? attributes : null;
}

/**
 * Every view's headline for a fragment; the element's only when attributes can hold the state.
 * @returns {{name: string, shows: object}[]}
 */
function viewsOf(fragment, r) {
  restored.clear();
  const views = [{ name: 'page', shows: shown(page(fragment)) }];
  const e = embed(fragment);
  views.push({ name: 'embed', shows: shown(e.view) }, { name: "page from the embed's link", shows: shown(page(e.open)) });
  const attributes = attributesOf(fragment, r);
  if (attributes) {
    const el = element(attributes);
    views.push({ name: 'element', shows: shown(el.view) }, { name: "page from the element's link", shows: shown(page(el.open)) });
  }
  return views;
}

const tally = { cases: 0, element: 0, figures: { allocated: 0, reserved: 0, device: 0, total: 0, none: 0 } };

/** The property: every view shows the same figure, the same bytes, against the same capacity. */
function checkViews(fragment, r, context) {
  const views = viewsOf(fragment, r);
  const [first] = views;
  for (const v of views.slice(1)) {
    assert.deepEqual(v.shows, first.shows, `${context}: ${v.name} shows ${JSON.stringify(v.shows)}, the page ${JSON.stringify(first.shows)}\n  fragment ${JSON.stringify(fragment.slice(0, 400))}`);
  }
  if (first.shows.bytes !== null) assert.ok(Number.isInteger(first.shows.bytes) && first.shows.bytes > 0, `${context}: bytes ${first.shows.bytes}`);
  tally.cases += 1;
  if (views.length > 3) tally.element += 1;
  tally.figures[first.shows.figure ?? 'none'] += 1;
}

// ---- fragments ----

const PROFILES = ['trainmem', 'trainmem', 'megatron-bridge', 'megatron-lm'];
const choices = (name) => SPECS.get(name)?.choices ?? [];

/** A training setup on a preset: what a person sets on the page (some of it invalid for the model). */
function setup(r, preset) {
  const fields = { ...preset.config, seq_length: r.pick([1024, 2048, 4096, 8192]), micro_batch_size: r.int(1, 4) };
  const maybe = (name, value) => { if (r.chance(0.5)) fields[name] = value; };
  maybe('profile', r.pick(PROFILES));
  maybe('tensor_model_parallel_size', r.pick([1, 2, 4, 8]));
  maybe('pipeline_model_parallel_size', r.pick([1, 2, 4]));
  maybe('data_parallel_size', r.pick([1, 2, 4, 8, 64]));
  maybe('sequence_parallel', r.chance(0.5));
  maybe('use_distributed_optimizer', r.chance(0.5));
  maybe('recompute_granularity', r.pick(choices('recompute_granularity')));
  if (fields.profile === undefined || fields.profile === 'trainmem') {
    maybe('framework', r.pick(choices('framework')));
    maybe('optimizer', r.pick(choices('optimizer')));
  }
  if (preset.config.num_moe_experts > 0) maybe('expert_model_parallel_size', r.pick([1, 2, 4, 8]));
  return fields;
}

/** A link the page writes (share-panel.js: encodeState of the state on screen), for a setup the core accepts. */
function pageLink(r) {
  for (let attempt = 0; ; attempt += 1) {
    const preset = r.pick(engine.presets);
    const gpu = r.chance(0.9) ? r.pick(engine.gpus).id : 'custom';
    const state = { fields: setup(r, preset), gpu, capacityText: gpu === 'custom' ? `${r.int(16, 300)}GB` : '', unit: r.pick(['GiB', 'GB']), figure: r.pick(['allocated', 'reserved', 'device']) };
    const { names, result } = estimateView(engine, state);
    if (!result.ok && attempt < 20) continue;
    return encodeState({
      fields: state.fields, names, resolved: result.config ?? {}, preset: preset.id, gpu, capacity: state.capacityText, unit: state.unit,
      figure: result.profile === 'trainmem' && state.figure !== 'device' ? state.figure : undefined,
    }, SPECS);
  }
}

/** A link with only some of its pairs (the documentation's short form is one), or cut short. */
function partialLink(r) {
  const pairs = pairsOf(pageLink(r)).filter((pair) => pair.startsWith('v=') ? r.chance(0.7) : r.chance(0.4))
    .map((pair) => (r.chance(0.5) ? pair.replace('=~', '=') : pair));
  const body = pairs.join('&');
  if (r.chance(0.2)) return body.slice(0, r.int(0, body.length));
  return r.chance(0.2) ? `${body}&ck=${checksum(body)}` : body;
}

/** A link mutated pair by pair, damaged byte by byte, or holding random values of each field's type. */
function tamperedLink(r) {
  const kind = r.int(0, 2);
  const link = kind === 2 ? encodeState(validState(r, engine, SPECS), SPECS) : pageLink(r);
  if (kind === 1) return mutateText(r, link);
  const body = mutatePairs(r, SPECS, pairsOf(link)).pairs.join('&');
  return r.chance(0.5) ? `${body}&ck=${checksum(body)}` : body;
}

/** View options the embed reads and the other views ignore. */
const withTheme = (r, fragment) => (r.chance(0.2) ? `${fragment}&theme=${r.pick(['light', 'dark', 'auto', 'x'])}` : fragment);

// ---- tests ----

test("the page's own links: every view shows the same figure", () => {
  fuzz('valid', 250, (r, i) => {
    checkViews(`#${withTheme(r, pageLink(r))}`, r, `seed ${SEED} valid case ${i}`);
  });
});

test('partial links (some pairs, no checksum, cut short): every view shows the same figure', () => {
  fuzz('partial', 250, (r, i) => {
    checkViews(`#${withTheme(r, partialLink(r))}`, r, `seed ${SEED} partial case ${i}`);
  });
});

test('tampered links (mutated pairs, damaged bytes, random values): every view shows the same figure', () => {
  fuzz('tampered', 100, (r, i) => {
    checkViews(`#${withTheme(r, tamperedLink(r))}`, r, `seed ${SEED} tampered case ${i}`);
  });
  // One random tampered link in about 50 is one no view can show (0-4 in 100 over five seeds; here a
  // last stage of 100 layers in a 32-layer model): seed 432081844 drew none in 100, so one is fixed.
  checkViews('#v=1&pp=4&ppl=100', prng(SEED), 'a last stage of more layers than the model has');
  console.log(`views: ${tally.cases} fragments, ${tally.element} also as element attributes; figures ${JSON.stringify(tally.figures)}`);
  // The generators reach every figure, an error and the element, or the property says little.
  for (const [figure, count] of Object.entries(tally.figures)) assert.ok(count > 0, `no case showed ${figure}`);
  assert.ok(tally.element > tally.cases / 2, `the element ran on ${tally.element} of ${tally.cases} cases`);
});

// ---- fixed cases ----

test("the documentation's short form and its element: one figure, device, as a link means its fields", () => {
  const r = { chance: () => false };
  const views = viewsOf('#v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb', r);
  assert.equal(views.length, 5);
  for (const v of views) assert.deepEqual(v.shows, views[0].shows, v.name);
  assert.equal(views[0].shows.figure, 'device');
  // Megatron's defaults for what the link leaves out (no SP, no distributed optimizer, no recompute): 151.85 GiB.
  assert.equal((views[0].shows.bytes / 2 ** 30).toFixed(2), '151.85');
});

test('element attributes: HTML lowercases names; l is L, vocab_size is written by its name', () => {
  const fields = 'L=40&h=5120&a=40&V=32000&s=4096&b=1';
  const link = restoreLink(`v=1&${fields}`, engine);
  const attributes = [['l', '40'], ['h', '5120'], ['a', '40'], ['vocab_size', '32000'], ['s', '4096'], ['b', '1']].map(([name, value]) => ({ name, value }));
  const fromAttributes = restoreLink(linkOfAttributes(attributes, SPECS), engine);
  assert.deepEqual(fromAttributes.fields, link.fields);
  assert.deepEqual(fromAttributes.rejected, []);
  assert.deepEqual(shown(element(attributes).view), shown(page(`#v=1&${fields}`)));
});
