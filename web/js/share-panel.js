// The page's ways out: the share link (kept in the address bar as you edit, and Copy link), the
// Embed dialog (iframe and element snippets), and the exports (JSON, CSV, chart PNG, Megatron
// arguments). share.js lays out what leaves; this writes the link and wires the buttons.
import { resultPng } from './export-png.js';
import { download, elementAttributes, embedSnippets, resultCsv, resultJson } from './share.js';
import { encodeState } from './url-state.js';
import { elementsById } from './dom.js';

const STATUS_MS = 4000;
const LINK_WRITE_DELAY_MS = 250;

/** Shows a short status, then clears it (unless something else was shown meanwhile). */
function flash(node, text) {
  node.textContent = text;
  setTimeout(() => { if (node.textContent === text) node.textContent = ''; }, STATUS_MS);
}

/** The folder this page is served from, e.g. "https://example.org/docs/trainmem/". */
const baseUrl = () => new URL('.', location.href).href;

async function copyText(text, status, done, refused) {
  try {
    await navigator.clipboard.writeText(text);
    flash(status, done);
  } catch {
    // Clipboard can be refused (permissions, insecure context).
    flash(status, refused);
  }
}

// The panel's elements by their ids in index.html.
const IDS = {
  copy: 'copy-link', copyStatus: 'copy-status', embedOpen: 'embed-open', embedDialog: 'embed-dialog',
  embedTheme: 'embed-theme', embedIframe: 'embed-iframe', embedElement: 'embed-element', embedStatus: 'embed-status',
  exportJson: 'export-json', exportCsv: 'export-csv', exportPng: 'export-png', exportArgs: 'export-args',
  argsBox: 'args-box', argsText: 'args-text', argsNotes: 'args-notes', shareStatus: 'share-status', chart: 'gpu-chart',
};

export class SharePanel {
  /**
   * @param {object} page
   * @param {import('./engine.js').Engine} page.engine
   * @param {() => object|null} page.linkState what the link holds (url-state.js's encodeState
   *   input, with the preset as an object); null before the first valid result
   * @param {() => {config: object, preset: string|null}|null} page.pin the pinned configuration
   * @param {() => object|null} page.result the result on screen
   * @param {() => object} page.inputs the config sent to the core
   * @param {() => string} page.fileStem the downloads' name without extension
   * @param {() => object | null} page.picture what the PNG shows (export-png.js resultPng's spec), null without a result
   * @param {() => object} page.about the run in words for the CSV's header block (share.js resultCsv)
   */
  constructor(page) {
    const ui = elementsById(IDS);
    this.ui = ui;
    this.page = page;
    this.written = null;
    // The address bar's entry is the state on screen (the page just loaded, or Back, Forward or a
    // pasted link landed): the next write puts the page's own spelling of it in that entry instead
    // of opening one. (Until stop 46 the first write after a load opened one, and Back from it
    // landed on the page's bare address, which wrote the state again: Back never left the page.)
    this.replaceNext = true;
    this.timer = 0;
    ui.copy.addEventListener('click', () => {
      this.writeLink();
      copyText(location.href, ui.copyStatus, 'Link copied', 'Copy the address bar: it holds the link');
    });
    ui.embedOpen.addEventListener('click', () => {
      this.fillEmbed();
      ui.embedDialog.showModal();
    });
    ui.embedTheme.addEventListener('change', () => this.fillEmbed());
    for (const button of ui.embedDialog.querySelectorAll('[data-copy]')) {
      button.addEventListener('click', () => {
        const box = document.getElementById(button.dataset.copy);
        box.select();
        copyText(box.value, ui.embedStatus, 'Copied', 'Selected: press Ctrl+C (or ⌘C) to copy');
      });
    }
    this.bindExports();
  }

  /** The share link's fragment (without "#"); null before the first valid result. */
  fragment({ withPin = true } = {}) {
    const link = this.page.linkState();
    if (!link) return null;
    const pin = withPin ? this.page.pin() : null;
    const specs = this.page.engine.fieldSpecsByName;
    return encodeState({
      ...link, preset: link.preset?.id,
      pin: pin ? encodeState({
        fields: pin.config, names: Object.keys(pin.config), preset: pin.preset, gpu: link.gpu, unit: link.unit,
      }, specs) : undefined,
    }, specs);
  }

  /**
   * Writes the link into the address bar now. The first change after a finished edit (commit())
   * opens a history entry; the changes that follow until the next commit rewrite it, so Back
   * steps over finished edits, not keystrokes. The first write after a load or adopt() rewrites
   * the entry the page landed on.
   */
  writeLink() {
    clearTimeout(this.timer);
    const fragment = this.fragment();
    if (fragment === null || fragment === this.written) return;
    const push = !this.replaceNext && !this.entryOpen;
    this.replaceNext = false;
    this.written = fragment;
    this.entryOpen = push || this.entryOpen;
    if (push) history.pushState(null, '', `#${fragment}`);
    else history.replaceState(null, '', `#${fragment}`);
  }

  /** An edit is finished (a field left, a preset, an import, a planner row): the next change is a new entry. */
  commit() {
    this.writeLink();
    this.entryOpen = false;
  }

  /** The page now shows the address bar's link (Back, Forward, a pasted link): it is the entry's state. */
  adopt(hash) {
    clearTimeout(this.timer);
    this.written = hash.replace(/^#/, '');
    this.entryOpen = false;
    this.replaceNext = true;
  }

  /** Writes the link once edits pause (typing would otherwise rewrite it on every key). */
  scheduleLinkWrite() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.writeLink(), LINK_WRITE_DELAY_MS);
  }

  /** Whether the address bar's fragment is the one this page wrote (not a link opened by the user). */
  wrote(hash) {
    return hash.replace(/^#/, '') === this.written;
  }

  fillEmbed() {
    this.writeLink();
    const link = this.page.linkState();
    // The embed and the element have no compare view: the pin stays out.
    const { iframe, element } = embedSnippets(baseUrl(), this.fragment({ withPin: false }) ?? '',
      link ? elementAttributes(link, this.page.engine.fieldSpecsByName) : [], this.ui.embedTheme.value);
    this.ui.embedIframe.value = iframe;
    this.ui.embedElement.value = element;
  }

  bindExports() {
    const { ui, page } = this;
    const save = (extension, blob) => {
      download(`${page.fileStem()}.${extension}`, blob);
      flash(ui.shareStatus, `${extension.toUpperCase()} downloaded`);
    };
    ui.exportJson.addEventListener('click', () => {
      const result = page.result();
      if (result) save('json', new Blob([resultJson(result, page.inputs(), page.engine.version)], { type: 'application/json' }));
    });
    ui.exportCsv.addEventListener('click', () => {
      const result = page.result();
      if (!result) return;
      this.writeLink(); // the CSV names the link on screen
      save('csv', new Blob([resultCsv(result, page.about())], { type: 'text/csv' }));
    });
    ui.exportPng.addEventListener('click', async () => {
      this.writeLink(); // the PNG names the link on screen
      const picture = page.picture();
      if (picture) save('png', await resultPng(picture));
    });
    ui.exportArgs.addEventListener('click', async () => {
      const { gpu_memory_bytes: _capacity, ...config } = page.inputs();
      await page.engine.loadTools();
      const r = page.engine.exportMegatronArgs(config);
      ui.argsBox.hidden = false;
      ui.argsText.value = r.ok ? r.args : r.issues.map((i) => i.message).join('\n');
      ui.argsNotes.replaceChildren(...(r.ok ? r.notes : []).map((n) => Object.assign(document.createElement('li'), { textContent: n })));
      ui.argsText.select();
    });
  }
}
