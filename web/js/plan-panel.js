// "Find layouts": GPU count and type in, the layouts that fit out (a sortable table); choosing a
// row loads its layout into the calculator. The search runs in a module worker (plan-worker.js)
// with an indeterminate progress bar and a Cancel button; without workers it runs here.
import { formatBytes, formatExactBytes, formatInteger } from './format.js';

/**
 * Why no layout fits, from the search's counts (the core's PlanStats): none could be formed with
 * what is held, every one broke a rule, or the model state alone was too large on each (a
 * newcomer's QA at stop 46: "No layout fits" said nothing of why).
 */
export function noFitReason(stats, keep = []) {
  if (!stats.layouts) {
    const held = keep.length ? ` with ${keep.join(', ')} held` : '';
    return ` No parallel layout of this GPU count can be formed${held}: release a held field (its hold button) or change the GPU count.`;
  }
  if (stats.invalid === stats.candidates) return ' Every layout breaks a rule of the model (a size that does not divide by a parallel size).';
  if (stats.invalid + stats.pruned_by_state === stats.candidates) {
    return ' The weights, gradients and optimizer states alone exceed the limit on every layout: more GPUs, a larger GPU, sharding, or LoRA or QLoRA.';
  }
  return ' Every layout needs more than the limit with its activations: more GPUs, recompute, a shorter sequence or a smaller micro batch.';
}

/** "1 sequence", "8 sequences". */
const plural = (n, noun) => `${formatInteger(n)} ${noun}${n === 1 ? '' : 's'}`;

const SOLVED = {
  'max-micro-batch': (v) => `The largest micro batch that fits is ${plural(v, 'sequence')}`,
  'max-seq-length': (v) => `The longest sequence that fits is ${plural(v, 'token')}`,
  'min-gpus': (v) => `The fewest GPUs on which a layout fits: ${formatInteger(v)}`,
};

// Long names carry soft hyphens: twelve columns fit the form's column at 1280 px.
const COLUMNS = [
  { key: 'rank', label: 'Rank', value: (l) => l.rank },
  { key: 'tp', label: 'TP', value: (l) => l.fields.tensor_model_parallel_size },
  { key: 'pp', label: 'PP', value: (l) => l.fields.pipeline_model_parallel_size },
  { key: 'vpp', label: 'VPP', value: (l) => l.fields.virtual_pipeline_model_parallel_size ?? 1 },
  { key: 'cp', label: 'CP', value: (l) => l.fields.context_parallel_size },
  { key: 'ep', label: 'EP', value: (l) => l.fields.expert_model_parallel_size ?? 1 },
  { key: 'dp', label: 'DP', value: (l) => l.data_parallel_size },
  { key: 'sharding', label: 'Shard\u00ading', value: (l) => sharding(l.fields) },
  { key: 'recompute', label: 'Re\u00adcompute', value: (l) => l.fields.recompute_granularity ?? 'none' },
  { key: 'mbs', label: 'Micro batch', value: (l) => l.fields.micro_batch_size },
  { key: 'memory', label: 'Memory', value: (l) => l.metric_bytes, bytes: true },
  { key: 'headroom', label: 'Head\u00adroom', value: (l) => l.headroom },
];

function sharding(fields) {
  if (fields.zero_stage !== undefined && fields.zero_stage !== null) return `ZeRO-${fields.zero_stage}`;
  if (fields.use_distributed_optimizer === true) return 'dist. opt.'; // Megatron's distributed optimizer (the cell's title says so)
  if (fields.use_distributed_optimizer === false) return 'none';
  return '—';
}

export class PlanPanel {
  /**
   * @param {object} els {gpus, headroom, run, cancel, progress, status, table, head, body, gpuName}
   * @param {(search: {gpus: number, solve: string}) => {config: object, capacity: number|null, gpuLabel: string, unit: string,
   *   keep?: string[], layoutFields?: object}} context the run to search for this many GPUs; `layoutFields`
   *   go with every layout found (a framework the search took for the GPU count: framework-words.js plannerBase)
   * @param {(fields: object) => void} load applies a layout's fields to the page
   * @param {() => import('./engine.js').Engine} engine for the no-worker fallback
   */
  constructor(els, context, load, engine) {
    Object.assign(this, { els, context, load, engine });
    this.sort = { key: 'rank', dir: 1 };
    this.layouts = [];
    this.seq = 0;
    els.run.addEventListener('click', () => this.run());
    // Start the worker (and its module) as soon as the panel is used, before the first search.
    for (const input of [els.gpus, els.headroom]) input.addEventListener('focus', () => this.worker(), { once: true });
    els.cancel.addEventListener('click', () => this.cancel());
    // The GPU count follows the calculator's (follow()) until the user types one; cleared, it follows again.
    els.gpus.addEventListener('input', () => { this.typed = els.gpus.value.trim() !== ''; });
    for (const input of [els.gpus, els.headroom]) {
      input.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); this.run(); } });
    }
  }

  /**
   * The calculator's GPU count (the resolved world size): the planner's count starts at it and
   * follows it, so "Find layouts" first answers for the GPUs the run has, until the user types another.
   */
  follow(worldSize) {
    if (this.typed || !Number.isInteger(worldSize) || worldSize < 1) return;
    const text = String(worldSize);
    if (this.els.gpus.value !== text) this.els.gpus.value = text;
  }

  /**
   * A whole new state (a link, a setup, an import, a pin loaded): the layouts found for the state
   * before are another run's figures, and its GPU count follows the new run's again. A search
   * under way answers the state before: its answer is dropped.
   */
  forget() {
    this.typed = false;
    if (!this.layouts.length && !this.els.run.disabled && !this.els.status.textContent) return; // nothing searched yet
    this.seq += 1;
    this.idle();
    this.layouts = [];
    this.result = null;
    this.els.table.hidden = true;
    this.els.body.replaceChildren();
    this.els.status.textContent = 'The layouts found before were another run\'s: Find layouts searches this one.';
  }

  worker() {
    if (this.w !== undefined) return this.w;
    try {
      this.w = new Worker(new URL('./plan-worker.js', import.meta.url), { type: 'module' });
      this.w.addEventListener('message', (e) => this.done(e.data));
      this.w.addEventListener('error', () => { this.w = null; });
    } catch {
      this.w = null;
    }
    return this.w;
  }

  run() {
    const { els } = this;
    const gpus = Number(els.gpus.value.replace(/[\s,_]/g, ''));
    const solve = els.solve.value;
    const ctx = this.context({ gpus, solve });
    this.layoutFields = ctx.layoutFields ?? {};
    const headroomText = els.headroom.value.trim();
    const headroom = headroomText === '' ? 0.1 : Number(headroomText) / 100;
    if (!Number.isInteger(gpus) || gpus < 1) return this.fail('Enter a whole number of GPUs, e.g. 64.');
    if (!(headroom >= 0 && headroom < 1)) return this.fail('Headroom is a percentage from 0 to 99.');
    if (!Number.isFinite(ctx.capacity)) return this.fail('Choose a GPU (or a custom capacity) in Hardware first.');
    const options = { gpus, gpu_memory_bytes: ctx.capacity, headroom, max_results: 50, solve, keep: ctx.keep ?? [] };
    // A solver varies its own field: holding it would leave nothing to solve.
    if (solve === 'max-micro-batch') options.keep = options.keep.filter((f) => f !== 'micro_batch_size');
    this.keep = options.keep;
    // Fewest GPUs: the count is the answer; the field bounds the search instead.
    if (solve === 'min-gpus') {
      delete options.gpus;
      options.max_gpus = Math.max(gpus, 8);
    }
    this.unit = ctx.unit;
    this.seq += 1;
    const message = { id: this.seq, config: ctx.config, options };
    this.started = performance.now();
    els.progress.hidden = false;
    els.cancel.hidden = false;
    els.run.disabled = true;
    els.status.textContent = solve === 'min-gpus'
      ? `Searching the fewest ${ctx.gpuLabel} GPUs (up to ${formatInteger(options.max_gpus)})…`
      : `Searching layouts for ${formatInteger(gpus)} × ${ctx.gpuLabel}…`;
    const worker = this.worker();
    if (worker) worker.postMessage(message);
    else {
      this.engine().loadTools().then((engine) => {
        const t0 = performance.now();
        const result = engine.plan(message.config, options);
        this.done({ id: message.id, result, ms: performance.now() - t0 });
      });
    }
    return undefined;
  }

  cancel() {
    this.w?.terminate();
    this.w = undefined; // a new worker next time
    this.seq += 1;
    this.idle();
    this.els.status.textContent = 'Search cancelled.';
  }

  idle() {
    this.els.progress.hidden = true;
    this.els.cancel.hidden = true;
    this.els.run.disabled = false;
  }

  fail(text) {
    this.idle();
    this.els.status.textContent = text;
    this.els.table.hidden = true;
  }

  done({ id, result, ms }) {
    if (id !== this.seq) return; // a newer search or a cancel
    this.idle();
    if (!result.ok) return this.fail(`The search could not run: ${result.issues.map((i) => i.message).join('; ')}`);
    this.result = result;
    if (result.solve && result.solve !== 'none') return this.solved(result, ms);
    this.layouts = result.layouts ?? [];
    const s = result.stats ?? {};
    const fits = result.n_fitting === 1 ? '1 layout fits' : `${formatInteger(result.n_fitting)} layouts fit`;
    const count = result.counted_all ? fits : `at least ${fits}`;
    const shown = this.layouts.length < result.n_fitting ? `; the best ${this.layouts.length} are listed` : '';
    const stop = result.complete ? '' : ` Stopped early: ${result.stopped}.`;
    this.els.status.textContent = this.layouts.length
      ? `${count}${shown} (${result.metric} memory ≤ ${formatBytes(result.limit_bytes, this.unit)}). ${formatInteger(s.estimates + s.state_estimates)} estimates in ${ms.toFixed(0)} ms.${stop} Choose a row to load it.`
      : `No layout fits ${formatInteger(result.gpus)} GPUs with ${Math.round(result.headroom * 100)}% headroom.${noFitReason(s, this.keep)}${stop}`;
    this.render();
    return undefined;
  }

  /** A solver's answer: the value and the layout that reaches it (one row, loadable). */
  solved(result, ms) {
    const s = result.solution ?? {};
    const stop = result.complete ? '' : ` Stopped early: ${result.stopped}.`;
    this.layouts = s.found ? [{ ...s.layout, rank: 1 }] : [];
    this.els.status.textContent = s.found
      ? `${SOLVED[result.solve](s.value)}${s.at_limit ? ' (the search limit: it may be more)' : ''}, with this layout (${result.metric} memory ≤ ${formatBytes(result.limit_bytes, this.unit)}), found in ${ms.toFixed(0)} ms.${stop} Choose it to load it.`
      : `No answer: nothing fits within the search limits.${stop}`;
    this.render();
  }

  render() {
    const { els } = this;
    els.table.hidden = this.layouts.length === 0;
    const col = COLUMNS.find((c) => c.key === this.sort.key) ?? COLUMNS[0];
    const rows = [...this.layouts].sort((a, b) => {
      const x = col.value(a);
      const y = col.value(b);
      return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) * this.sort.dir || a.rank - b.rank;
    });
    els.head.replaceChildren(...COLUMNS.map((c) => {
      const th = document.createElement('th');
      th.scope = 'col';
      const sorted = c.key === this.sort.key;
      if (sorted) th.setAttribute('aria-sort', this.sort.dir > 0 ? 'ascending' : 'descending');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'sort';
      button.textContent = `${c.label}${sorted ? (this.sort.dir > 0 ? ' ▲' : ' ▼') : ''}`;
      button.addEventListener('click', () => {
        this.sort = { key: c.key, dir: sorted ? -this.sort.dir : 1 };
        this.render();
        els.head.querySelector(`[data-key="${c.key}"]`)?.focus();
      });
      button.dataset.key = c.key;
      th.append(button);
      return th;
    }));
    els.body.replaceChildren(...rows.map((l) => {
      const tr = document.createElement('tr');
      tr.dataset.rank = String(l.rank);
      for (const c of COLUMNS) {
        const td = document.createElement('td');
        td.dataset.label = c.label; // a phone shows each layout as a card: the column's name before its value
        const v = c.value(l);
        if (c.key === 'rank') {
          const b = document.createElement('button');
          b.type = 'button';
          b.className = 'load';
          b.textContent = `#${v}`;
          b.setAttribute('aria-label', `Load layout ${v}`);
          td.append(b);
        } else if (c.bytes) {
          td.textContent = formatBytes(v, this.unit);
          td.title = formatExactBytes(v);
        } else if (c.key === 'sharding' && v === 'dist. opt.') {
          td.textContent = v;
          td.title = "Megatron's distributed optimizer (optimizer states sharded over data-parallel ranks)";
        } else if (c.key === 'headroom') {
          td.textContent = `${(v * 100).toFixed(0)}%`;
        } else td.textContent = String(v);
        tr.append(td);
      }
      tr.addEventListener('click', () => {
        for (const other of els.body.querySelectorAll('tr.chosen')) other.classList.remove('chosen');
        tr.classList.add('chosen');
        this.load({ ...this.layoutFields, ...l.fields });
      });
      return tr;
    }));
  }
}
