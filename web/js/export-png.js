// The result as a picture a reader can use on its own (a slide, an issue, a design doc): a title
// naming the model, the layout and the GPU count; the headline figure against the capacity and the
// verdict; the stacked bar with a legend giving each part's size. Drawn on an opaque background in
// the page's theme at twice the pixel ratio. Nothing here computes a figure: it draws the parts the
// results view gives (segmentsOf) and the headline the page shows.

const WIDTH = 900;      // CSS pixels
const PAD = 28;
const BAR_HEIGHT = 30;
const ROW = 22;         // a legend row
const COLUMNS = 2;

/**
 * @param {object} spec
 * @param {string} spec.title e.g. "Llama 3.1 8B"
 * @param {string} spec.subtitle e.g. "TP 2 · PP 1 · CP 1 · DP 4 = 8 GPUs · NVIDIA H100 80GB"
 * @param {string} spec.figureName e.g. "Most-loaded GPU · device (what nvidia-smi shows)"
 * @param {string} spec.headline e.g. "60.81 GiB of 79.65 GiB"
 * @param {{text: string, fit: 'fits'|'tight'|'over'} | null} spec.verdict
 * @param {{label: string, bytes: number, color: string, text: string}[]} spec.segments non-empty parts, stacking order; `text` is the formatted size
 * @param {number} spec.total the bar's total in bytes (the figure shown)
 * @param {number | null} spec.capacity bytes, or null
 * @param {string} spec.capacityText e.g. "H100 80GB 79.65 GiB"
 * @param {{background: string, text: string, muted: string, grid: string, ok: string, bad: string, capacity: string}} spec.colors
 * @param {number} [scale] pixel ratio (2: sharp on high-density screens and when zoomed)
 * @returns {Promise<Blob>}
 */
export function resultPng(spec, scale = 2) {
  const legendRows = Math.ceil(spec.segments.length / COLUMNS);
  const height = PAD + 20 + 22 + 30 + 30 + 26 + 20 + BAR_HEIGHT + 52 + legendRows * ROW + PAD;
  const canvas = document.createElement('canvas');
  canvas.width = WIDTH * scale;
  canvas.height = height * scale;
  const ctx = canvas.getContext('2d');
  ctx.scale(scale, scale);
  const { colors } = spec;
  ctx.fillStyle = colors.background;
  ctx.fillRect(0, 0, WIDTH, height);
  const font = (size, weight = 400) => `${weight} ${size}px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif`;
  // A line too long for the picture is set smaller until it fits (a long model or GPU name).
  const text = (value, x, y, { size = 14, weight = 400, color = colors.text, align = 'left', max = WIDTH - 2 * PAD } = {}) => {
    ctx.font = font(size, weight);
    while (size > 9 && ctx.measureText(value).width > max) ctx.font = font(size -= 1, weight);
    ctx.fillStyle = color;
    ctx.textAlign = align;
    ctx.textBaseline = 'alphabetic';
    ctx.fillText(value, x, y);
  };

  let y = PAD + 20;
  text(spec.title, PAD, y, { size: 22, weight: 700 });
  y += 22;
  text(spec.subtitle, PAD, y, { size: 14, color: colors.muted });
  y += 30;
  text(spec.figureName, PAD, y, { size: 14, color: colors.muted });
  y += 30;
  text(spec.headline, PAD, y, { size: 26, weight: 700 });
  y += 26;
  if (spec.verdict) {
    const color = { fits: colors.ok, tight: colors.warn ?? colors.text, over: colors.bad }[spec.verdict.fit];
    text(spec.verdict.text, PAD, y, { size: 15, weight: 650, color });
  }
  y += 20;

  // The bar: the parts stacked on a scale that holds both the figure and the capacity.
  const barWidth = WIDTH - 2 * PAD;
  const scaleMax = Math.max(spec.total, Number.isFinite(spec.capacity) ? spec.capacity : 0) || 1;
  const px = (bytes) => (bytes / scaleMax) * barWidth;
  ctx.fillStyle = colors.grid;
  ctx.fillRect(PAD, y, barWidth, BAR_HEIGHT);
  let x = PAD;
  for (const s of spec.segments) {
    const w = px(s.bytes);
    ctx.fillStyle = s.color;
    ctx.fillRect(x, y, w, BAR_HEIGHT);
    x += w;
  }
  if (Number.isFinite(spec.capacity)) {
    const cx = PAD + px(spec.capacity);
    ctx.strokeStyle = colors.capacity;
    ctx.lineWidth = 2;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(cx, y - 6);
    ctx.lineTo(cx, y + BAR_HEIGHT + 6);
    ctx.stroke();
    ctx.setLineDash([]);
    text(spec.capacityText, Math.min(cx, WIDTH - PAD), y + BAR_HEIGHT + 20, { size: 12, color: colors.capacity, align: cx > WIDTH / 2 ? 'right' : 'left' });
  }
  y += BAR_HEIGHT + 52;

  // The legend: a swatch, the part and its size, in columns, in stacking order.
  const columnWidth = barWidth / COLUMNS;
  spec.segments.forEach((s, i) => {
    const cx = PAD + Math.floor(i / legendRows) * columnWidth;
    const cy = y + (i % legendRows) * ROW;
    ctx.fillStyle = s.color;
    ctx.fillRect(cx, cy - 11, 12, 12);
    text(s.text, cx + columnWidth - 16, cy, { size: 13, weight: 600, align: 'right' });
    text(s.label, cx + 18, cy, { size: 13, max: columnWidth - 110 });
  });
  return new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
}
