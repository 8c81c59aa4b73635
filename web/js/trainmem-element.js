// <trainmem-calculator>: the calculator's answer as a custom element, for sites that prefer not
// to use iframes. An ES module that imports its siblings (the engine, the link reader, results,
// palette and verdict, as the page and the embed view do) and loads the WebAssembly core from
// next to itself.
//
//   <script type="module" src="https://example.org/trainmem/js/trainmem-element.js"></script>
//   <trainmem-calculator preset="llama-3.1-70b" tp="8" pp="2" gpu="h100-80gb" theme="auto"></trainmem-calculator>
//
// Served from another origin than the host page's, every module script is fetched with CORS, this
// one as much as its imports (and the .wasm): that host must send Access-Control-Allow-Origin.
//
// Attributes are the share link's keys (url-state.js: preset or m, gpu, cap, u, fig, the short
// field keys such as tp, pp, dp, s, b, or Megatron's field names), plus theme (light, dark, auto);
// they are read as a link is (link-config.js), so the element shows what the page and the embed
// view show for the same state. HTML lowercases attribute names: "l" is the link's "L", and
// vocab_size is written by its name ("v" is the link format's version). The headline carries
// data-bytes and data-figure, each row of the list its data-bytes. Changing an attribute
// recomputes. The element renders in its shadow root with its own styles, so the host page's CSS
// neither leaks in nor is touched; it needs no inline script or style.
import { createEngine } from './engine.js';
import { estimateView, linkOfAttributes, linkProblems, pageLinkOf, restoreLink } from './link-config.js';
import { bindConfidence, confidenceOf, figureRows, FIGURES, fillConfidence, markHeadline } from './results.js';
import { formatBytes, formatExactBytes, formatSize } from './format.js';
import { paletteSheet } from './palette.js';
import { verdictOf } from './verdict.js';

// The page chrome of web/css/app.css for the element's box (the page needs it in CSS before any
// script runs; tests/wasm/page-logic.test.mjs checks that the two agree). The category colours
// come from palette.js.
const CHROME_LIGHT = `
  --bg: #f6f7f9;
  --surface: #ffffff;
  --text: #15181d;
  --muted: #525a66;
  --border: #d5d9e0;
  --grid: #e3e6eb;
  --accent: #1f5fd1;
  --focus: #1f5fd1;
  --ok: #11703a;
  --ok-bg: #e3f4e9;
  --bad: #b3261e;
  --bad-bg: #fce8e6;
  --warn: #8a5300;
  --capacity: #b3261e;`;
const CHROME_DARK = `
  --bg: #0f1216;
  --surface: #181c22;
  --text: #e7eaee;
  --muted: #a3abb7;
  --border: #343b46;
  --grid: #2a3039;
  --accent: #7aa7ff;
  --focus: #9dbdff;
  --ok: #6fd394;
  --ok-bg: #143322;
  --bad: #ff8a80;
  --bad-bg: #3a1716;
  --warn: #f0b35a;
  --capacity: #ff8a80;`;

const STYLE = `
:host { display: block; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  font-size: 15px; line-height: 1.4; ${CHROME_LIGHT} color-scheme: light; }
:host([hidden]) { display: none; }
@media (prefers-color-scheme: dark) { :host(:not([theme="light"])) { ${CHROME_DARK} color-scheme: dark; } }
:host([theme="dark"]) { ${CHROME_DARK} color-scheme: dark; }
.box { background: var(--surface); color: var(--text); border: 1px solid var(--border); border-radius: 8px; padding: 10px 14px; }
.eyebrow, .model { margin: 0; color: var(--muted); font-size: 0.82rem; }
.headline { margin: 0; display: flex; flex-wrap: wrap; align-items: baseline; gap: 2px 8px; }
.total { font-size: 1.8rem; font-weight: 750; font-variant-numeric: tabular-nums; }
.of { color: var(--muted); font-size: 0.9rem; }
button.confidence { font: inherit; color: var(--muted); font-size: 0.8rem; background: none; border: none; padding: 2px 0;
  cursor: pointer; text-align: left; text-decoration: underline dotted; text-underline-offset: 3px; }
button.confidence:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.confidence.leans-low { color: var(--warn); }
.confidence-detail { margin: 4px 0 2px; padding: 6px 10px; font-size: 0.8rem; background: var(--bg); border: 1px solid var(--border); border-radius: 6px; }
.confidence-detail[hidden] { display: none; }
.verdict { margin: 2px 0 6px; font-weight: 650; }
.fits { color: var(--ok); } .over { color: var(--bad); } .tight { color: var(--warn); }
.bar { position: relative; display: flex; height: 22px; border-radius: 4px; background: var(--grid); overflow: visible; }
.seg { height: 100%; min-width: 0; }
.cap { position: absolute; top: -4px; bottom: -4px; width: 0; border-left: 2px dashed var(--capacity); }
ul { list-style: none; margin: 8px 0 4px; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(210px, 1fr)); gap: 1px 14px; font-size: 0.84rem; }
li { display: flex; justify-content: space-between; gap: 8px; border-bottom: 1px solid var(--grid); }
li span:last-child { font-variant-numeric: tabular-nums; font-weight: 600; }
.sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
/* The problems: one per line, the box's width (the legend's grid and its rows' rules are the legend's). */
ul.issues { display: block; list-style: disc; color: var(--bad); font-size: 0.86rem; margin: 4px 0; padding-left: 18px; }
ul.issues li { display: list-item; border-bottom: none; }
.foot { margin: 4px 0 0; font-size: 0.78rem; color: var(--muted); }
a { color: var(--accent); }
`;

const FULL_PAGE = new URL('../index.html', import.meta.url);
let sheets = null;

/** The element's own styles and the palette, built once and shared by every instance. */
function styleSheets() {
  if (!sheets) {
    const own = new CSSStyleSheet();
    own.replaceSync(STYLE);
    sheets = [own, paletteSheet({ light: ':host', systemDark: ':host(:not([theme="light"]))', forcedDark: ':host([theme="dark"])' })];
  }
  return sheets;
}

const h = (tag, cls, text) => {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
};

export class TrainmemCalculator extends HTMLElement {
  constructor() {
    super();
    this.root = this.attachShadow({ mode: 'open' });
    this.root.adoptedStyleSheets = styleSheets();
    this.box = h('div', 'box');
    this.box.setAttribute('role', 'group');
    this.box.setAttribute('aria-label', 'GPU memory estimate');
    this.root.append(this.box);
    this.pending = false;
    // Any attribute may be a field's link key, and the keys are the core's (its field rows): a
    // static observedAttributes list would have to be known before the module is, so every
    // attribute change is watched instead.
    // The element's own marks (data-ready, aria-*) are no state: a render that writes them must
    // not schedule another.
    this.watcher = new MutationObserver((records) => {
      if (records.some((r) => !/^(data|aria)-/.test(r.attributeName))) this.schedule();
    });
  }

  connectedCallback() {
    this.watcher.observe(this, { attributes: true });
    this.schedule();
  }

  disconnectedCallback() {
    this.watcher.disconnect();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    queueMicrotask(async () => {
      this.pending = false;
      if (!this.isConnected) return;
      this.engine ??= await createEngine();
      this.render();
    });
  }

  /** The attributes as a share-link state ("m=llama-3.1-70b&tp=8&..."). */
  state() {
    return linkOfAttributes(this.attributes, this.engine.fieldSpecsByName);
  }

  render() {
    const state = this.state();
    const link = restoreLink(state, this.engine);
    const { result, capacity, headline } = estimateView(this.engine, link);
    const { unit } = link;
    const color = (name) => getComputedStyle(this).getPropertyValue(name).trim();
    const parts = [h('p', 'model', link.name)];
    const problems = linkProblems(link, result);
    if (headline) {
      parts.unshift(h('p', 'eyebrow', result.profile === 'trainmem' ? `Most-loaded GPU · ${FIGURES[headline.key].long}` : 'Most-loaded GPU needs'));
      const headlineBox = h('p', 'headline');
      const total = h('span', 'total', formatBytes(headline.bytes, unit));
      total.title = formatExactBytes(headline.bytes);
      markHeadline(total, headline);
      headlineBox.append(total, h('span', 'of', Number.isFinite(capacity) ? `of ${formatSize(capacity, unit)} · ${link.gpuLabel}` : ''));
      // How sure: the closest validation group's 90th-percentile error (trainmem profile).
      // A button that opens the group's line (click, tap, Enter), as in the page and the embed.
      const conf = confidenceOf(result);
      parts.push(headlineBox);
      if (conf) {
        const note = h('button', 'confidence');
        const detail = h('p', 'confidence-detail');
        detail.id = 'confidence-detail';
        bindConfidence(note, detail);
        fillConfidence(note, detail, conf);
        headlineBox.append(note);
        parts.push(detail);
      }
      const verdict = verdictOf(result, headline, unit);
      if (verdict) parts.push(h('p', `verdict ${verdict.fit}`, verdict.text));
      // Rows adding up to the figure: each tensor class, activations, temporaries, then the
      // core's lines up to the figure.
      const shown = figureRows(result, headline.key).filter((r) => r.bytes > 0).map((r) => ({ ...r, color: color(r.color) }));
      const scale = Math.max(headline.bytes, Number.isFinite(capacity) ? capacity : 0) * 1.02;
      const bar = h('div', 'bar');
      bar.setAttribute('role', 'img');
      bar.setAttribute('aria-label', `${formatBytes(headline.bytes, unit)} on the most-loaded GPU; the list below gives each part`);
      for (const r of shown) {
        const seg = h('div', 'seg');
        seg.style.width = `${(100 * r.bytes / scale).toFixed(3)}%`; // CSSOM, not a style attribute: CSP-safe
        seg.style.background = r.color;
        seg.title = `${r.label}: ${formatBytes(r.bytes, unit)}`;
        bar.append(seg);
      }
      if (Number.isFinite(capacity)) {
        const cap = h('div', 'cap');
        cap.style.left = `${(100 * capacity / scale).toFixed(3)}%`;
        cap.title = `${link.gpuLabel} ${formatSize(capacity, unit)}`;
        bar.append(cap);
      }
      parts.push(bar);
      const list = h('ul');
      for (const r of shown) {
        const li = h('li');
        li.dataset.bytes = String(r.bytes);
        if (r.line) li.dataset.line = r.key;
        const name = h('span');
        const sw = h('span', 'sw');
        sw.style.background = r.color;
        name.append(sw, r.label);
        const value = h('span', '', formatBytes(r.bytes, unit));
        value.title = formatExactBytes(r.bytes);
        li.append(name, value);
        list.append(li);
      }
      parts.push(list);
    }
    if (problems.length) {
      const ul = h('ul', 'issues');
      ul.setAttribute('role', 'alert');
      for (const text of problems) ul.append(h('li', '', text));
      parts.push(ul);
    }
    const foot = h('p', 'foot');
    const a = h('a', '', 'Open in trainmem');
    a.href = `${FULL_PAGE.href}#${pageLinkOf(state)}`; // the page's spelling: no note on a version or checksum
    a.target = '_blank';
    a.rel = 'noopener';
    foot.append(a);
    parts.push(foot);
    this.box.replaceChildren(...parts);
    this.dataset.ready = result.ok ? '1' : 'invalid';
    this.dispatchEvent(new CustomEvent('trainmem-result', { detail: result }));
  }
}

if (!customElements.get('trainmem-calculator')) customElements.define('trainmem-calculator', TrainmemCalculator);
