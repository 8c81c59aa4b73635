// The embed view (embed.html#<state>&theme=light|dark|auto): the headline, the stacked bar and the
// breakdown of one configuration, no form. It tells its parent its height so the iframe fits:
//   parent.postMessage({ type: 'trainmem:height', height }, '*')
import { createEngine } from './engine.js';
import { GpuChart, afterPaint, loadChartJs } from './charts.js';
import { ResultsView, renderLegend, segmentsOf } from './results.js';
import { adoptPalette, applyTheme } from './theme.js';
import { estimateView, linkProblems, restoreLink, splitViewOptions } from './link-config.js';
import { formatSize } from './format.js';
import { formulaLookup } from './formulas.js';
import { methodText } from './share.js';

const $ = (id) => document.getElementById(id);
let engine;
let chart;
let view;
let lastHeight = 0;

function postHeight() {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (height === lastHeight || window.parent === window) return;
  lastHeight = height;
  window.parent.postMessage({ type: 'trainmem:height', height }, '*');
}

/**
 * The link's figures. The first answer leaves out the trace (every quantity with its formula: the
 * chart's tooltips, hundreds of strings): there is no chart before its frame; later ones have it.
 */
function render() {
  const { state, theme } = splitViewOptions(location.hash);
  applyTheme(theme);
  const link = restoreLink(state, engine);
  const { result, capacity } = estimateView(engine, link, { verbose: Boolean(chart) });
  $('open-full').href = `index.html${state ? `#${state}` : ''}`;
  // The model and, for a result, how it trains (LoRA / QLoRA rank, framework, recompute): an embed
  // is read without the form beside it.
  $('model-name').textContent = result.ok ? `${link.name} · ${methodText(result)}` : link.name;
  document.title = `${link.name} · trainmem`;
  const problems = linkProblems(link, result);
  const issues = $('general-issues');
  issues.hidden = problems.length === 0;
  issues.replaceChildren(...problems.map((text) => Object.assign(document.createElement('p'), { textContent: text })));
  if (!result.ok) { // the issues instead of a figure: nothing of an earlier state stays
    view.renderSummary(null, capacity, link.gpuLabel, link.unit, true);
    view.clearTable();
    chart?.update([], capacity, '', link.unit);
    renderLegend($('legend'), [], link.unit);
    return;
  }
  view.renderSummary(result, capacity, link.gpuLabel, link.unit, false, link.figure);
  view.renderTable(result, link.unit, link.figure);
  const label = Number.isFinite(capacity) ? `${link.gpuLabel} ${formatSize(capacity, link.unit)}` : '';
  const segments = segmentsOf(result, formulaLookup(result), link.figure);
  chart?.update(segments, capacity, label, link.unit);
  renderLegend($('legend'), segments, link.unit);
}

async function start() {
  const enginePromise = createEngine();
  adoptPalette();
  if (document.readyState === 'loading') await new Promise((r) => document.addEventListener('DOMContentLoaded', r, { once: true }));
  applyTheme(splitViewOptions(location.hash).theme);
  engine = await enginePromise;
  view = new ResultsView();
  $('version').textContent = `· ${engine.version}`;
  render(); // the figures first; the chart once they are painted (Chart.js runs then)
  window.addEventListener('hashchange', render);
  new ResizeObserver(postHeight).observe(document.documentElement);
  postHeight();
  await afterPaint();
  await loadChartJs();
  chart = new GpuChart($('gpu-chart'));
  render();
  document.body.dataset.ready = '1';
}

start().catch((error) => {
  const box = $('general-issues');
  box.hidden = false;
  box.textContent = `The calculator could not start: ${error.message}`;
  document.body.dataset.ready = 'error';
});
