// Choosing a fine-tuning method (the peft field: none = full fine-tuning, lora, qlora) on a run
// built by hand (issue 32, item 5). Where the page's current settings conflict with the method,
// the core says so (resolve.cpp, resolve_finetuning_fields and resolve_model_implementation); this
// module answers each such conflict with the value a fine-tuning run of that method uses, checks
// with the core that the answer removes the conflict, and words what it changed in one line with
// an Undo. It changes nothing the core does not object to, and nothing it cannot explain below.

/**
 * Each answer: the core rules (their stable ids, core/src/config/rules.cpp; each issue carries its
 * rule's id) that choosing a method can break, and what the page sets (`to`; undefined: the field
 * is cleared, so the core's default for the new method applies), with `why`, the reason the notice
 * gives. The sources:
 * - framework "ddp" for QLoRA on Megatron (rule peft/qlora-framework: "framework ddp, fsdp2 or
 *   deepspeed (bitsandbytes or torchao NF4 linears; Megatron has none)"); ddp is what both
 *   single-GPU QLoRA setups run (core/data/setups.json: torchtune's 8B_qlora_single_device,
 *   axolotl's llama-3/qlora.yml), and it changes no sharding the user did not ask for (fsdp2 and
 *   deepspeed shard by zero_stage). A multi-GPU QLoRA run sharded with FSDP picks fsdp2 itself.
 * - recompute_granularity "full": the core's own rule for "selective" on a PyTorch model
 *   ("model_implementation ... checkpoints whole layers ("full")") and for "selective_op" with
 *   peft; every setup in core/data/setups.json (LoRA, QLoRA and full) checkpoints every layer.
 * (Megatron's use_distributed_optimizer needs no rule: on another framework it is no field in
 *   effect, so the page does not send it: link-config.js coreConfig.)
 * - params_dtype, expert_params_dtype cleared: the field spec's default is the method's
 *   ("bf16 (ddp: fp32; peft qlora: nf4)", core/src/config/fields.cpp), and the core's rules are
 *   that nf4 goes with qlora and qlora with nf4.
 * - fp8_recipe cleared (its default, "none"): the core's "must be "none" with peft ... (FP8
 *   copies of frozen weights are not modelled)".
 */
export const METHOD_RULES = [
  { rules: ['peft/qlora-framework'], set: 'framework', to: 'ddp', why: 'QLoRA\'s 4-bit layers need a PyTorch framework' },
  { rules: ['recompute_granularity/selective-megatron', 'recompute_granularity/selective-op-peft'], set: 'recompute_granularity', to: 'full', why: 'PyTorch fine-tuning checkpoints whole layers' },
  { rules: ['params_dtype/nf4-needs-qlora', 'params_dtype/qlora-needs-nf4'], set: 'params_dtype', to: undefined, why: 'the weights\' dtype follows the method' },
  { rules: ['expert_params_dtype/nf4-needs-qlora'], set: 'expert_params_dtype', to: undefined, why: 'the weights\' dtype follows the method' },
  { rules: ['fp8_recipe/peft'], set: 'fp8_recipe', to: undefined, why: 'FP8 is not modelled with adapters' },
];

/** The answer to an issue, by its rule's id (never by its message's words). */
const answerTo = (issue) => METHOD_RULES.find((r) => r.rules.includes(issue.rule));

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The fields after choosing `peft` on `fields`, with the conflicts the core names answered.
 * `estimate(fields)` is the page's estimate of a field set (its issues are the core's).
 * @returns {{fields: object, changes: {name: string, from: unknown, to: unknown, why: string}[], result: object}}
 */
export function chooseMethod(fields, peft, estimate) {
  let next = { ...fields };
  if (peft === undefined) delete next.peft;
  else next.peft = peft;
  const changes = [];
  let result = estimate(next);
  // A change may bring the next conflict to light (ddp makes "selective" a PyTorch model's):
  // a few rounds, each answering what the core says now.
  for (let round = 0; round < 4 && !result.ok; round += 1) {
    const answered = [];
    for (const issue of result.issues) {
      const rule = answerTo(issue);
      if (!rule || answered.some((c) => c.name === rule.set) || same(next[rule.set], rule.to)) continue;
      if (changes.some((c) => c.name === rule.set)) continue; // answered once already: the core still objects, leave it to the user
      answered.push({ name: rule.set, from: next[rule.set], to: rule.to, why: rule.why });
    }
    if (!answered.length) break;
    const tried = { ...next };
    for (const c of answered) {
      if (c.to === undefined) delete tried[c.name];
      else tried[c.name] = c.to;
    }
    const after = estimate(tried);
    // Keep a change only when the core no longer objects to what it answered.
    const kept = answered.filter((c) => !(after.issues ?? []).some((i) => answerTo(i)?.set === c.name));
    if (!kept.length) break;
    for (const c of kept) {
      if (c.to === undefined) delete next[c.name];
      else next[c.name] = c.to;
    }
    changes.push(...kept);
    result = kept.length === answered.length ? after : estimate(next);
  }
  return { fields: next, changes, result };
}

/**
 * The method's usual settings (the core's method_settings, engine.methodSettings: LoRA and QLoRA
 * run on PyTorch DDP with every layer checkpointed, each with its reason and source in
 * core/src/config/fields.cpp), applied on the fresh page to the fields the user has not edited
 * and that still hold the opening example's value (or none): the example (link-config.js START)
 * is no setting of the user's. On a link, a setup or an import every field is the user's:
 * nothing. Each change goes into the method's notice, with its Undo. Today's example (a LoRA run
 * on ddp with every layer checkpointed) already holds LoRA's and QLoRA's usual settings, so this
 * changes nothing there; it keeps an example's values from passing for the user's choice.
 * @param {object | null} startFields the fresh page's example fields (null: not the fresh page)
 * @param {object} fields the fields on screen
 * @param {Set<string>} touched the fields the user edited
 * @param {{peft: string, field: string, value: string, why: string}[]} settings engine.methodSettings
 * @param {string | undefined} peft the method chosen
 * @returns {{name: string, from: unknown, to: string, why: string}[]}
 */
export function usualSettings(startFields, fields, touched, settings, peft) {
  if (!startFields || !peft) return [];
  return settings
    .filter((s) => s.peft === peft && !touched.has(s.field) && same(fields[s.field], startFields[s.field])
      && !same(fields[s.field], s.value))
    .map((s) => ({ name: s.field, from: fields[s.field], to: s.value, why: s.why }));
}

const METHOD_NAMES = { none: 'Full fine-tuning', lora: 'LoRA', qlora: 'QLoRA' };

/**
 * What a method change cleared comes back when the run leaves that method. QLoRA clears the
 * weights' dtype (the core: qlora needs nf4), so that its default, NF4, applies; choosing LoRA
 * again left it unset, and an unset dtype on ddp is fp32 (the field's default): the setup's bf16
 * LoRA run read 50.28 GiB instead of 18.73, from a dtype nobody gave. A field a method change
 * cleared, and that is still unset, takes its value before that change again, where the core does
 * not object to it under the method chosen now (under QLoRA again, bf16 stays cleared).
 * @param {Record<string, {value: unknown, by: string}>} cleared per field, its value before a
 *   method change cleared it, and that method (clearedAfter)
 * @param {object} fields the fields on screen
 * @param {string | undefined} peft the method chosen now
 * @param {(fields: object) => object} estimate the page's estimate of a field set
 * @returns {{name: string, from: undefined, to: unknown, why: string}[]}
 */
export function restoredSettings(cleared, fields, peft, estimate) {
  const candidates = Object.entries(cleared).filter(([name]) => fields[name] === undefined);
  if (!candidates.length) return [];
  const tried = { ...fields, ...Object.fromEntries(candidates.map(([name, c]) => [name, c.value])) };
  if (peft === undefined) delete tried.peft;
  else tried.peft = peft;
  const objected = new Set((estimate(tried).issues ?? []).map((i) => i.field));
  return candidates.filter(([name]) => !objected.has(name))
    .map(([name, c]) => ({ name, from: undefined, to: c.value, why: `its value before ${METHOD_NAMES[c.by] ?? c.by}` }));
}

/** The record restoredSettings reads, after a method change's `changes`: a field cleared from a value is kept, one set is not. */
export function clearedAfter(cleared, peft, changes) {
  const next = { ...cleared };
  for (const c of changes) {
    if (c.to === undefined && c.from !== undefined) next[c.name] = { value: c.from, by: peft ?? 'none' };
    else delete next[c.name];
  }
  return next;
}

/** "QLoRA: framework megatron → ddp, recompute_granularity selective → full (...)": the one line. */
export function methodNotice(peft, changes, resolvedBefore = {}, resolvedAfter = {}, label = (name) => name, valueWords = (name, v, text) => text) {
  return changesNotice(METHOD_NAMES[peft ?? 'none'] ?? peft, changes, resolvedBefore, resolvedAfter, label, valueWords);
}

/** The method notice's one line (its sentence, methodNotice, sits behind "Details"): "QLoRA: 2 settings changed." */
export function methodSummary(peft, changes) {
  const n = changes.length;
  return `${METHOD_NAMES[peft ?? 'none'] ?? peft}: ${n} setting${n === 1 ? '' : 's'} changed.`;
}

/** "<title>: set a x → y, b z → w (why; why)." for any list of changes (a method's, a GPU count's). */
export function changesNotice(title, changes, resolvedBefore = {}, resolvedAfter = {}, label = (name) => name, valueWords = (name, v, text) => text) {
  const plain = (v) => (v === undefined || v === null ? 'default' : typeof v === 'boolean' ? (v ? 'on' : 'off') : String(v));
  // `valueWords` (form.valueText): the framework in use's spelling first, where it has one.
  const parts = changes.map((c) => {
    const shown = (v) => (v === undefined || v === null ? plain(v) : valueWords(c.name, v, plain(v)));
    const from = c.from === undefined ? resolvedBefore[c.name] : c.from;
    const to = c.to === undefined ? `${resolvedAfter[c.name] === undefined ? '' : `${shown(resolvedAfter[c.name])} `}(default)` : shown(c.to);
    return `${label(c.name)} ${shown(from)} → ${to}`;
  });
  const whys = [...new Set(changes.map((c) => c.why))];
  return `${title}: set ${parts.join(', ')} (${whys.join('; ')}).`;
}

/** The notice under the title of the section that holds the method (made once; the form builds the section). */
export function methodNoticeBox(doc = document) {
  let box = doc.getElementById('method-notice');
  if (box) return box;
  const section = doc.getElementById('f-peft')?.closest('fieldset.section');
  if (!section) return null;
  box = Object.assign(doc.createElement('div'), { id: 'method-notice', className: 'notice method-notice', hidden: true });
  box.setAttribute('role', 'status');
  (section.querySelector(':scope > .setup-pointer') ?? section.querySelector(':scope > legend')).after(box);
  return box;
}
