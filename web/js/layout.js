// How the form is laid out: its sections, their titles and order. Everything about a field —
// its label, link key, type, range, unit, default, help, the words of its choices, and its place
// in the form (section, shown or under "More", order) — comes from the core's field specs
// (engine.fieldSpecs: each field's row in core/src/config/fields.cpp), and which fields mean
// something for a config from the core's field rows (engine.fieldsInEffect); nothing here
// duplicates them. A new field is its row: it appears where the row places it.

/**
 * Page sections in order: the ids the core's rows name (FormSection, spec.form.section), with the
 * page's title for each. `mount`: the section is index.html's own (#section-run, which holds the
 * GPU select), and its fields go into that grid after the GPU.
 */
const SECTIONS = [
  // What a fine-tuner knows first (issue 32, item 5): the GPU, the method, how many GPUs, the
  // sequence and batch, the framework and checkpointing. The model is the preset above the form.
  { id: 'run', title: 'Your run', mount: 'run-grid' },
  { id: 'model', title: 'Model' },
  { id: 'parallelism', title: 'Parallelism' },
  { id: 'training', title: 'Training' },
  // The sections below hold fields only the trainmem profile reads (the core marks them
  // trainmem_only): with the reference profiles none of their fields is in effect, so they hide.
  { id: 'framework', title: 'Framework and precision' },
  { id: 'optimizer', title: 'Optimizer and offload' },
  { id: 'activations', title: 'Activations' },
  { id: 'finetuning', title: 'Fine-tuning' },
  { id: 'runtime', title: 'Runtime overheads' },
];

/** How a choice reads in the form: the core's label for it where its row has one, else its name. */
export function choiceLabel(spec, choice) {
  const i = spec?.choice_labels ? spec.choices.indexOf(choice) : -1;
  return i >= 0 ? spec.choice_labels[i] : choice;
}

/** Fields a preset describes (the model); choosing a preset resets exactly these. */
export const MODEL_GROUPS = new Set(['model', 'moe', 'mla']);

/**
 * Each section's shown fields and its "More" list, in page order, as the core's rows place them
 * (spec.form). A field without a place is one the page sets itself (the GPU's capacity). A section
 * the rows name that this list lacks is the page's mistake, never a field silently left out.
 * @param {Map<string, object>} specs the core's field specs by name
 * @returns {{section: object, fields: string[], more: string[]}[]}
 */
export function sectionFields(specs) {
  const placed = [...specs.values()].filter((s) => s.form).sort((a, b) => a.form.order - b.form.order);
  for (const spec of placed) {
    if (!SECTIONS.some((s) => s.id === spec.form.section)) throw new Error(`${spec.name}: the form has no section "${spec.form.section}" (web/js/layout.js SECTIONS)`);
  }
  return SECTIONS.map((section) => {
    const own = placed.filter((s) => s.form.section === section.id);
    return {
      section,
      fields: own.filter((s) => !s.form.more).map((s) => s.name),
      more: own.filter((s) => s.form.more).map((s) => s.name),
    };
  });
}

const pageOrders = new WeakMap();
/** Every field the form shows, in page order (built once per specs: asked on every keystroke). */
function pageOrder(specs) {
  if (!pageOrders.has(specs)) pageOrders.set(specs, sectionFields(specs).flatMap((s) => [...s.fields, ...s.more]));
  return pageOrders.get(specs);
}

/**
 * The fields in effect, in page order: what the form shows and what a view sends to the core.
 * Which fields mean something is the core's answer (engine.fieldsInEffect, core fields_in_effect:
 * each field row's condition), not a rule of the page's.
 * @param {Map<string, object>} specs the core's field specs by name
 * @param {Set<string>} inEffect the names the core says mean something
 */
export function fieldsInPageOrder(specs, inEffect) {
  return pageOrder(specs).filter((name) => inEffect.has(name));
}
