// Importing a model: a Hugging Face config.json or a Megatron-LM command line, pasted or uploaded.
// The core reads it (engine.importHfConfig / importMegatronArgs) and says what it read, assumed
// and ignored; this panel shows that and hands the merged config to the page.

/** 'hf' for a JSON object, 'megatron' for anything else (a command line). */
export function detectKind(text) {
  const t = String(text ?? '').trim();
  if (!t.startsWith('{')) return 'megatron';
  try {
    const v = JSON.parse(t);
    return v && typeof v === 'object' && !Array.isArray(v) ? 'hf' : 'megatron';
  } catch {
    return 'hf'; // broken JSON: let the JSON reader name the problem
  }
}

const KIND_NAMES = { hf: 'Hugging Face config.json', megatron: 'Megatron-LM arguments' };

export class ImportPanel {
  /**
   * @param {object} els {panel, text, file, run, kind, report}
   * @param {import('./engine.js').Engine} engine
   * @param {() => object} base the page's config the import is merged over
   * @param {(config: object, label: string) => void} apply loads the merged config into the page
   */
  constructor(els, engine, base, apply) {
    Object.assign(this, { els, engine, base, apply });
    els.run.addEventListener('click', () => this.run());
    // The importers live in the tools module: fetch it when the panel opens.
    els.panel.addEventListener('toggle', () => { if (els.panel.open) engine.loadTools().catch(() => {}); });
    els.text.addEventListener('input', () => this.showKind());
    els.file.addEventListener('change', async () => {
      const file = els.file.files?.[0];
      if (!file) return;
      els.text.value = await file.text();
      this.fileName = file.name;
      this.run();
      els.file.value = '';
    });
    this.showKind();
  }

  showKind() {
    const t = this.els.text.value.trim();
    this.els.kind.textContent = t ? `Will be read as ${KIND_NAMES[detectKind(t)]}.` : 'Paste a config.json or a launch command, or upload a file.';
  }

  async run() {
    const text = this.els.text.value;
    if (!text.trim()) {
      this.report({ ok: false, issues: [{ field: '', message: 'Nothing to import: paste a config.json or a Megatron-LM command line first.' }] });
      return null;
    }
    const kind = detectKind(text);
    this.els.run.disabled = true;
    try {
      await this.engine.loadTools();
    } finally {
      this.els.run.disabled = false;
    }
    const base = this.base();
    const result = kind === 'hf' ? this.engine.importHfConfig(text, base) : this.engine.importMegatronArgs(text, base);
    let label = KIND_NAMES[kind];
    if (kind === 'hf') {
      try {
        const type = JSON.parse(text).model_type;
        if (type) label = `${type} config.json`;
      } catch { /* the result carries the issue */ }
    }
    if (this.fileName) label = `${label} (${this.fileName})`;
    this.fileName = null;
    this.report(result, label);
    if (result.ok) this.apply(result.config, label);
    return result;
  }

  /** Lists what was read, assumed and ignored, or the problems. */
  report(result, label = '') {
    const { report } = this.els;
    const parts = [];
    const p = (text, cls) => Object.assign(document.createElement('p'), { textContent: text, className: cls ?? '' });
    if (!result.ok) {
      parts.push(p('Nothing was imported:', 'error'));
      const ul = document.createElement('ul');
      ul.className = 'import-issues';
      for (const issue of result.issues) ul.append(Object.assign(document.createElement('li'), { textContent: issue.message }));
      parts.push(ul);
      report.className = 'import-report notice error-box';
    } else {
      parts.push(p(`Imported ${label}: ${result.read.length} read, ${result.assumed.length} assumed, ${result.ignored.length} ignored.`));
      for (const [key, title] of [['read', 'Read'], ['assumed', 'Assumed'], ['ignored', 'Ignored']]) {
        if (!result[key].length) continue;
        const details = document.createElement('details');
        details.className = `import-${key}`;
        if (key !== 'read') details.open = true;
        const summary = Object.assign(document.createElement('summary'), { textContent: `${title} (${result[key].length})` });
        const ul = document.createElement('ul');
        for (const line of result[key]) ul.append(Object.assign(document.createElement('li'), { textContent: line }));
        details.append(summary, ul);
        parts.push(details);
      }
      report.className = 'import-report notice';
    }
    report.replaceChildren(...parts);
    report.hidden = false;
  }
}
