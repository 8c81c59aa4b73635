// Whether a figure fits a GPU, in the words the page, the embed view and the
// <trainmem-calculator> element all use. The verdict itself is the core's (estimate.hpp
// fit_verdict: fits, tight or over, with its reason), one per figure in result.verdicts; this
// module only words it.
import { formatBytes } from './format.js';

const percent = (share) => `${Math.round(share * 100)} %`;

/**
 * @param {object} result a core result (result.verdicts exists when it was given a capacity)
 * @param {{key: string}|null} headline the figure compared (headlineOf: allocated, reserved, device or total)
 * @param {string} unit GiB or GB
 * @returns {{fit: 'fits'|'tight'|'over', used: number, text: string, short: string} | null} null
 *   when the result has no verdict for that figure (no capacity, no result)
 */
export function verdictOf(result, headline, unit) {
  const v = headline && result?.ok ? result.verdicts?.[headline.key] : null;
  if (!v || !(v.capacity_bytes > 0)) return null;
  const used = v.figure_bytes / v.capacity_bytes;
  const free = v.capacity_bytes - v.figure_bytes;
  let text;
  if (v.fit === 'over') {
    text = `Does not fit · ${formatBytes(-free, unit)} over (${percent(used)} of capacity)`;
  } else if (v.fit === 'tight' && v.reason === 'headroom') {
    text = `Tight · ${percent(used)} used: within the ${percent(v.headroom)} kept free for the caching allocator, ` +
      'longer samples and checkpoint saves';
  } else if (v.fit === 'tight') {
    text = `Tight · ${percent(used)} used, but runs like this landed within ±${percent(v.spread)}: ` +
      `up to ${formatBytes(v.upper_bytes, unit)}, over the capacity`;
  } else {
    text = `Fits · ${formatBytes(free, unit)} headroom (${percent(used)} used)`;
  }
  return { fit: v.fit, used, text, short: v.fit === 'over' ? 'over' : v.fit };
}
