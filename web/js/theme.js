// Colours from the CSS variables in app.css and palette.js, for canvas drawing (charts cannot use
// CSS directly). Reading computed style forces a style recalculation, so values are read once per
// colour scheme. The values themselves are cached too: reading a live computed style after the DOM
// changed forces a style recalculation, on every keystroke.
import { paletteSheet } from './palette.js';

let style = null;
const values = new Map();
const forgetColors = () => {
  style = null;
  values.clear();
};
// globalThis: Node tests import modules that import this one, and Node has no matchMedia.
globalThis.matchMedia?.('(prefers-color-scheme: dark)').addEventListener('change', forgetColors);

/** Gives the document the category colours (palette.js); the page and the embed call it first. */
export function adoptPalette() {
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, paletteSheet({
    light: ':root', systemDark: ':root:not([data-theme="light"])', forcedDark: ':root[data-theme="dark"]',
  })];
  forgetColors();
}

/** @param {string} name a custom property, e.g. "--c-weights-dense" */
export function cssColor(name) {
  let value = values.get(name);
  if (value === undefined) {
    style ??= getComputedStyle(document.documentElement);
    value = style.getPropertyValue(name).trim();
    values.set(name, value);
  }
  return value;
}

/**
 * Forces a theme ('light' or 'dark'), or follows the system ('auto' or anything else), for the
 * embed view. Colours read before are dropped.
 */
export function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  forgetColors();
}
