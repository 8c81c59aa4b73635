// The fresh page's first answer, written into dist/index.html at build time, so that a visitor
// without a link sees the result in the first frame instead of after the module has compiled and
// run (squoosh prerenders its first screen the same way). The snapshot is the page itself: dist/ is
// served, opened in headless Chromium, and the <main> element is taken once the first result is
// on screen, before Chart.js runs (its canvases are drawn later, by the live page).
//   - The figures are the core's: the same build, the same code, the same state (the empty link's).
//   - The inputs can be used before main.js has built the live form over them: js/boot.js queues
//     the last value of each control changed, and main.js makes those edits again on the live
//     controls (an edit is queued, never lost).
//   - A visitor with a link (any fragment) must not see the fresh page's answer: js/boot.js marks
//     the document before the first paint, and the stylesheet hides a prerendered <main> then.
//   - Values, checks and choices the page set as properties are written as attributes.
//   - Style attributes are dropped (the CSP allows none in markup; the meter fills once live).
//   - The form's fields are left out: main.js builds them anyway (Form.build), and their 85 KB of
//     markup come before the result column in the document, so the parser reached the headline,
//     and the first frame showed it, only after them. Without them the headline's first paint
//     (Element Timing, 15 cold loads each, interleaved, on the 2-core machine) came at 272 ms
//     median instead of 364 ms; the inputs around them (presets, import, hardware) stay.
//   - What the first frame need not lay out waits in <template data-deferred> elements (the
//     inputs' contents, the result cards below the headline's, the explanation, the embed
//     dialog): js/boot.js puts them in place after the first frame, so the headline and the
//     verdict paint first, the result cards a frame later and the rest after them.
import { chromium } from 'playwright-core';
import { serve } from './serve.mjs';

export const PRERENDERED = 'data-prerendered';
const MAIN = /<main class="layout">[\s\S]*<\/main>/;

/**
 * The page in `root` (a built dist/) with its first answer: resolves to { html, title } for
 * index.html. Needs Chromium (tests/setup.sh installs it).
 */
export async function snapshotFirstAnswer(root) {
  const site = await serve({ port: 0, root });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    // Chart.js is held back: the snapshot is the first answer without charts, as a visitor's first frame.
    await page.route(/\/vendor\/chart\.umd[^/]*\.js$/, () => {});
    await page.goto(`${site.url}index.html`);
    await page.waitForFunction(() => performance.getEntriesByName('trainmem:first-result-frame').length > 0
      || document.body.dataset.ready === 'error', null, { timeout: 60_000 });
    // The details follow the headline a frame at a time (main.js): all of them are in the answer.
    await page.evaluate(() => window.trainmemSettled?.());
    const snap = await page.evaluate((attr) => {
      if (document.body.dataset.ready === 'error') return { error: document.getElementById('general-issues')?.textContent };
      // What the page set as properties (values, checks, choices) becomes markup, as a clone drops it.
      for (const el of document.querySelectorAll('main input, main textarea')) {
        if (el.type === 'checkbox' || el.type === 'radio') el.toggleAttribute('checked', el.checked);
        else if (el.type !== 'file') el.setAttribute('value', el.value);
      }
      for (const option of document.querySelectorAll('main option')) option.toggleAttribute('selected', option.selected);
      const main = document.querySelector('main').cloneNode(true);
      main.setAttribute(attr, '');
      const fields = main.querySelector('#fields');
      if (fields) {
        const wait = document.createElement('p');
        wait.className = 'hint';
        wait.textContent = 'The model and training fields appear as the calculator starts…';
        fields.replaceChildren(wait);
      }
      for (const el of main.querySelectorAll('[style]')) el.removeAttribute('style');
      // The first frame lays out the headline's card alone: the cards below it (stage 1) and the
      // inputs' contents (stage 2) wait in templates (js/boot.js puts them in place, a frame apart).
      const defer = (nodes, stage) => {
        if (!nodes.length) return;
        const t = document.createElement('template');
        t.setAttribute('data-deferred', String(stage));
        nodes[0].before(t);
        t.content.append(...nodes);
      };
      const summary = main.querySelector('#summary');
      const after = [];
      for (let n = summary.nextSibling; n; n = n.nextSibling) after.push(n);
      defer(after, 1);
      defer([...main.querySelector('.inputs').childNodes], 2);
      return { html: main.outerHTML, title: document.title, origin: location.origin };
    }, PRERENDERED);
    if (snap.error || errors.length) throw new Error(`the page did not start: ${snap.error ?? errors.join('; ')}`);
    if (snap.html.includes(snap.origin)) throw new Error('the first answer names the build server\'s address: it would be wrong on the host');
    return snap;
  } finally {
    await browser.close();
    site.server.close();
  }
}

/** The opening tag of a template of deferred stage `stage` (js/boot.js unfolds them; the page bench reads stage 1's as the first answer's end). */
export const deferredOpening = (stage) => `<template data-deferred="${stage}">`;

/**
 * `html` with the element that starts with `opening` (its whole text, up to the matching close of
 * its tag) wrapped in a <template data-deferred="stage"> (js/boot.js: the stages unfold in order).
 */
export function deferElement(html, opening, stage) {
  const start = html.indexOf(opening);
  if (start < 0) throw new Error(`index.html has no ${opening}> to defer`);
  const tag = /^<([a-z]+)/.exec(opening)[1];
  const re = new RegExp(`<${tag}\\b|</${tag}>`, 'g');
  re.lastIndex = start;
  for (let depth = 0, m; (m = re.exec(html));) {
    depth += m[0][1] === '/' ? -1 : 1;
    if (depth === 0) {
      const end = m.index + m[0].length;
      return `${html.slice(0, start)}${deferredOpening(stage)}${html.slice(start, end)}</template>${html.slice(end)}`;
    }
  }
  throw new Error(`index.html's ${opening}> is not closed`);
}

/**
 * index.html's text with its <main> replaced by the snapshot and the snapshot's title; the parts
 * below the answer that a first frame need not lay out (the explanation, the embed dialog) wait
 * in templates, as the snapshot's own do. The headline's first paint, 12 cold loads each on the
 * 2-core machine, all in one run: the whole document 292 ms, the explanation and dialog deferred
 * 260 ms, the inputs' contents too 240 ms, everything below the headline's card too 156 ms; a
 * document of the headline alone with the stylesheet 80-96 ms.
 */
export function withFirstAnswer(indexHtml, snap) {
  if (!MAIN.test(indexHtml)) throw new Error('index.html has no <main class="layout"> to prerender');
  let html = indexHtml
    .replace(MAIN, () => snap.html)
    .replace(/<title>[^<]*<\/title>/, () => `<title>${snap.title.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</title>`);
  for (const opening of ['<section id="how"', '<dialog id="embed-dialog"']) html = deferElement(html, opening, 2);
  return html;
}

/**
 * The templates of `stage` (what only the live page needs: the inputs' contents, the explanation,
 * the embed dialog; 8 of the document's 15 KB gzip) moved to the end of <body>, each leaving an
 * empty template with its index (data-part) where it was; js/boot.js puts each back when the stage
 * unfolds (after the first frame: the document is parsed by then). The inputs' contents stood
 * before the result column, so the parser read them before it reached the answer; now the first
 * answer is the document's first 3 KB gzip (issue 31 item 4: the plain page's first answer ≤ 20
 * KB with its stylesheet), and on a slow network the rest streams in behind it on the same
 * response. (A file of their own, fetched from the head, was tried: on Chromium's Fast 3G the
 * fresh page's inputs came 0.3 s later, sharing the line with the module.) A document without
 * such templates, or with a template inside one (the first </template> would end it), is an error.
 */
export function deferToEnd(html, stage) {
  const parts = [];
  const rest = html.replace(new RegExp(`${deferredOpening(stage)}([\\s\\S]*?)</template>`, 'g'), (_, body) => {
    if (/<template\b/i.test(body)) throw new Error(`index.html's deferred part ${parts.length} holds a <template>: it cannot be moved whole`);
    parts.push(`<template data-part="${parts.length}">${body}</template>`);
    return `<template data-deferred="${stage}" data-part="${parts.length - 1}"></template>`;
  });
  if (!parts.length) throw new Error(`index.html has no ${deferredOpening(stage)} to move`);
  const end = rest.lastIndexOf('</body>');
  if (end < 0) throw new Error('index.html has no </body> to put its deferred parts before');
  return `${rest.slice(0, end)}${parts.join('\n')}\n${rest.slice(end)}`;
}
