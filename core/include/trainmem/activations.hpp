// Per-tensor activation accounting for the trainmem profile: what the forward pass of one
// microbatch saves for backward, tensor by tensor, on one GPU (after tensor, sequence, context
// and expert parallel splitting), under the configured recompute policy and attention kernel.
//
// The pipeline schedule (how many microbatches each stage keeps in flight), the placement of
// layers on stages and the peak over the moments of a step are composed by the trainmem profile
// (trainmem_profile.cpp) from these per-microbatch figures.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem {

// One tensor kept for backward.
struct SavedTensor {
  std::string_view name;    // e.g. "attention.qkv_input", "mlp.fc1_output"
  std::string_view module;  // "attention", "mlp", "moe", "norm", "layer" (a checkpoint's input),
                            // "embedding", "output", "loss", "lora" (an adapter's own)
  double bytes = 0;         // for one microbatch on one GPU
  std::string_view dtype;   // "bf16", "fp16", "fp32", "mask" (1 byte per element), "int64",
                            // "fp8", "mxfp8", ...
  std::string_view source;  // where the rule comes from (paper table, framework code/doc)
};
using SavedTensors = std::vector<SavedTensor>;

// How a layer is treated by the recompute policy.
enum class LayerRecompute : uint8_t {
  policy,        // the configured granularity: none, selective (recompute_modules) or selective_op;
                 // with granularity full it means a layer the method does not recompute (block
                 // method, beyond recompute_num_layers): everything is kept
  checkpointed,  // full recompute: this layer keeps only its input (the checkpoint)
  inside_group,  // full recompute, uniform method: a layer after the first of its group keeps nothing
};

// Bytes one microbatch keeps alive for backward in one transformer layer on one GPU.
// `detail`, when given, has every saved tensor appended (their bytes sum to the result).
// `first_layer`: the model's first decoder layer, whose input (the embedding's output) needs no
// gradient under peft with the PyTorch implementations (model_implementation other than
// megatron-core), so it keeps less; with megatron-core every layer is counted alike.
double layer_activation_bytes(const Config& config, bool moe_layer, LayerRecompute recompute,
                              SavedTensors* detail = nullptr, bool first_layer = false);

// The extra working set while one recomputed layer (full or selective) is re-run in backward:
// the tensors the recomputation materialises before the layer's backward frees them. Full: the
// layer's whole saved set less its checkpointed input (a uniform group of n layers is re-run as
// a whole, so n of these exist at once); selective: the largest single module's set (modules are
// re-run one at a time); selective_op: what the policy did not save; none: 0.
double layer_recompute_working_bytes(const Config& config, bool moe_layer);

// MoE layers under Megatron Core (model_implementation megatron-core; 0 otherwise), one layer, one
// microbatch: the all-to-all dispatcher's transient buffers in the layer's forward beyond what the
// layer saves (permuted tokens, all-to-all output, the experts' output and its sorted-back and
// reduce-scattered copies, the returning all-to-all's output; the largest set alive at once), and
// what the dispatcher object keeps of the layer until its next forward (routing probabilities and
// map; `after_backward`: also the permutation indices, no longer counted as saved).
// QLoRA through transformers with PEFT's or TRL's k-bit upcast: the norms stay fp32, so their
// outputs, the quantised linears' outputs after them and the residual stream are fp32
// (activations.cpp k_src_kbit_fp32_residual); what a quantised linear reads is then fp32.
bool kbit_fp32_activations(const Config& config);
double moe_dispatch_transient_bytes(const Config& config);
double moe_dispatcher_state_bytes(const Config& config, bool after_backward);
// Megatron Core under a recompute checkpoint (full, or selective with the moe module): what the
// dispatcher's kept probabilities hold of the recomputed graph from a checkpoint's backward to the
// layer's next forward, per checkpoint whose layers include an MoE layer: the checkpoint's
// detached input and its gradient (0 otherwise).
double moe_recompute_graph_bytes(const Config& config);
// An MoE layer's forward runs inside a recompute checkpoint: full recompute, or selective with the
// moe module (MoELayer's own checkpoint). The dispatcher's state, its re-run and the graph above
// follow from it.
bool moe_layer_checkpointed(const Config& config);
// The all-gather dispatcher's persistent buffer of gathered tokens (one per GPU; 0 otherwise),
// and its transient gradients in one MoE layer's backward (0 for the all-to-all dispatcher, whose
// backward buffers are not counted, as a dense layer's are not).
double moe_gather_buffer_bytes(const Config& config);
// What one MoE layer's router keeps for the run: with moe_router_enable_expert_bias the fp32 bias
// and token count per expert (8·E bytes); 0 otherwise.
double moe_router_buffer_bytes(const Config& config);
double moe_dispatch_backward_bytes(const Config& config);

// First pipeline stage, per microbatch: embedding output / dropout mask and what the embedding
// lookup keeps (token ids).
double embedding_activation_bytes(const Config& config, SavedTensors* detail = nullptr);

// Last pipeline stage, per microbatch: final norm output, the output layer's input and the
// logits kept for the loss's backward (vocab-parallel cross entropy; fp32 unless fused).
double output_activation_bytes(const Config& config, SavedTensors* detail = nullptr);

// The hidden state one microbatch passes between pipeline stages on one GPU: the residual
// stream [b, s/CP (/TP with sequence parallelism), h] in the activation dtype.
double stage_boundary_bytes(const Config& config);

// The model output (logits) of one microbatch on one GPU as the training framework returns it
// to the loss: in the compute dtype, or fp32 with pipeline_outputs "kept_fp32_merged"
// (torchtitan's Transformer of December 2024 ended in `self.output(h).float()`).
double model_output_bytes(const Config& config);

// Last pipeline stage, transient at the loss: temporaries that exist only while the loss and
// its gradient are computed for one microbatch (e.g. fp32 logits, softmax, grad of logits).
double loss_transient_bytes(const Config& config);
// The loss's forward temporaries beside what it saves, where they outgrow the backward's (the
// shifted fp32 copy of transformers 4.45-4.48's losses, transformers_loss); 0 elsewhere.
double loss_forward_transient_bytes(const Config& config);
// The model's output (its logits) the training loop holds from the loss through the optimizer
// step (model_output_kept); 0 when the loop drops it before backward.
double kept_output_bytes(const Config& config);

// Evaluation between steps (eval_micro_batch_size > 0; transformers' Trainer prediction_step under
// torch.no_grad()), one GPU, the evaluation batch, beyond the model state (activations.cpp
// evaluation_forward_bytes). All 0 when the job does not evaluate.
struct EvaluationForward {
  double layers = 0;    // at the last decoder layer: an upper bound of its forward, the caches
  double loss = 0;      // at the loss: the final hidden state, the logits, the loss's copies, the caches
  double kv_cache = 0;  // every layer's keys and values (eval_kv_cache), in both of the above
  double logits = 0;    // the model's logits (for the output layer's dequantised weight beside them)
  double hidden = 0;    // the final norm's output, held through the output layer and the loss
};
EvaluationForward evaluation_forward_bytes(const Config& config);

// The predictions and labels transformers' Trainer keeps on one GPU for compute_metrics during
// an evaluation (eval_predictions; activations.cpp evaluation_predictions_bytes): `held`, what the
// earlier steps of the last window left while the window's last step runs its forward; `at_add`,
// the most at that step's concatenations (the kept, the new and their concatenation at once).
struct EvaluationPredictions {
  double held = 0, at_add = 0;
};
EvaluationPredictions evaluation_predictions_bytes(const Config& config);

// The loss's and the output layer's backward on the eager Hugging Face and torchtune models
// (F.cross_entropy over the whole logits: not chunked, compiled, fused or tensor parallel), as
// autograd runs them (activations.cpp output_backward_bytes). `modelled` false: none of this is
// known for the config, and every field is 0.
struct OutputBackward {
  bool modelled = false;
  double target = 0;      // the loss's saved target, freed when NllLossBackward0 has run
  double loss_saved = 0;  // every tensor the loss saved (log-probabilities, target)
  // At the output layer's MmBackward0, beside the saved activations less the loss's and the
  // output layer's weight gradient (a gradient, counted with the state): the logits' gradient
  // and the input's.
  double output_layer = 0;
  // At the final RMSNorm's PowBackward0 (0 where not walked), beside the saved activations less
  // the output side's and the gradients of the output layer and the norm (none under peft): the
  // norm's fp32 input (its upcast in 16 bits), still saved by pow, and five fp32 T·h tensors.
  double final_norm = 0;
  // torchtune's chunked output (cross_entropy_chunks > 1, no peft): when the last chunk's weight
  // gradient is added to the others' in TBackward0's input buffer, beside the saved activations
  // less the output side's: the final norm's saved tensors, three V·h and the chunks' input
  // gradients e · T · h. 0: not modelled.
  double chunked_weight_sum = 0;
};
OutputBackward output_backward_bytes(const Config& config);
// Whether torchtune's recipe computes an unchunked loss with the module compile_loss returns:
// only lora_finetune_single_device keeps it; the full fine-tuning recipes and the distributed
// LoRA recipe drop it, so their plain cross entropy runs eager (activations.cpp).
bool torchtune_recipe_uses_compiled_loss(const Config& config);

// The decoder layers' backward on the eager transformers and torchtune Llama layers (dense, or
// transformers' MoE block; full or LoRA; kept or every layer checkpointed; no parallelism;
// SwiGLU, RMSNorm), beside the saved activations and the gradients made so far (activations.cpp
// decoder_backward_bytes). `modelled` false: not known.
struct DecoderBackward {
  // One point of a layer's backward: beyond `incoming` and the layer's saved tensors less
  // `freed`, `extra` bytes of gradients and temporaries, with `made_params` of the layer's
  // parameters' gradients made. extra 0: not walked for this config.
  struct Point {
    double extra = 0, freed = 0, made_params = 0;
  };
  bool modelled = false;
  double incoming = 0;      // the residual stream's gradient, e · T · h, through every layer
  double layer_params = 0;  // one layer's trainable parameters (its gradients, in the gradients' dtype)
  double norm_params = 0;   // the final norm's, made before the last layer's backward
  double token_ids = 0;     // what the embedding keeps for its backward, at EmbeddingBackward0
  // Reentrant checkpointing (checkpoint_reentrant): what the layers' CheckpointFunction nodes hold
  // until the step's graph is freed (their non-tensor arguments, transformers' cos/sin), and, under
  // peft, the embedding output made to need a gradient and that gradient, at the backward's end.
  double graph_held = 0;
  double input_gradient_end = 0;
  Point swiglu;             // the SwiGLU product's MulBackward0 (a dense layer)
  Point softmax;            // eager attention's SoftmaxBackward0 (attention_backend unfused)
  Point expert_first;       // transformers' MoE loop: the first expert's silu · w3 MulBackward0
  Point expert_second;      // the second expert's input gradient summed into the block input's
  Point expert_last;        // the same at the last expert
  Point expert_weighting;   // the last expert's weighting MulBackward0, the loop's first node in backward
  Point qkv;                // q_proj's MmBackward0, the layer's last weight gradient
  Point norm_mlp;           // the post-attention RMSNorm's PowBackward0
  Point norm_attention;     // the input RMSNorm's PowBackward0
  Point recompute_forward;  // a checkpointed layer's recomputation at down_proj or its residual sum
  // bitsandbytes' Linear4bit backward (MatMul4BitBackward: the weight dequantised beside grad_A) of
  // down_proj and of up_proj, in a dense QLoRA layer whose largest NF4 linear is an MLP one.
  Point nf4_down, nf4_up;
  // Every layer checkpointed: the recomputation's up_proj MatMul4Bit forward (its weight dequantised
  // beside the recomputed set so far), which no longer has the largest dequantised weight beside it.
  Point nf4_recompute_up;
  // Full training: gate_proj's MmBackward0, after up_proj's and SiLU's nodes (the MLP's weight
  // gradients all made, its saved tensors but the input freed).
  Point gate_mm;
  Point attention_dropout;  // the attention probabilities' NativeDropoutBackward0 (attention_dropout > 0)
  Point down_lora_dropout;  // down_proj's adapter's NativeDropoutBackward0 (lora_dropout > 0)
  // Whether the points above carry the dequantised weights where MatMul4BitBackward makes them
  // (q_proj's in `qkv`), so the stage's backward NF4 temporary is not added to every point.
  bool nf4_walked = false;
  // QLoRA under the trainer's autocast: bytes per adapter parameter of its compute-dtype cast,
  // which trainmem counts with the model state from the forward to the backward (0: not cast).
  // After the forward the autocast cache is cleared, so a cast lives only while a node that saved
  // it has not run: the made adapters' casts are gone at a point, and so are `unsaved_casts`
  // (adapters whose input needs no gradient keep no cast: lora_A of the first layer's frozen
  // path) and, with every layer checkpointed, every other layer's (each recomputation casts its
  // own layer's adapters again).
  double adapter_cast_bytes = 0, unsaved_casts = 0;
  bool casts_recomputed = false;  // every layer checkpointed: only the current layer's casts exist
  std::array<Point, 16> points() const {
    return {swiglu, softmax, expert_first, expert_second, expert_last, expert_weighting, qkv, norm_mlp,
            norm_attention, recompute_forward, nf4_down, nf4_up, nf4_recompute_up, gate_mm, attention_dropout,
            down_lora_dropout};
  }
};
DecoderBackward decoder_backward_bytes(const Config& config);

// The output layer's LoRA forward (an adapter on lm_head, the whole logits): the bytes beyond the
// saved tensors but the loss's while the adapter's sum is made (activations.cpp). 0: not walked.
double output_lora_forward_bytes(const Config& config);

// The transient of dequantising an NF4 weight of `elements` (bitsandbytes' MatMul4Bit, in forward
// and in backward): the weight in the compute dtype, and the restored fp32 absmax with double
// quantisation (activations.cpp).
double nf4_dequant_bytes(const Config& config, double elements);

// transformers' frames in the last decoder layer's forward, not checkpointed: the embedding output
// LlamaModel.forward holds and the layer's residual sum, where nothing saves them (activations.cpp).
double qlora_forward_frame_bytes(const Config& config);

// The last checkpointed decoder layer's own forward (every layer checkpointed, the eager
// transformers and torchtune Llama layers, ddp): the largest of its walked points (the softmax,
// transformers' o_proj, the MLP's SiLU, product and down_proj) in bytes beyond every layer's
// checkpoint, which are all there while it runs (activations.cpp). 0: not walked.
double checkpointed_layer_forward_bytes(const Config& config);

// FSDP1 (fsdp_version 1, full shard) with frozen decoder units under peft, each checkpointed
// reentrantly around its unit (fsdp1_checkpoint_around_unit): every layer's checkpointed input and
// input gradient are kept until backward ends (trainmem_profile.cpp, kept_inputs_first_layer).
bool fsdp1_kept_inputs(const Config& config);

}  // namespace trainmem
