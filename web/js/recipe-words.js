// torchtune's recipes in the page's words (issue 32): how it names trainmem's framework values,
// and the framework a torchtune run's GPU count takes. A module of its own, without the framework
// key tables, so the embed view (share.js methodText) takes the words and not the tables.

/**
 * How a framework names trainmem's `framework` choices when it has no key for them but picks one
 * by what it runs. torchtune is the one: a run is one of its recipes, and the recipe decides how
 * the model is spread, so the importer decides `framework` from the GPU count (torchtune.cpp: one
 * GPU, ddp, "a plain PyTorch module (single-device recipe)"; more, fsdp2, "the distributed recipes
 * shard with FSDP2"). This is the one hand-written table of words here (no file of the framework
 * spells the value, so the generated table cannot have it), each from the recipes' source,
 * pytorch/torchtune @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1:
 * - ddp, "single device": recipes/{lora,full}_finetune_single_device.py, the model on one device,
 *   no wrapper (DP 1);
 * - fsdp2, "distributed": recipes/{lora,full}_finetune_distributed.py, training.shard_model, which applies
 *   fully_shard (torchtune/training/_distributed.py): FSDP2.
 * A value the framework does not run (deepspeed under torchtune; ddp on more than one GPU, for
 * which torchtune has no recipe: `oneGpu`) has no words.
 */
export const RECIPE_WORDS = Object.freeze({
  torchtune: Object.freeze({ ddp: { text: 'single device', oneGpu: true }, fsdp2: { text: 'distributed' } }),
});

/**
 * The core's rule that torchtune runs more than one GPU with its distributed recipes (rules.cpp
 * framework/torchtune-distributed): torchtune has no DDP recipe; its *_single_device recipes hold
 * one device, and `tune run` refuses them a distributed launch ("Recipe ... does not support
 * distributed training", torchtune/_cli/run.py @ bd2a0fc7c); its *_distributed recipes shard the
 * model with FSDP2 (training.shard_model → fully_shard).
 */
export const TORCHTUNE_DISTRIBUTED_RULE = 'framework/torchtune-distributed';

/**
 * The framework a torchtune run's GPU count takes, as the GPU count and DP follow each other
 * (main.js FOLLOWS): the core says when ddp meets more than one GPU (its rule's issue), and the
 * framework follows to fsdp2, torchtune's distributed recipe; back on one GPU a framework that
 * followed the count goes back to where it was (`followed`), the single-device recipe. A
 * framework the user or a setup chose on one GPU stays (torchtune's distributed recipes run on one
 * GPU too). Nothing here works out a GPU count: the core's result says it.
 * @param {{ok: boolean, issues?: {rule?: string}[], config?: object}} result the core's result for the fields on screen
 * @param {{from: string} | null} followed what the framework was before it last followed the count
 * @returns {{framework: string} | null} the framework to take, or null to keep it
 */
export function recipeFramework(result, followed) {
  if (!result.ok) return result.issues?.some((i) => i.rule === TORCHTUNE_DISTRIBUTED_RULE) ? { framework: 'fsdp2' } : null;
  const c = result.config ?? {};
  if (followed && c.model_implementation === 'torchtune' && c.framework === 'fsdp2' && c.world_size === 1) {
    return { framework: followed.from };
  }
  return null;
}

/**
 * The one line that says why the framework followed the GPU count, in torchtune's words: the
 * select's new words (RECIPE_WORDS) first, then its recipe's name (lora_finetune_* for LoRA and
 * QLoRA, full_finetune_* otherwise). One line under the framework's select at 1280 px (87
 * characters at most: 16 GPUs and a full fine-tune's recipe).
 * @param {object} config the core's resolved config after the change
 */
export function recipeNotice(config) {
  const recipe = config.peft === 'lora' || config.peft === 'qlora' ? 'lora_finetune' : 'full_finetune';
  const words = RECIPE_WORDS.torchtune;
  if (config.framework === 'fsdp2') {
    return `Framework → ${words.fsdp2.text}: torchtune runs ${config.world_size} GPUs with ${recipe}_distributed (FSDP2).`;
  }
  return `Framework → ${words.ddp.text}: torchtune runs one GPU with ${recipe}_single_device.`;
}

/**
 * The planner's base for a torchtune run on `gpus` GPUs (or the fewest GPUs, `solve` min-gpus):
 * its layouts for more than one GPU are torchtune's distributed recipe's, so a single-device
 * framework (ddp) becomes fsdp2 there, and the layouts it finds carry the framework
 * (`layoutFields`). torchtune does not pipeline: its ParallelDims are dp_replicate, dp_shard, tp
 * and cp (torchtune/training/_distributed.py @ bd2a0fc7c), so its pipeline stays at 1 (`keep`).
 * Any other run is searched as it is.
 * @param {object} config the page's config (fields in effect)
 * @param {object | null} resolved the core's resolved config of it
 * @param {number} gpus
 * @param {string} solve the planner's question
 * @returns {{config: object, layoutFields: object, keep: string[]}}
 */
export function plannerBase(config, resolved, gpus, solve) {
  const torchtune = (resolved?.model_implementation ?? config.model_implementation) === 'torchtune';
  if (!torchtune) return { config, layoutFields: {}, keep: [] };
  const keep = ['pipeline_model_parallel_size', 'virtual_pipeline_model_parallel_size'];
  const singleDevice = (config.framework ?? resolved?.framework) === 'ddp';
  if (!singleDevice || (gpus <= 1 && solve !== 'min-gpus')) return { config, layoutFields: {}, keep };
  return { config: { ...config, framework: 'fsdp2' }, layoutFields: { framework: 'fsdp2' }, keep };
}
