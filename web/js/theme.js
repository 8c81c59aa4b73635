// Colours from the CSS variables in app.css, for canvas drawing (charts cannot use CSS directly).
// Reading computed style forces a style recalculation, so values are read once per colour scheme.
let style = null;
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => { style = null; });

/** @param {string} name a custom property, e.g. "--c-weights-dense" */
export function cssColor(name) {
  style ??= getComputedStyle(document.documentElement);
  return style.getPropertyValue(name).trim();
}
