// The result as a picture a reader can use on its own (a slide, an issue, a design doc): a title
// naming the model and the GPU; the method (full-parameter or LoRA/QLoRA, the framework, the
// recompute); the GPU count, layout and sequence; the headline figure against the capacity with
// how sure it is (±N %) and the verdict; the stacked bar with a legend giving each part's size;
// the link that opens the configuration. Drawn on an opaque background in the page's theme at
// twice the pixel ratio; its words are also in the file's text chunks. Nothing here computes a
// figure: it draws the parts the results view gives (segmentsOf) and the headline the page shows.

const WIDTH = 900;      // CSS pixels
const PAD = 28;
const BAR_HEIGHT = 30;
const ROW = 22;         // a legend row
const COLUMNS = 2;

/**
 * @param {object} spec
 * @param {string} spec.title e.g. "Llama 3.1 8B on NVIDIA H100 80GB"
 * @param {string} spec.method e.g. "LoRA rank 16 · FSDP2 (stage 3) · full recompute"
 * @param {string} spec.subtitle the GPU count, layout and sequence, e.g. "8 GPUs = TP 2 × PP 1 × CP 1 × DP 4 · sequence 4,096 tokens · micro batch 1"
 * @param {string} spec.figureName e.g. "Most-loaded GPU · device (what nvidia-smi shows)"
 * @param {string} spec.headline e.g. "60.81 GiB of 79.65 GiB"
 * @param {string} spec.confidence e.g. "runs like this landed within ±14 %" ('' for the reference profiles)
 * @param {{text: string, fit: 'fits'|'tight'|'over'} | null} spec.verdict
 * @param {{label: string, bytes: number, color: string, text: string}[]} spec.segments non-empty parts, stacking order; `text` is the formatted size
 * @param {number} spec.total the bar's total in bytes (the figure shown)
 * @param {number | null} spec.capacity bytes, or null
 * @param {string} spec.capacityText e.g. "H100 80GB 79.65 GiB"
 * @param {string} spec.link the share link that opens this configuration
 * @param {string} spec.footer the version and the confidence's group, in small print
 * @param {{background: string, text: string, muted: string, grid: string, ok: string, bad: string, capacity: string, accent: string}} spec.colors
 * @param {number} [scale] pixel ratio (2: sharp on high-density screens and when zoomed)
 * @returns {Promise<Blob>} the PNG, its words also in iTXt chunks (Title, Description, Source,
 *   Software) so the file says what it shows to whatever reads it without looking
 */
export async function resultPng(spec, scale = 2) {
  const legendRows = Math.ceil(spec.segments.length / COLUMNS);
  const probe = document.createElement('canvas').getContext('2d');
  // The link whole (a cut one opens nothing), broken anywhere; the small print by words.
  const linkLines = wrap(probe, spec.link ?? '', LINK_FONT, WIDTH - 2 * PAD, '');
  const footLines = wrap(probe, spec.footer ?? '', FOOT_FONT, WIDTH - 2 * PAD, ' ').slice(0, 3);
  const height = PAD + 20 + 22 + 22 + 30 + 30 + 26 + 20 + BAR_HEIGHT + 52 + legendRows * ROW + 10
    + linkLines.length * 14 + 4 + footLines.length * 15 + PAD;
  const canvas = document.createElement('canvas');
  canvas.width = WIDTH * scale;
  canvas.height = height * scale;
  const ctx = canvas.getContext('2d');
  ctx.scale(scale, scale);
  const { colors } = spec;
  ctx.fillStyle = colors.background;
  ctx.fillRect(0, 0, WIDTH, height);
  // A line too long for the picture is set smaller until it fits (a long model or GPU name).
  const text = (value, x, y, { size = 14, weight = 400, color = colors.text, align = 'left', max = WIDTH - 2 * PAD } = {}) => {
    ctx.font = font(size, weight);
    while (size > 9 && ctx.measureText(value).width > max) ctx.font = font(size -= 1, weight);
    ctx.fillStyle = color;
    ctx.textAlign = align;
    ctx.textBaseline = 'alphabetic';
    ctx.fillText(value, x, y);
    return ctx.measureText(value).width;
  };

  let y = PAD + 20;
  text(spec.title, PAD, y, { size: 22, weight: 700 });
  y += 22;
  text(spec.method, PAD, y, { size: 14, weight: 600 });
  y += 22;
  text(spec.subtitle, PAD, y, { size: 14, color: colors.muted });
  y += 30;
  text(spec.figureName, PAD, y, { size: 14, color: colors.muted });
  y += 30;
  const headlineWidth = text(spec.headline, PAD, y, { size: 26, weight: 700, max: (WIDTH - 2 * PAD) / 2 });
  if (spec.confidence) {
    text(spec.confidence, PAD + headlineWidth + 14, y, { size: 15, color: colors.muted, max: WIDTH - 2 * PAD - headlineWidth - 14 });
  }
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
  y += (legendRows - 1) * ROW + 10 + 6;

  // The link that opens this configuration, then the small print.
  const lines = (list, fontText, color, step) => {
    for (const line of list) {
      y += step;
      ctx.font = fontText;
      ctx.fillStyle = color;
      ctx.textAlign = 'left';
      ctx.fillText(line, PAD, y);
    }
  };
  lines(linkLines, LINK_FONT, colors.accent ?? colors.text, 14);
  y += 4;
  lines(footLines, FOOT_FONT, colors.muted, 15);
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
  return withTextChunks(blob, [
    ['Title', spec.title],
    ['Description', [spec.method, spec.subtitle, `${spec.figureName}: ${spec.headline}`, spec.confidence, spec.verdict?.text].filter(Boolean).join('\n')],
    ['Source', spec.link ?? ''],
    ['Software', spec.footer ?? ''],
  ]);
}

function font(size, weight = 400) {
  return `${weight} ${size}px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif`;
}
const FOOT_FONT = font(11);
const LINK_FONT = '400 11px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace';

/** Text set into lines no wider than `max` in `fontText`, broken at `by` (' ': words; '': anywhere). */
function wrap(ctx, value, fontText, max, by) {
  ctx.font = fontText;
  const lines = [];
  let line = '';
  for (const word of (by ? value.split(/\s+/) : [...value]).filter(Boolean)) {
    const next = line ? `${line}${by}${word}` : word;
    if (line && ctx.measureText(next).width > max) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

// ---- iTXt chunks (PNG specification, 3rd edition, §11.3.3.4: keyword, a null, compression
// flag and method, language tag and translated keyword each null-terminated, then UTF-8 text) ----

let crcTable = null;
/** CRC-32 as PNG computes it (ISO 3309, polynomial 0xEDB88320), over the chunk type and data. */
function crc32(bytes) {
  crcTable ??= Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let c = 0xffffffff;
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function itxtChunk(keyword, value) {
  const utf8 = new TextEncoder();
  const data = new Uint8Array([...utf8.encode(keyword), 0, 0, 0, 0, 0, ...utf8.encode(value)]);
  const chunk = new Uint8Array(12 + data.length);
  const view = new DataView(chunk.buffer);
  view.setUint32(0, data.length);
  chunk.set(utf8.encode('iTXt'), 4);
  chunk.set(data, 8);
  view.setUint32(8 + data.length, crc32(chunk.subarray(4, 8 + data.length)));
  return chunk;
}

/** The PNG with text chunks after its IHDR chunk (8-byte signature + 25-byte IHDR = byte 33). */
async function withTextChunks(blob, entries) {
  const bytes = new Uint8Array(await blob.arrayBuffer());
  const IHDR_END = 33;
  const chunks = entries.filter(([, value]) => value).map(([k, v]) => itxtChunk(k, v));
  return new Blob([bytes.subarray(0, IHDR_END), ...chunks, bytes.subarray(IHDR_END)], { type: 'image/png' });
}
