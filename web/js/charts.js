// The two Chart.js charts: the most-loaded GPU as one stacked bar against its capacity, and the
// pipeline stages side by side. Chart.js is the UMD build, loaded as a classic script (window.Chart).
import { formatBytes, formatExactBytes, inUnit } from './format.js';
import { cssColor as css } from './theme.js';


/**
 * Loads Chart.js (the pages preload it) once called: the page and the embed call it after the
 * first frame with the result is painted, since its parse and run take longer than everything
 * before that frame. Resolves when it has run.
 */
export function loadChartJs() {
  if (window.Chart) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = 'vendor/chart.umd.js';
    script.onload = resolve;
    script.onerror = () => reject(new Error('Chart.js did not load (web/vendor/chart.umd.js is missing: run the vendor script).'));
    document.head.append(script);
  });
}

/** Resolves after the next frame has been painted. */
export const afterPaint = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

// Draws a dashed line at the GPU's capacity (Chart.js has no built-in annotation).
const capacityLine = {
  id: 'capacityLine',
  afterDatasetsDraw(chart, _args, opts) {
    if (!Number.isFinite(opts.value)) return;
    const scale = chart.scales[opts.axis];
    const { ctx, chartArea: area } = chart;
    const at = scale.getPixelForValue(opts.value);
    ctx.save();
    ctx.strokeStyle = opts.color;
    ctx.fillStyle = opts.color;
    ctx.lineWidth = 2;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    if (opts.axis === 'x') {
      ctx.moveTo(at, area.top - 4);
      ctx.lineTo(at, area.bottom);
    } else {
      ctx.moveTo(area.left, at);
      ctx.lineTo(area.right, at);
    }
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.font = '12px system-ui, sans-serif';
    if (opts.axis === 'x') {
      // Centre the label on the line, but keep all of it on the canvas (phones are narrow).
      const width = ctx.measureText(opts.label).width;
      const x = Math.max(0, Math.min(at - width / 2, chart.width - width));
      ctx.textAlign = 'left';
      ctx.textBaseline = 'bottom';
      ctx.fillText(opts.label, x, area.top - 6);
    } else {
      ctx.textAlign = 'right';
      ctx.textBaseline = 'bottom';
      ctx.fillText(opts.label, area.right, at - 3);
    }
    ctx.restore();
  },
};

function axisMax(values, capacity) {
  const top = Math.max(...values.filter(Number.isFinite), Number.isFinite(capacity) ? capacity : 0);
  return top > 0 ? top * 1.06 : 1;
}

/**
 * An HTML tooltip instead of Chart.js's canvas one: formulas are long and must wrap, and text in
 * the DOM can be selected and copied. `describe(item)` returns {title, lines, notes}.
 */
function htmlTooltip(describe) {
  return (context) => {
    const { chart, tooltip } = context;
    const box = chart.canvas.parentNode;
    let tip = box.querySelector('.chart-tip');
    if (!tip) {
      tip = document.createElement('div');
      tip.className = 'chart-tip';
      tip.setAttribute('role', 'tooltip');
      box.append(tip);
    }
    if (tooltip.opacity === 0 || !tooltip.dataPoints?.length) {
      tip.hidden = true;
      return;
    }
    const { title, lines, notes } = describe(tooltip.dataPoints[0]);
    const head = document.createElement('strong');
    head.textContent = title;
    const body = lines.map((text) => Object.assign(document.createElement('div'), { textContent: text }));
    const small = notes.map((text) => Object.assign(document.createElement('div'), { className: 'formula', textContent: text }));
    tip.replaceChildren(head, ...body, ...small);
    tip.hidden = false;
    // Keep the box inside the chart area horizontally; place it below the pointer.
    const left = Math.max(0, Math.min(tooltip.caretX - tip.offsetWidth / 2, box.clientWidth - tip.offsetWidth));
    tip.style.left = `${left}px`;
    tip.style.top = `${tooltip.caretY + 12}px`;
  };
}

/**
 * The value axis of a chart (bytes in `unit`, from 0 to above the largest bar and the capacity)
 * and the dashed capacity line drawn across it.
 */
function setValueAxis(options, axis, tops, capacity, capacityLabel, unit) {
  const scale = options.scales[axis];
  scale.min = 0;
  scale.suggestedMax = inUnit(axisMax(tops, capacity), unit);
  scale.title = { display: true, text: unit, color: css('--muted') };
  options.plugins.capacityLine = {
    axis, value: Number.isFinite(capacity) ? inUnit(capacity, unit) : NaN,
    label: capacityLabel, color: css('--capacity'),
  };
}

function baseOptions() {
  const text = css('--muted');
  const grid = css('--grid');
  return {
    responsive: true,
    maintainAspectRatio: false,
    animation: false, // every keystroke redraws; animation would lag behind the numbers
    color: text,
    scales: {
      x: { stacked: true, ticks: { color: text }, grid: { color: grid }, border: { color: grid } },
      y: { stacked: true, ticks: { color: text }, grid: { color: grid }, border: { color: grid } },
    },
    plugins: { legend: { display: false } },
  };
}

/** Horizontal stacked bars (GPU and compare charts): room above for the capacity label. */
function horizontalOptions() {
  const options = baseOptions();
  options.indexAxis = 'y';
  options.layout = { padding: { top: 22, right: 8 } };
  options.scales.y.grid.display = false;
  return options;
}

/**
 * A chart's datasets for `series`, changed in place when they are the same series (by label) as
 * before: replacing them makes Chart.js rebuild its controllers on update, which costs more than
 * the estimate. `make(x, i)` gives a dataset's properties.
 */
function setDatasets(chart, series, make) {
  const { datasets } = chart.data;
  const same = datasets.length === series.length && datasets.every((d, i) => d.label === series[i].label);
  if (!same) {
    chart.data.datasets = series.map(make);
    return;
  }
  series.forEach((x, i) => {
    const next = make(x, i);
    const d = datasets[i];
    // The data array itself is kept: Chart.js listens to it.
    next.data.forEach((v, j) => { d.data[j] = v; });
    d.data.length = next.data.length;
    for (const [key, value] of Object.entries(next)) if (key !== 'data') d[key] = value;
  });
}

export class GpuChart {
  constructor(canvas) {
    const options = horizontalOptions();
    options.scales.y.ticks.display = false;
    options.plugins.tooltip = {
      enabled: false,
      external: htmlTooltip((item) => {
        const seg = item.dataset.segment;
        return {
          title: item.dataset.label,
          lines: [`${formatBytes(seg.bytes, this.unit)} · ${formatExactBytes(seg.bytes)}`],
          notes: seg.formula ?? [],
        };
      }),
    };
    this.unit = 'GiB';
    this.chart = new window.Chart(canvas, {
      type: 'bar', data: { labels: ['GPU'], datasets: [] }, options, plugins: [capacityLine],
    });
  }

  /**
   * @param {{key: string, label: string, bytes: number, color: string, formula?: string[]}[]} segments
   * @param {number|null} capacity bytes
   */
  update(allSegments, capacity, capacityLabel, unit) {
    this.unit = unit;
    // Empty segments get no dataset: Chart.js's update time grows with the datasets, hidden or not.
    const segments = allSegments.filter((s) => s.bytes > 0);
    const total = segments.reduce((sum, s) => sum + s.bytes, 0);
    // Datasets are created once per segment key and then only mutated: replacing them makes
    // Chart.js rebuild its controllers, which costs more than the whole estimate.
    const { datasets } = this.chart.data;
    if (datasets.length !== segments.length || datasets.some((d, i) => d.key !== segments[i].key)) {
      this.chart.data.datasets = segments.map((s) => ({
        key: s.key, label: s.label, data: [0], barPercentage: 1, categoryPercentage: 0.9,
        borderWidth: { left: 0, right: 1, top: 0, bottom: 0 },
      }));
    }
    const border = css('--surface');
    this.chart.data.datasets.forEach((d, i) => {
      const s = segments[i];
      d.data[0] = s.bytes > 0 ? inUnit(s.bytes, unit) : 0;
      d.hidden = !(s.bytes > 0);
      d.backgroundColor = s.color;
      d.borderColor = border;
      d.segment = s;
    });
    setValueAxis(this.chart.options, 'x', [total], capacity, capacityLabel, unit);
    this.chart.update('none');
  }
}

export class StageChart {
  constructor(canvas) {
    const options = baseOptions();
    options.layout = { padding: { top: 4 } };
    options.plugins.tooltip = {
      enabled: false,
      mode: 'index',
      external: htmlTooltip((item) => {
        const i = item.dataIndex;
        const lines = this.chart.data.datasets.map((d) => `${d.label}: ${d.bytes[i] === null ? 'not computed' : `${formatBytes(d.bytes[i], this.unit)} · ${formatExactBytes(d.bytes[i])}`}`);
        return { title: `Stage ${this.chart.data.labels[i]}`, lines, notes: [this.footers[i] ?? ''] };
      }),
    };
    this.unit = 'GiB';
    this.footers = [];
    this.chart = new window.Chart(canvas, {
      type: 'bar', data: { labels: [], datasets: [] }, options, plugins: [capacityLine],
    });
  }

  /**
   * @param {object[]} stages result.stages
   * @param {{label: string, color: string, bytes: (number|null)[]}[]} series stacked per stage;
   *   null bytes are "not computed" (the reference profiles know the first stage's activations only)
   * @param {(stage: object) => string} describe footer text per stage (layers, parameters, moments)
   */
  update(stages, capacity, capacityLabel, unit, series, describe) {
    this.unit = unit;
    this.footers = stages.map(describe);
    this.chart.data.labels = stages.map((s) => String(s.stage));
    // In place: the datasets are replaced only when the series change (see GpuChart.update).
    const data = series.map((x) => x.bytes.map((b) => (b === null ? 0 : inUnit(b, unit))));
    setDatasets(this.chart, series, (x, i) => ({ label: x.label, bytes: x.bytes, data: data[i], backgroundColor: x.color }));
    const tops = stages.map((_, i) => series.reduce((sum, x) => sum + (x.bytes[i] ?? 0), 0));
    const o = this.chart.options;
    o.scales.y.max = undefined;
    setValueAxis(o, 'y', tops, capacity, capacityLabel, unit);
    o.scales.x.title = { display: true, text: 'Pipeline stage', color: css('--muted') };
    this.chart.update('none');
  }
}

/** Two stacked bars, pinned and current, one dataset per category, against the capacity. */
export class CompareChart {
  constructor(canvas) {
    const options = horizontalOptions();
    options.plugins.tooltip = {
      enabled: false,
      mode: 'index',
      external: htmlTooltip((item) => {
        const i = item.dataIndex;
        const lines = this.chart.data.datasets.filter((d) => d.bytes[i] > 0)
          .map((d) => `${d.label}: ${formatBytes(d.bytes[i], this.unit)}`);
        return { title: this.chart.data.labels[i], lines, notes: [] };
      }),
    };
    this.unit = 'GiB';
    this.chart = new window.Chart(canvas, {
      type: 'bar', data: { labels: ['Pinned', 'Current'], datasets: [] }, options, plugins: [capacityLine],
    });
  }

  /** @param {{label: string, color: string, bytes: [number, number]}[]} series */
  update(series, capacity, capacityLabel, unit) {
    this.unit = unit;
    setDatasets(this.chart, series, (x) => ({
      label: x.label, bytes: x.bytes, data: x.bytes.map((b) => inUnit(b, unit)), backgroundColor: x.color,
      barPercentage: 0.9, categoryPercentage: 0.9,
    }));
    const tops = [0, 1].map((i) => series.reduce((sum, x) => sum + x.bytes[i], 0));
    const o = this.chart.options;
    setValueAxis(o, 'x', tops, capacity, capacityLabel, unit);
    o.scales.y.ticks.color = css('--text');
    this.chart.update('none');
  }
}
