// A share-link state (url-state.js) as one config for the core, for views without a form: the
// embed page and the <trainmem-calculator> element. The main page does more (it drops rejected
// values one by one and tells the user); these views show the core's issues instead.
import { decodeState } from './url-state.js';
import { parseCapacity } from './format.js';

export const THEMES = ['light', 'dark', 'auto'];

/**
 * Splits the view's own options (theme) from the state: "#v=1&...&ck=x&theme=dark".
 * @returns {{state: string, theme: string}}
 */
export function splitViewOptions(fragment) {
  let theme = 'auto';
  const state = String(fragment ?? '').replace(/^#/, '').split('&').filter((pair) => {
    const m = /^theme=(.*)$/.exec(pair);
    if (m && THEMES.includes(m[1])) theme = m[1];
    return !m;
  }).join('&');
  return { state, theme };
}

/**
 * @param {string} fragment the state (without view options)
 * @param {import('./engine.js').Engine} engine
 * @returns {{config: object, preset: object|null, gpu: object|null, capacity: number|null,
 *   gpuLabel: string, unit: string, figure: string|undefined, rejected: object[], name: string}}
 */
export function configFromLink(fragment, engine) {
  const specs = new Map(engine.fieldSpecs.map((s) => [s.name, s]));
  const link = decodeState(fragment, specs);
  const preset = engine.presets.find((p) => p.id === link.preset) ?? null;
  const rejected = [...link.rejected];
  if (link.preset && !preset) rejected.push({ key: 'm', reason: `unknown model preset "${link.preset}"` });
  // Values the link resolved when it was made (~) count like set ones: the link means the same
  // after defaults change.
  const config = { ...preset?.config, ...link.auto, ...link.fields };
  let gpu = engine.gpus.find((g) => g.id === link.gpu) ?? null;
  let capacity = null;
  let gpuLabel = '';
  if (link.gpu === 'custom') {
    capacity = parseCapacity(link.capacity ?? '', link.unit ?? 'GiB');
    gpuLabel = 'custom GPU';
  } else {
    if (!gpu) gpu = engine.gpus.find((g) => g.id === 'h100-80gb') ?? engine.gpus[0];
    capacity = gpu?.memory_bytes ?? null;
    gpuLabel = gpu?.name ?? '';
  }
  const profile = config.profile ?? specs.get('profile')?.default;
  if (profile === 'trainmem' && Number.isFinite(capacity)) config.gpu_memory_bytes = capacity;
  return {
    config, preset, gpu, capacity, gpuLabel, unit: link.unit ?? 'GiB', figure: link.figure ?? undefined,
    rejected, name: preset?.name ?? 'Custom model', pin: link.pin ?? null,
  };
}
