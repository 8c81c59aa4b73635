// Each view and panel names the elements it fills by their ids in the page.

/** {key: id} to {key: element}; null where the page has no such element. */
export const elementsById = (ids) => Object.fromEntries(Object.entries(ids).map(([key, id]) => [key, document.getElementById(id)]));

/** Text made safe for markup built as a string (element content and quoted attribute values). */
export const escapeHtml = (text) => String(text).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

// ---- terms: a word of the page with its one-line explanation, opened by click, tap or keyboard ----

// The terms open now, by id: a view that re-renders its markup (the breakdown, on every edit)
// keeps a line the reader opened.
const openTerms = new Set();

/**
 * A term as markup, in two halves: a button (its label: markup the caller made safe) that opens
 * the line explaining it, and that line, wherever it sits (a table row of its own). Enter and
 * Space are the button's own; Escape closes.
 */
export function termButtonHtml(id, label) {
  return `<button type="button" class="term" aria-expanded="${openTerms.has(id)}" aria-controls="${id}">${label}</button>`;
}
export function termNoteHtml(id, note) {
  return `<span class="term-note" id="${id}"${openTerms.has(id) ? '' : ' hidden'}>${escapeHtml(note)}</span>`;
}

/** The same as elements: [button, note]; `label` is a node or text. */
export function termElements(id, label, note) {
  const button = Object.assign(document.createElement('button'), { type: 'button', className: 'term' });
  button.setAttribute('aria-expanded', String(openTerms.has(id)));
  button.setAttribute('aria-controls', id);
  button.append(label);
  const line = Object.assign(document.createElement('span'), { className: 'term-note', id, textContent: note, hidden: !openTerms.has(id) });
  return [button, line];
}

const boundRoots = new WeakSet();
/** Opens and closes every term under `root` (one listener, so re-rendered markup needs no binding). */
export function bindTerms(root = document) {
  if (boundRoots.has(root)) return;
  boundRoots.add(root);
  const toggle = (button, open) => {
    const line = root.getElementById?.(button.getAttribute('aria-controls')) ?? document.getElementById(button.getAttribute('aria-controls'));
    if (!line) return;
    button.setAttribute('aria-expanded', String(open));
    line.hidden = !open;
    if (open) openTerms.add(line.id);
    else openTerms.delete(line.id);
  };
  root.addEventListener('click', (event) => {
    const button = event.target.closest?.('button.term');
    if (button) toggle(button, button.getAttribute('aria-expanded') !== 'true');
  });
  root.addEventListener('keydown', (event) => {
    const button = event.target.closest?.('button.term');
    if (button && event.key === 'Escape' && button.getAttribute('aria-expanded') === 'true') toggle(button, false);
  });
}
