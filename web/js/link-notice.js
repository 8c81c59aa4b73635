// The page's notices. After reading a link: the values it did not use and why, and notes about
// the link itself (checksum, format version, defaults that changed). After a preset or a setup
// changed the page: what changed, with an Undo. Text only, never markup: the values come from the
// link and may be anything.
import { reasonText } from './link-config.js';

/**
 * Says what a change did (`text`), with an Undo that hides the notice and calls `undo`, and
 * optional nodes under it (a list of the changes). With `details` the line stays short (a phone
 * shows it in one line): the whole sentence sits behind a "Details" button beside the Undo
 * (aria-expanded, a button: a tap, Enter or Space opens it).
 * @param {HTMLElement} box
 * @param {string} text
 * @param {() => void} undo
 * @param {Node[]} [more]
 * @param {string} [details]
 */
export function showUndoNotice(box, text, undo, more = [], details = '') {
  const button = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Undo' });
  button.addEventListener('click', () => {
    box.hidden = true;
    undo();
  });
  const line = document.createElement('p');
  line.className = 'notice-line';
  line.append(text, ' ');
  const nodes = [line];
  if (details) {
    const full = Object.assign(document.createElement('p'), { className: 'notice-details', hidden: true, textContent: details });
    full.id = `${box.id || 'notice'}-details`;
    const toggle = Object.assign(document.createElement('button'), { type: 'button', className: 'link-button notice-toggle', textContent: 'Details' });
    toggle.setAttribute('aria-expanded', 'false');
    toggle.setAttribute('aria-controls', full.id);
    toggle.addEventListener('click', () => {
      full.hidden = !full.hidden;
      toggle.setAttribute('aria-expanded', String(!full.hidden));
    });
    line.append(toggle, ' ');
    nodes.push(full);
  }
  line.append(button);
  box.replaceChildren(...nodes, ...more);
  box.dataset.kind = 'undo';
  box.hidden = false;
}

/** One rejected value as "key = value: reason". */
function rejectedItem(rejected) {
  const { key, value } = rejected;
  const li = document.createElement('li');
  const code = document.createElement('code');
  code.textContent = value === undefined ? key : `${key} = ${JSON.stringify(value)}`;
  li.append(code, `: ${reasonText(rejected)}`);
  return li;
}

/**
 * @param {HTMLElement} box
 * @param {{key: string, value?: unknown, reason: string}[]} rejected
 * @param {string[]} notes
 */
export function showLinkNotice(box, rejected, notes) {
  if (!rejected.length && !notes.length) {
    box.hidden = true;
    return;
  }
  const parts = [];
  if (rejected.length) {
    const p = document.createElement('p');
    // A value replaced by what its reason names (the later of two, the GPU's capacity) took no
    // fallback: the sentence says so only of those that did (QA at stop 46).
    const fellBack = rejected.filter((r) => !r.replaced).length;
    p.textContent = fellBack === 0 ? `${rejected.length === 1 ? 'A value' : 'Some values'} in this link ${rejected.length === 1 ? 'was' : 'were'} not used:`
      : fellBack === rejected.length ? `Some values in this link were not used: ${rejected.length === 1 ? 'it' : 'they'} fell back to the preset or default.`
        : 'Some values in this link were not used: where the reason names no other value, the preset\'s or the default took its place.';
    const list = document.createElement('ul');
    list.append(...rejected.map(rejectedItem));
    parts.push(p, list);
  }
  for (const note of notes) parts.push(Object.assign(document.createElement('p'), { textContent: note }));
  const close = Object.assign(document.createElement('button'), { type: 'button', className: 'link-button', textContent: 'Dismiss' });
  close.addEventListener('click', () => { box.hidden = true; });
  parts.push(close);
  box.replaceChildren(...parts);
  box.dataset.kind = 'link'; // the stylesheet's pointer to it under a phone's headline (#link-notice-jump)
  box.hidden = false;
}
