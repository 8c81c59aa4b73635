// Types of the trainmem WebAssembly module (web/wasm/trainmem.mjs), written by hand because
// Emscripten 3.1.6 cannot generate them. tests/wasm/dts.test.mjs checks this file against the real
// module (bound functions, the keys of real results, and every object of the result schema the core
// declares, core/src/json/result_schema.hpp, key for key), so it cannot drift silently.
//
// The estimator module speaks numbers (core/include/trainmem/slots.hpp: web/js/slots.js encodes a
// config and decodes a result into an EstimateResult); the tools module's functions take and return
// JSON text, which web/js/engine.js parses. Field names are Megatron's (snake_case), bytes are plain
// numbers (doubles; some are not integers), null where JSON has no number (unset, or not finite).

/** Megatron field name -> value. Unset fields are omitted or null; the core validates everything. */
export type ConfigInput = Record<string, number | boolean | string | number[] | string[] | null>;

export interface Issue {
  /** the Megatron field the problem concerns, e.g. "num_layers" */
  field: string;
  /** starts with the field name, e.g. "num_layers: must be divisible by ... got 30" */
  message: string;
  /** the other fields the rule involves, as the core's rule declares them */
  related: string[];
  /** the rule's stable id where the rule is a row of the core's rule table (e.g. "peft/qlora-framework"), else "" */
  rule: string;
}

export interface EstimateError {
  ok: false;
  issues: Issue[];
}

export interface Component {
  name: string;
  /** adapters: the trainmem profile's LoRA adapters (peft) */
  kind: 'dense_and_embedding' | 'routed_experts' | 'adapters' | 'activation';
  memory_bytes: number;
  parameter_count?: number;
  parameter_count_per_gpu?: number;
  bytes_per_parameter?: number;
  optimizer_shard_size?: number;
}

export interface PartBytes {
  dense: number;
  embedding: number;
  expert: number;
  /** the three added up (the class's bytes) */
  total: number;
}

export interface StateBreakdown {
  weights: PartBytes;
  /** trainmem profile: FP8 weight caches and autocast casts (zero in the reference profiles) */
  weight_copies: PartBytes;
  gradients: PartBytes;
  master_weights: PartBytes;
  optimizer_states: PartBytes;
  /** trainmem profile: ZeRO-3/FSDP gathered layers, DDP buckets (zero in the reference profiles) */
  buffers: PartBytes;
  /** trainmem profile, peft: the frozen base weights (NF4 with its block scales for qlora) */
  frozen_weights: PartBytes;
  /** trainmem profile, peft: the LoRA adapters' weights, gradients, master weights, optimizer states */
  adapter_weights: PartBytes;
  adapter_gradients: PartBytes;
  adapter_master_weights: PartBytes;
  adapter_optimizer_states: PartBytes;
}

/** trainmem profile: the moments of a step; the peak is the largest */
export interface Moments {
  forward: number;
  backward: number;
  optimizer_step: number;
  /** the largest moment, and what it holds besides model state (the core computes the split) */
  peak: 'forward' | 'backward' | 'optimizer_step';
  peak_activation_bytes: number;
  peak_temporary_bytes: number;
  /** the job's moments outside the step (0 where not modelled): from_pretrained with bitsandbytes 4-bit, a full state dict under fsdp2, an evaluation step (eval_micro_batch_size) */
  loading: number;
  checkpoint_save: number;
  evaluation: number;
  /** the largest of the six moments: what max_memory_allocated over the job shows (allocated_bytes) */
  job_peak: 'forward' | 'backward' | 'optimizer_step' | 'loading' | 'checkpoint_save' | 'evaluation';
}

/** trainmem profile: CPU memory per node, by what the run moved there (bytes) */
export interface CpuBytes {
  /** offloaded weights (ZeRO-3 offload_param, FSDP2 CPUOffloadPolicy), frozen ones included */
  weights: number;
  gradients: number;
  master_weights: number;
  optimizer_states: number;
  /** activation_offload: saved activations moved to CPU memory */
  activations: number;
  /** paged_optimizer: the part of the paged states the GPU does not hold */
  paged_optimizer_states: number;
}

/** trainmem profile, framework deepspeed with ZeRO-2/3: DeepSpeed's own estimator's figures */
export interface DeepSpeedEstimator {
  gpu_bytes: number;
  cpu_bytes: number;
}

/**
 * trainmem profile: how sure the figure is. The validation group closest to the run (framework,
 * full-parameter or PEFT training, recompute class) and that group's |error| against published
 * measurements, generated from `npm run validate` into the core.
 */
export interface Confidence {
  /** the group whose figures these are, e.g. "megatron, full-parameter training, no recompute" */
  group: string;
  /** the run's own group; differs from group when that has too few points (see match) */
  run_group: string;
  /** what group shares with the run: everything, or what was kept when falling back to a wider group */
  match: 'exact' | 'framework_and_training' | 'training' | 'framework' | 'all';
  /** validation points in the group */
  points: number;
  /** median |estimate - measured| / measured over the group */
  median_abs_error: number;
  /** 90th percentile of it (nearest rank): at least 90 % of the points landed within ±this */
  p90_abs_error: number;
  /** median (estimate - measured) / measured over the group: below 0, runs like this were under-read */
  median_signed_error: number;
  /** the median signed error is below -3 %: the group's runs were more often under-estimated; allow for more */
  leans_low: boolean;
  /** where the figures come from: "npm run validate" */
  source: string;
}

export interface ParamCounts {
  total: number;
  dense_transformer: number;
  embedding: number;
  routed_experts: number;
  active: number;
  per_gpu: number;
  /** of per_gpu, what the GPU stores at rest: per_gpu / shard count under ZeRO-3 and FSDP2 */
  stored_per_gpu: number;
  dense_per_gpu: number;
  embedding_per_gpu: number;
  routed_per_gpu: number;
}

export interface LayerCounts {
  total: number;
  dense: number;
  moe: number;
}

export interface Stage {
  stage: number;
  num_layers: number;
  dense_params: number;
  routed_params: number;
  weight_and_optimizer_bytes: number;
  /** known for the first stage only in the reference profiles */
  activation_bytes: number | null;
  /** trainmem profile */
  microbatches_in_flight?: number;
  moments?: Moments;
  /** trainmem profile: the stage's peak on one GPU */
  total_bytes?: number;
  /** trainmem profile: what torch.cuda.max_memory_allocated / _reserved and nvidia-smi show */
  allocated_bytes?: number;
  reserved_bytes?: number;
  device_bytes?: number;
  /** trainmem profile: what reserved and device add above allocated on this stage */
  overhead_bytes?: StageOverheads;
}

/** trainmem profile: what reserved and device add above allocated on one stage */
export interface StageOverheads {
  reserved: number;
  device: number;
}

/** trainmem profile: what lies between allocated, reserved and device bytes */
export interface Overheads {
  allocator_bytes: number;
  cuda_context_bytes: number;
  /** the sum of nccl_groups' bytes */
  nccl_bytes: number;
  nccl_communicators: number;
  /** library workspaces: inside allocated (the peak's temporaries), not a line of their own */
  workspace_bytes: number;
  /** each NCCL communicator the run uses, with this GPU's buffers for it */
  nccl_groups: NcclGroup[];
  /** the lines to draw between the figures, in order: allocated + the lines adding to
   * "reserved" = reserved_bytes; reserved + the lines adding to "device" = device_bytes */
  lines: OverheadLine[];
}

/** A change that makes the run fit: its fields written over the config give the figure. */
export interface Suggestion {
  fields: Record<string, number | boolean | string | null>;
  /** trainmem profile: the device bytes with the change */
  device_bytes?: number;
  /** reference profiles: the total with the change */
  total_bytes?: number;
  what: string;
  /** 0 recompute, 1 micro batch, 2 sharding stage, 3 TP/PP/CP, 4 offload */
  rank: number;
}

export interface OverheadLine {
  /** caching_allocator, cuda_context, nccl or paged_optimizer (a view shows an unknown key by its name) */
  key: string;
  bytes: number;
  adds_to: 'reserved' | 'device';
}

export interface NcclGroup {
  /** which process group (world, tensor, context, pipeline, data, data-context, model, embedding, amax, expert, expert-data, expert-tensor) */
  name: string;
  gpus: number;
  gpus_on_node: number;
  bytes: number;
}

/** Whether a figure fits its GPU (core estimate.hpp fit_verdict) */
export interface FitVerdict {
  /** tight: within the capacity but in the headroom band, or its validation spread crosses the capacity */
  fit: 'fits' | 'tight' | 'over';
  reason: 'none' | 'headroom' | 'spread';
  figure_bytes: number;
  capacity_bytes: number;
  /** share of the capacity kept free (the planner's default) */
  headroom: number;
  /** the run's validation group's 90th-percentile |error| (0 when unknown) */
  spread: number;
  /** capacity · (1 − headroom): "fits" is at most this */
  limit_bytes: number;
  /** figure · (1 + spread) */
  upper_bytes: number;
}

/** The run at one GPU capacity (core estimate.hpp CapacityFit): each figure's verdict there */
export interface CapacityFit {
  capacity_bytes: number;
  verdicts: Record<string, FitVerdict>;
}

export interface TraceEntry {
  name: string;
  value: number | null;
  formula: string;
}

export interface EstimateResult {
  ok: true;
  profile: 'megatron-bridge' | 'megatron-lm' | 'trainmem';
  weight_and_optimizer_bytes: number;
  /** null when the profile does not compute activations */
  activation_bytes: number | null;
  total_bytes: number;
  components: Component[];
  state: StateBreakdown;
  /** CPU memory per node for offloaded state (0 without offload) */
  cpu_bytes: number;
  /** trainmem profile: cpu_bytes by what was moved there (they add up to cpu_bytes) */
  cpu?: CpuBytes;
  /** trainmem profile: torch.cuda.max_memory_allocated (= total_bytes), _reserved, nvidia-smi */
  allocated_bytes?: number;
  reserved_bytes?: number;
  device_bytes?: number;
  overheads?: Overheads;
  /** trainmem profile: the stage whose peak is the largest */
  most_loaded_stage?: number;
  moments?: Moments;
  /** trainmem profile with gpu_memory_bytes: fewest GPUs that could hold the run */
  minimum_devices?: number | null;
  deepspeed_estimator?: DeepSpeedEstimator;
  /** trainmem profile: the closest validation group and its error (null: the core has none) */
  confidence?: Confidence | null;
  params: ParamCounts;
  layers: LayerCounts;
  /** every pipeline stage, first to last: trainmem profile always, megatron-bridge with pipeline_model_parallel_size > 1, else empty */
  stages: Stage[];
  assumptions: string[];
  /**
   * With gpu_memory_bytes: each figure's verdict against it (core fit_verdict), keyed as the
   * figures are: allocated, reserved, device (trainmem) or total (reference profiles)
   */
  verdicts?: Record<string, FitVerdict>;
  /** viewSlots with capacities to compare: the run at each (core fits_at_capacities), keyed as verdicts */
  capacity_fits?: CapacityFit[];
  /** What to change when the run is above the headroom line of gpu_memory_bytes: up to five single changes, least disruptive first */
  suggestions: Suggestion[];
  /** the training log's line: "Theoretical memory footprints: weight and optimizer=… MB, …" */
  report: string | null;
  summary: string;
  /** every field, resolved (unset fields filled the way Megatron Core fills them) */
  config: ConfigInput;
  /** verbose only: every intermediate quantity with its formula */
  trace?: TraceEntry[];
}

export interface FieldSpec {
  name: string;
  type: 'integer' | 'number' | 'boolean' | 'choice' | 'choice_list' | 'integer_or_list' | 'integer_list';
  group: 'profile' | 'model' | 'moe' | 'mla' | 'training' | 'parallelism' | 'finetuning';
  required: boolean;
  min?: number;
  max?: number;
  choices?: string[];
  unit: string;
  /** what an unset field resolves to, as text */
  default: string;
  description: string;
  /** read only by the trainmem profile; the reference profiles reject it */
  trainmem_only?: boolean;
  /** the share link's short key (append-only; a link may also use the name) */
  link_key: string;
  /** what a form shows (the name beside it) */
  label: string;
  /** choice fields: the form's words for each choice, in the choices' order (absent: the names) */
  choice_labels?: string[];
  /** where the page's form shows it (absent: the page sets it itself) */
  form?: FormPlace;
}

/** A field's place in the page's form (web/js/layout.js titles the sections and orders them). */
export interface FormPlace {
  section: 'run' | 'model' | 'parallelism' | 'training' | 'framework' | 'optimizer' | 'activations' | 'finetuning' | 'runtime';
  /** under the section's "More" disclosure */
  more: boolean;
  /** its place in the section: smaller first, unique within the section */
  order: number;
}

export interface Preset {
  id: string;
  name: string;
  family: string;
  source: string;
  published_params: Record<string, unknown>;
  config: ConfigInput;
  notes?: string;
  extra?: Record<string, unknown>;
  param_check?: Record<string, unknown>;
}

export interface Gpu {
  id: string;
  name: string;
  /** total device memory in bytes */
  memory_bytes: number;
  marketing_capacity?: string;
  reported?: Record<string, unknown>;
  memory_note?: string;
  source?: string;
}

/** Where a setup comes from: a file in a public repository at a commit. */
export interface SetupSource {
  repo: string;
  path: string;
  commit: string;
  url: string;
}

/**
 * A fine-tuning setup (core/data/setups.json): a complete run the page and `trainmem setups` start
 * from. `config` is what `trainmem import` makes of the cited file (`import`), or the validation
 * table's mapping of the run (`validation_point`).
 */
export interface Setup {
  id: string;
  /** ids it had before, which a `#su=` link and `trainmem setups ID` still take */
  aliases?: string[];
  /** "Llama 3.1 8B QLoRA · torchtune · 1× RTX 4090" */
  name: string;
  /** "torchtune", "axolotl", "HF PEFT + DeepSpeed" */
  framework: string;
  /** "LoRA", "QLoRA", "full" */
  method: string;
  /** the model preset whose shape the config has (Preset.id) */
  preset: string;
  /** the GPU the run is on (Gpu.id) */
  gpu: string;
  /** how many GPUs (the config's world size) */
  gpus: number;
  summary: string;
  source: SetupSource;
  /** where the settings given beside the file (overrides, GPU count) come from */
  settings_source?: string;
  /** the importer's call that makes `config`: kind, fixture file, GPUs, overrides */
  import?: { kind: string; file: string; gpus?: number; overrides?: string[]; version?: string };
  /** an imported setup: the file's own key for each field it set from one key (the import's ImportResult keys) */
  keys?: Record<string, string>;
  /** the id of the run in tests/validation/finetune-points.json (a published measurement) */
  validation_point?: string;
  notes?: string;
  config: ConfigInput;
}

/** An import that could not run: its issues, and the Hub repository it asks a config.json for when the source names a model that is no preset (its issue's rule is "import/model-not-a-preset"). */
export interface ImportError extends EstimateError {
  model_asked?: string;
}

/** importHfConfig / importMegatronArgs on success (on failure: ImportError) */
export interface ImportResult {
  ok: true;
  /** the import merged over the base config (core merge_import) */
  config: ConfigInput;
  /** only the fields the source determines */
  input: ConfigInput;
  /** "num_attention_heads ← num_attention_heads = 64" */
  read: string[];
  /** field -> the source's own key (or flag) it was read from, for fields read from one key (core ImportResult::keys) */
  keys: Record<string, string>;
  /** defaults and conventions applied, e.g. "kv_channels ← hidden_size / num_attention_heads = 128 (no head_dim)" */
  assumed: string[];
  /** keys that matter for memory but have no field, with the reason */
  ignored: string[];
  /**
   * what `config` still lacks to estimate (core resolve()'s problems), each on its field, with the
   * source's reason where it left the field open; empty when `config` estimates
   */
  unresolved: Array<{ field: string; message: string }>;
  /** the source describes the whole model: the base's other model fields were cleared */
  whole_model: boolean;
}

/** exportMegatronArgs on success */
export interface MegatronArgsExport {
  ok: true;
  /** one line of Megatron-LM arguments */
  args: string;
  /** what the arguments cannot carry (e.g. how many GPUs to launch on) */
  notes: string[];
}

/** exportConfigJson (every resolved field) and configInputJson (the set fields) on success */
export interface ConfigExport {
  ok: true;
  config: ConfigInput;
}

/** One layout that fits (planner), best first by rank */
export interface PlanLayout {
  rank: number;
  /** TP·PP·CP·EP: GPUs one model replica spans */
  footprint: number;
  data_parallel_size: number;
  num_microbatches: number;
  /** the figure that was fitted (PlanResult.metric) */
  metric_bytes: number;
  allocated_bytes: number;
  /** 0 in the reference profiles */
  reserved_bytes: number;
  device_bytes: number;
  weight_and_optimizer_bytes: number;
  activation_bytes: number;
  headroom_bytes: number;
  /** headroom_bytes / gpu_memory_bytes */
  headroom: number;
  most_loaded_stage: number;
  /** the fields the layout sets over the base config (null: left unset) */
  fields: ConfigInput;
}

export interface PlanStats {
  layouts: number;
  candidates: number;
  invalid: number;
  estimates: number;
  state_estimates: number;
  pruned_by_state: number;
  pruned_by_batch: number;
  pruned_by_rank: number;
  /** candidates that paid the simulated caching allocator (allocator_fragmentation unset) */
  simulated: number;
  /** candidates that fit by the 5 % factor's figure (a lower bound) and were never simulated: not counted in n_fitting */
  not_simulated: number;
}

/** plan() on success (core/include/trainmem/planner.hpp; keys in README.md) */
export interface PlanResult {
  ok: true;
  profile: 'megatron-bridge' | 'megatron-lm' | 'trainmem';
  metric: 'allocated' | 'reserved' | 'device';
  gpus: number;
  gpus_per_node: number;
  gpu_memory_bytes: number;
  headroom: number;
  /** gpu_memory_bytes × (1 − headroom) */
  limit_bytes: number;
  search: string[];
  /** config fields held at the config's values (option keep) */
  keep: string[];
  allow_uneven_pipeline: boolean;
  /** false: stopped at max_evaluations (see stopped) */
  complete: boolean;
  stopped: string | null;
  solve: string;
  n_fitting: number;
  /** n_fitting counts every fitting layout (no bound cut the search) */
  counted_all: boolean;
  layouts: PlanLayout[];
  stats: PlanStats;
  /** with options.solve */
  solution?: Record<string, unknown>;
}

export interface TrainmemModule {
  /** the package version, e.g. "0.1.0" */
  version(): string;
  /** How many fields the core's table has (field_specs().size()): the page checks its data's fieldCount against it. */
  fieldCount(): number;
  /**
   * The numeric fast path (core slots.hpp; web/js/slots.js encodes and decodes): a view of the
   * input buffer, resized to `n` numbers (the fields' slots in field-table order, the config's
   * order of keys, the list channel: each list field's length and entries); ask for it again after any call, memory may have grown.
   */
  slotInput(n: number): Float64Array;
  /**
   * Estimates from the input: `nSlots` fields' slots, then `nOrder` numbers (the config's order
   * of keys), then the list channel; `others` are the values no slot carries, as
   * [name, kind, value]; with `verbose` the text ends with the trace. Returns how many result
   * numbers there are.
   */
  estimateSlots(nSlots: number, nOrder: number, others: Array<[string, string, unknown]>, verbose: boolean): number;
  /** The same input as estimateSlots: which fields mean something (core fields_in_effect), one 0/1 per field in resultNumbers; returns the count. */
  fieldsInEffectSlots(nSlots: number, nOrder: number, others: Array<[string, string, unknown]>): number;
  /**
   * What a view shows, in one pass (core slots.hpp view_slots): one 0/1 per field (in effect),
   * then the result of the config without the fields not in effect, with the run at each of
   * `capacities` (bytes); returns the count of result numbers.
   */
  /** The input checked without an estimate (core slots.hpp check_slots); returns the count of numbers. */
  checkSlots(nSlots: number, nOrder: number, others: Array<[string, string, unknown]>): number;
  /** Estimator passes run so far (core estimator_passes): the benchmark's count. */
  estimatorPasses(): number;
  viewSlots(nSlots: number, nOrder: number, others: Array<[string, string, unknown]>, capacities: number[], verbose: boolean): number;
  /** A view of the result's numbers (1 then the result, or 0 when resultText lists issues). */
  resultNumbers(): Float64Array;
  /** The result's text lines in the result schema's order (names, the training log's line, the summary, ...), or "field\tmessage\trelated\trule" per issue; escaped. */
  resultText(): string;
}

/**
 * web/wasm/trainmem-data.json: what the page needs from the core before its first estimate, made
 * at build time from the tools module by web/scripts/engine-data.mjs (web/js/engine.js
 * engineDataOf), fetched beside the estimator module.
 */
export interface EngineData {
  version: string;
  fieldCount: number;
  fieldSpecsText: string;
  methodSettingsText: string;
  slotTables: string;
  resultSchemaText: string;
  presets: unknown[];
  gpus: unknown[];
  setups: unknown[];
}

/**
 * web/wasm/trainmem-tools.mjs (types: trainmem-tools.d.ts): the estimator plus the importers,
 * exporters and the planner, which the page loads on first use.
 */
export interface TrainmemToolsModule extends TrainmemModule {
  // What the page reads once before its first estimate: web/scripts/engine-data.mjs writes these
  // into web/wasm/trainmem-data.json (EngineData) at build time; the estimator module has none.
  /** FieldSpec[] as text, one field per line (core slots.hpp field_specs_text; web/js/slots.js parseFieldSpecs) */
  fieldSpecsText(): string;
  /** What each fine-tuning method usually runs with: one line each, peft TAB field TAB value TAB why (escaped). */
  methodSettingsText(): string;
  /** JSON { schema: 1, presets: Preset[] } */
  presets(): string;
  /** JSON { schema: 1, gpus: Gpu[] } */
  gpus(): string;
  /** JSON { schema: 1, setups: Setup[] } (core/data/setups.json) */
  setups(): string;
  /** Once: "<table>\t<entry>" lines, the names the result's indices name (slots.hpp slot_tables). */
  slotTables(): string;
  /** Once: the result schema, one "depth\tkind\tkey\ta\tb" line per node (slots.hpp result_schema_text), which web/js/slots.js decodes by. */
  resultSchemaText(): string;
  /** JSON config -> JSON EstimateResult | EstimateError, as the CLI writes it. Never throws for bad input. */
  estimate(configJson: string, verbose: boolean): string;
  /** JSON FieldSpec[] */
  fieldSpecs(): string;
  /** (config.json text, base config JSON) -> JSON ImportResult | ImportError */
  importHfConfig(configJson: string, baseJson: string): string;
  /** (Megatron-LM command line, base config JSON) -> JSON ImportResult | ImportError */
  importMegatronArgs(commandLine: string, baseJson: string): string;
  /**
   * (kind "torchtune" | "torchtitan" | "deepspeed" | "axolotl" | "accelerate" | "megatron-args"
   * (Megatron-LM's test config, model_config.yaml), the config file as a JSON tree,
   * options JSON {gpus?, overrides?, version?, model?, preset?, hf_args?, deepspeed?, launch?}
   * (launch: an accelerate or DeepSpeed config's launch command as text), base config
   * JSON) -> JSON ImportResult | ImportError
   */
  importFramework(kind: string, treeJson: string, optionsJson: string, baseJson: string): string;
  /** a config tree (JSON) -> "torchtune" | "torchtitan" | "deepspeed" | "axolotl" | "megatron-args" | "hf" | "" */
  detectFramework(treeJson: string): string;
  /** config JSON -> JSON MegatronArgsExport | EstimateError */
  exportMegatronArgs(configJson: string): string;
  /** config JSON -> JSON ConfigExport (every field resolved) | EstimateError */
  exportConfigJson(configJson: string): string;
  /** config JSON -> JSON ConfigExport (the set fields, in the field table's order) | EstimateError */
  configInputJson(configJson: string): string;
  /** JSON string[]: the model types importHfConfig understands */
  hfModelTypes(): string;
  /** (config JSON, options JSON {gpus, gpu_memory_bytes, headroom, max_results, solve, ...}) -> JSON PlanResult | EstimateError */
  plan(configJson: string, optionsJson: string): string;
}

/** Emscripten's MODULARIZE factory. In Node pass { wasmBinary } (fetch cannot read file paths). */
declare function createTrainmem(overrides?: { wasmBinary?: ArrayBuffer | Uint8Array }): Promise<TrainmemModule>;
export default createTrainmem;
