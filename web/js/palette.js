// The category colours: one colour per tensor class and part, activations, the peak's temporaries
// and each runtime overhead line (`overhead` for a line the page has no colour of its own for), in
// a light and a dark scheme. The page's charts and breakdown table, the embed view and the
// <trainmem-calculator> element all take them from here, as the custom properties --c-<name>
// (charts read them back with theme.js's cssColor).
// The page chrome (background, text, ok/bad) stays in app.css: it must be there before any
// script runs, while these colours are only ever drawn by script.

export const PALETTE = Object.freeze({
  light: Object.freeze({
    'weights-dense': '#2f6fe0',
    'weights-embedding': '#9dbbf3',
    'weights-expert': '#173f8c',
    'gradients-dense': '#e07b1f',
    'gradients-embedding': '#f5c594',
    'gradients-expert': '#8f4a0c',
    'master_weights-dense': '#8a5cf0',
    'master_weights-embedding': '#cbb8f9',
    'master_weights-expert': '#54279e',
    'optimizer_states-dense': '#10948a',
    'optimizer_states-embedding': '#8ad6cf',
    'optimizer_states-expert': '#0b5a54',
    activation: '#d9345b',
    'weight_copies-dense': '#5a86c9',
    'weight_copies-embedding': '#b7cbe8',
    'weight_copies-expert': '#2c4f80',
    'buffers-dense': '#8c7a2e',
    'buffers-embedding': '#d8cb8f',
    'buffers-expert': '#5c4f17',
    temporary: '#a8326e',
    allocator: '#8a929e',
    context: '#6b7380',
    nccl: '#4f5662',
    'frozen_weights-dense': '#6d7fa3',
    'frozen_weights-embedding': '#b9c3d6',
    'frozen_weights-expert': '#3f4d6b',
    'adapter_weights-dense': '#1fa3d9',
    'adapter_weights-embedding': '#92d3ee',
    'adapter_weights-expert': '#106a8f',
    'adapter_gradients-dense': '#e0a21f',
    'adapter_gradients-embedding': '#f2d48e',
    'adapter_gradients-expert': '#8f640c',
    'adapter_master_weights-dense': '#b45cf0',
    'adapter_master_weights-embedding': '#dcb8f9',
    'adapter_master_weights-expert': '#72279e',
    'adapter_optimizer_states-dense': '#3fae5a',
    'adapter_optimizer_states-embedding': '#a6dcb3',
    'adapter_optimizer_states-expert': '#226b34',
    paged: '#9e8a6b',
    overhead: '#b4bac4',
  }),
  dark: Object.freeze({
    'weights-dense': '#5b8ff0',
    'weights-embedding': '#a9c4f7',
    'weights-expert': '#2d58b0',
    'gradients-dense': '#f0923c',
    'gradients-embedding': '#f7c99b',
    'gradients-expert': '#b0621c',
    'master_weights-dense': '#a07ef5',
    'master_weights-embedding': '#d2c2fa',
    'master_weights-expert': '#6f43c4',
    'optimizer_states-dense': '#25b3a7',
    'optimizer_states-embedding': '#93dcd5',
    'optimizer_states-expert': '#147a72',
    activation: '#f05d80',
    'weight_copies-dense': '#7ea3dc',
    'weight_copies-embedding': '#bcd0ee',
    'weight_copies-expert': '#4a6fa8',
    'buffers-dense': '#c2ad4f',
    'buffers-embedding': '#e3d9a6',
    'buffers-expert': '#8a7a2c',
    temporary: '#d0609a',
    allocator: '#9aa2ad',
    context: '#7d8592',
    nccl: '#5f6773',
    'frozen_weights-dense': '#8d9fc3',
    'frozen_weights-embedding': '#c3cce0',
    'frozen_weights-expert': '#5a6a8c',
    'adapter_weights-dense': '#45bdf0',
    'adapter_weights-embedding': '#a3dcf3',
    'adapter_weights-expert': '#1f8ab5',
    'adapter_gradients-dense': '#f0b83c',
    'adapter_gradients-embedding': '#f5dca3',
    'adapter_gradients-expert': '#b0801c',
    'adapter_master_weights-dense': '#c783f5',
    'adapter_master_weights-embedding': '#e2c6fa',
    'adapter_master_weights-expert': '#9048c4',
    'adapter_optimizer_states-dense': '#5cc878',
    'adapter_optimizer_states-embedding': '#b0e3bd',
    'adapter_optimizer_states-expert': '#35904c',
    paged: '#b8a584',
    overhead: '#c3c8d0',
  }),
});

/** One scheme as custom-property declarations: "--c-weights-dense: #2f6fe0; ...". */
export function paletteDeclarations(scheme) {
  return Object.entries(PALETTE[scheme]).map(([name, color]) => `--c-${name}: ${color};`).join(' ');
}

/**
 * The palette as a constructed stylesheet (CSP-safe: no <style> element), for three selectors:
 * the light scheme, the dark scheme when the system asks for it, and the dark scheme forced.
 * @param {{light: string, systemDark: string, forcedDark: string}} selectors
 */
export function paletteSheet({ light, systemDark, forcedDark }) {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(`${light} { ${paletteDeclarations('light')} }
@media (prefers-color-scheme: dark) { ${systemDark} { ${paletteDeclarations('dark')} } }
${forcedDark} { ${paletteDeclarations('dark')} }`);
  return sheet;
}
