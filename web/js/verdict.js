// Whether a figure fits a GPU, in the words the page, the embed view and the
// <trainmem-calculator> element all use.
import { formatBytes } from './format.js';

/**
 * @param {number} bytes the figure compared (most-loaded GPU)
 * @param {number|null} capacity the GPU's memory in bytes
 * @param {string} unit GiB or GB
 * @returns {{fits: boolean, used: number, text: string} | null} null when either is unknown
 */
export function verdictOf(bytes, capacity, unit) {
  if (!Number.isFinite(bytes) || !Number.isFinite(capacity)) return null;
  const headroom = capacity - bytes;
  const used = bytes / capacity;
  const percent = (used * 100).toFixed(0);
  const fits = headroom >= 0;
  return {
    fits, used,
    text: fits
      ? `Fits · ${formatBytes(headroom, unit)} headroom (${percent}% used)`
      : `Does not fit · ${formatBytes(-headroom, unit)} over (${percent}% of capacity)`,
  };
}
