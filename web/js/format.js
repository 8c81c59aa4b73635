// Turning bytes and counts into text. The core reports bytes; choosing GiB or GB is the page's job.

export const UNITS = {
  GiB: { label: 'GiB', bytes: 2 ** 30 },
  GB: { label: 'GB', bytes: 1e9 },
};

// Thousands separators by hand: creating an Intl.NumberFormat costs ~25 ms on first use, more
// than the whole first estimate.
function group(n) {
  const [whole, fraction] = String(Math.abs(n)).split('.');
  const text = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${n < 0 ? '-' : ''}${text}${fraction ? `.${fraction}` : ''}`;
}

/** "42.07 GiB" (or "—" for anything that is not a finite number: never show NaN). */
export function formatBytes(bytes, unit = 'GiB', digits = 2) {
  if (!Number.isFinite(bytes)) return '—';
  const u = UNITS[unit] ?? UNITS.GiB;
  return `${(bytes / u.bytes).toFixed(digits)} ${u.label}`;
}

/** Bytes as a plain number in the chosen unit, for chart axes. */
export function inUnit(bytes, unit = 'GiB') {
  return bytes / (UNITS[unit] ?? UNITS.GiB).bytes;
}

/** "45,169,291,776 B": exact bytes for tooltips (values can be non-integral, e.g. VPP penalties). */
export function formatExactBytes(bytes) {
  if (!Number.isFinite(bytes)) return '—';
  return `${group(Number.isInteger(bytes) ? bytes : +bytes.toFixed(6))} B`;
}

/** Parameter counts: "70.56 B" for 70,555,025,408. */
export function formatCount(n) {
  if (!Number.isFinite(n)) return '—';
  const steps = [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']];
  for (const [size, suffix] of steps) {
    if (Math.abs(n) >= size) return `${(n / size).toFixed(2)} ${suffix}`;
  }
  return String(n);
}

/** "70,555,025,408" */
export function formatInteger(n) {
  return Number.isFinite(n) ? group(Math.round(n)) : '—';
}

// The smallest capacity a person may type for a custom GPU: a bound on input, not a formula. The
// figures are shown to 0.01 GiB, so a capacity of a few MB read "of 0 GiB … 1872921 %" (QA at stop
// 46); the catalogue's smallest GPU has 24 GB, and no LLM's training state fits in under 1 GB.
export const MIN_CAPACITY_BYTES = 1e9;
/** What a capacity must be, in the words the page and a link's notice use. */
export const CAPACITY_RULE = `a size of at least ${MIN_CAPACITY_BYTES / 1e9} GB, such as 96 GB or 80 GiB`;

/**
 * Parses a capacity typed by a person: "80", "80 GB", "141GB", "95.74 GiB". A bare number is read
 * in `defaultUnit`. Returns bytes, or null if the text is not a positive size.
 */
export function parseCapacity(text, defaultUnit = 'GiB') {
  // Trimmed first: "\s*(GiB|GB)?\s*$" backtracks quadratically on a long run of spaces.
  const m = /^(\d+(?:\.\d+)?)\s*(GiB|GB)?$/i.exec(String(text ?? '').trim());
  if (!m) return null;
  const unitName = m[2] ? (m[2].toLowerCase() === 'gib' ? 'GiB' : 'GB') : defaultUnit;
  const bytes = Number(m[1]) * UNITS[unitName].bytes;
  return bytes >= MIN_CAPACITY_BYTES && Number.isFinite(bytes) ? bytes : null;
}

/** A capacity: "80 GiB", "141 GB", "95.74 GiB" (no decimals when the value is whole). */
export function formatSize(bytes, unit = 'GiB') {
  if (!Number.isFinite(bytes)) return '—';
  const v = inUnit(bytes, unit);
  const rounded = Math.round(v);
  return `${Math.abs(v - rounded) < 0.005 ? rounded : v.toFixed(2)} ${(UNITS[unit] ?? UNITS.GiB).label}`;
}
