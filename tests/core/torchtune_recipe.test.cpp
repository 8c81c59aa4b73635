// torchtune's recipes as they run under compile=True (issue 29): which part of the loss is
// compiled, and what that leaves of the output layer's backward. Sources: pytorch/torchtune
// @ 1814feb17a9038e1a8053ce93111bd26774a8db6 (PR #2003, the README's 'Optimization flags' table):
// torchtune/training/_compile.py (compile_model, compile_loss) and recipes/*.py.
#include <string>

#include "support.hpp"
#include "trainmem/activations.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// The one-layer fp32 Llama of support.hpp (tiny_llama) as torchtune's model, its AdamW foreach.
std::string tiny_torchtune(const std::string& more) {
  return tiny_llama("torchtune", R"("optimizer_implementation": "foreach")" + (more.empty() ? "" : ", " + more));
}

}  // namespace

TEST_CASE("compile=True leaves torchtune's chunked output layer eager: its backward walk runs as in eager mode",
          "[torchtune_recipe][moments][loss]") {
  const Config eager = config_from(tiny_torchtune(R"("cross_entropy_chunks": 2)"));
  const Config compiled = config_from(tiny_torchtune(R"("cross_entropy_chunks": 2, "torch_compile": true)"));
  // The walk by hand (2 chunks of 4 tokens, b = 1, e = 4, V = 512, h = 64), the same with the
  // loss compiled, since the compiled loss nodes have run and freed what they saved before the
  // first MmBackward0: both chunks' logits' gradients 4·4·512 = 8,192 each; chunk 2's
  // MmBackward0 (input gradient 4·4·64 = 1,024, weight gradient 4·512·64 = 131,072), chunk 1's
  // (2·131,072 + 8,192 + 2·1,024 + the whole input 4·8·64 = 2,048: 274,432), then the out-of-place
  // add of the two weight gradients, 3·131,072 + 2·1,024 = 395,264, the largest; plus the eager
  // final norm's saved fp32 input 2,048, rsqrt 4·8 = 32 and normalised output 2,048: 399,392 B.
  CHECK(output_backward_bytes(eager).chunked_weight_sum == 399392);
  CHECK(output_backward_bytes(compiled).chunked_weight_sum == 399392);
  // After the chunks the final RMSNorm's backward runs as after one output layer: the input pow
  // saved, 4·T·h = 2,048, and five 4·T·h gradients (x's from x · rsqrt, mean's, and pow_backward's
  // self.pow(1), its product by 2 and by grad), 5 · 2,048: 12,288 B, every chunk's tensors gone.
  CHECK(output_backward_bytes(eager).final_norm == 12288);
  // At that moment: the weights and AdamW's two states (no gradient yet: 106,688 parameters ·
  // 4 B · 3 = 1,280,256 B), the decoder's saved tensors (the compiled layer's), and the walk.
  const Estimate est = estimate_training_memory(compiled, compiled.num_microbatches);
  CHECK(est.moments.forward == 1280256 + 399392 + est.activation_bytes - output_activation_bytes(compiled));
}

namespace {
bool keeps_log_probabilities(const Config& c) {
  SavedTensors saved;
  output_activation_bytes(c, &saved);
  for (const SavedTensor& t : saved)
    if (t.name == "loss.log_softmax") return true;
  return false;
}
}  // namespace

TEST_CASE("compile=True: torchtune's full fine-tuning and distributed recipes drop compile_loss's module, so a plain loss runs eager",
          "[torchtune_recipe][loss]") {
  // training.compile_loss returns torch.compile(loss) for torch.nn.CrossEntropyLoss;
  // lora_finetune_single_device assigns it, full_finetune_single_device, full_finetune_distributed
  // and lora_finetune_distributed do not (recipes/*.py @ 1814feb17 and dc0441a09).
  const std::string lora = R"("peft": "lora", "lora_rank": 2, "lora_target_modules": ["q_proj", "v_proj"])";
  const Config full_single = config_from(tiny_torchtune(R"("torch_compile": true)"));
  const Config lora_single = config_from(tiny_torchtune(R"("torch_compile": true, )" + lora));
  const Config lora_fsdp2 = config_from(tiny_torchtune(R"("torch_compile": true, "framework": "fsdp2", )" + lora));
  const Config chunked = config_from(tiny_torchtune(R"("torch_compile": true, "cross_entropy_chunks": 2)"));
  const Config eager = config_from(tiny_torchtune(""));
  CHECK_FALSE(torchtune_recipe_uses_compiled_loss(full_single));
  CHECK_FALSE(torchtune_recipe_uses_compiled_loss(lora_fsdp2));
  CHECK(torchtune_recipe_uses_compiled_loss(lora_single));
  CHECK(torchtune_recipe_uses_compiled_loss(chunked));  // compiled in place, whatever the recipe does
  // Eager, F.cross_entropy keeps log_softmax's fp32 output, 4 · 8 tokens · 512 = 16,384 B; the
  // compiled loss keeps its input logits and a log-sum-exp instead.
  CHECK(keeps_log_probabilities(eager));
  CHECK(keeps_log_probabilities(full_single));
  CHECK(keeps_log_probabilities(lora_fsdp2));
  CHECK_FALSE(keeps_log_probabilities(lora_single));
  // So the full fine-tuning recipe's output side under compile is the eager one, byte for byte
  // (the decoder layer alone is compiled), and its output-layer backward is walked as in eager mode.
  CHECK(output_activation_bytes(full_single) == output_activation_bytes(eager));
  CHECK(output_backward_bytes(full_single).modelled);
  CHECK(output_backward_bytes(full_single).output_layer == output_backward_bytes(eager).output_layer);
}

TEST_CASE("FSDP2: the chunked output layer's gradient sum comes before any unit's unsharded gradient and reduce-scatter copy",
          "[torchtune_recipe][moments][fsdp2]") {
  // The tiny torchtune model on FSDP2 over 2 GPUs, the embedding and output layer units of their
  // own (custom_sharded_layers), 2 loss chunks, compiled. fsdp2_buffers counts a unit's unsharded
  // gradient and its reduce-scatter copy for the largest unit, fp32: a decoder layer,
  // h(q + 2kv) + qh + 3hf + 2h = 64·192 + 64·64 + 3·64·128 + 2·64 = 41,088 parameters (the output
  // layer, 512·64 = 32,768, is smaller), 2 · 4 B each: 328,704 B. At the walk's largest point (the
  // first add of the two chunks' weight gradients, 399,392 B with the final norm's saved tensors,
  // as in the single-GPU case: the tokens per GPU are the same) they do not exist yet.
  const Config c = config_from(tiny_torchtune(R"("framework": "fsdp2", "data_parallel_size": 2,
      "global_batch_size": 2, "fsdp_embedding_units": true, "cross_entropy_chunks": 2,
      "torch_compile": true)"));
  // The state then, per GPU: half of the 106,688 parameters' fp32 weights and AdamW's two states,
  // 53,344 · 12 = 640,128 B (the gradients are made in backward), and of the buffers the gathered
  // pair, a layer and the largest unit, 2 · 4 · 41,088 = 328,704 B (the reduce pair, 328,704 B
  // more, not yet): 968,832 B, beside the decoder's saved tensors and the walk.
  const Estimate est = estimate_training_memory(c, c.num_microbatches);
  CHECK(est.moments.forward == 968832 + est.activation_bytes - output_activation_bytes(c) + 399392);
}

TEST_CASE("torchtune on more than one GPU is a distributed recipe (FSDP2), never ddp", "[torchtune_recipe][rules]") {
  // pytorch/torchtune @ bd2a0fc7c: the *_single_device recipes run one device and `tune run`
  // refuses them a torchrun launch (_cli/run.py, supports_distributed=False); the *_distributed
  // recipes shard with training.shard_model (fully_shard). torchtune has no DDP recipe.
  const std::string two_gpus = R"("model_implementation": "torchtune", "data_parallel_size": 2)";
  const Resolved refused = resolve(parse_config_json(small_llama(R"("framework": "ddp", )" + two_gpus)).input);
  REQUIRE(refused.issues.size() == 1);
  CHECK(refused.issues[0].rule == "framework/torchtune-distributed");
  CHECK(refused.issues[0].field == "framework");
  CHECK(messages_for(small_llama(R"("framework": "ddp", )" + two_gpus)) ==
        std::vector<std::string>{
            "framework: must be \"fsdp2\" with model_implementation torchtune on 2 GPUs: torchtune runs more than one "
            "GPU with its distributed recipes, which shard the model with FSDP2 (training.shard_model); \"ddp\" is its "
            "single-device recipes, one GPU"});
  // The GPU count given as world_size is the same run.
  CHECK(messages_for(small_llama(R"("framework": "ddp", "model_implementation": "torchtune", "world_size": 4)")).size() == 1);
  // What torchtune runs: the distributed recipe on 2 GPUs, the single-device one on 1.
  CHECK(config_from(small_llama(R"("framework": "fsdp2", )" + two_gpus)).world_size == 2);
  CHECK(config_from(small_llama(R"("framework": "ddp", "model_implementation": "torchtune", "data_parallel_size": 1)")).world_size == 1);
  // DDP on 2 GPUs stays the Hugging Face Trainer's (accelerate's MULTI_GPU): the rule is torchtune's.
  CHECK(config_from(small_llama(R"("framework": "ddp", "model_implementation": "hf-transformers", "data_parallel_size": 2)")).world_size == 2);
}

TEST_CASE("torchtune has no pipeline parallelism", "[torchtune_recipe][rules]") {
  // torchtune's ParallelDims are dp_replicate, dp_shard, tp and cp (training/_distributed.py @
  // bd2a0fc7c): a pipeline of torchtune stages is not a run torchtune makes.
  CHECK(messages_for(small_llama(R"("framework": "fsdp2", "model_implementation": "torchtune",
      "pipeline_model_parallel_size": 2, "data_parallel_size": 2)")) ==
        std::vector<std::string>{
            "pipeline_model_parallel_size: must be 1 with model_implementation torchtune, got 2: torchtune's recipes "
            "shard with FSDP2 and split over tensor and context parallelism, never into pipeline stages (ParallelDims: "
            "dp_replicate, dp_shard, tp, cp)"});
  // torchtitan's own pipelines stay (its models, torch.distributed.pipelining).
  CHECK(config_from(small_llama(R"("framework": "fsdp2", "model_implementation": "torchtitan",
      "pipeline_model_parallel_size": 2, "data_parallel_size": 2)")).pipeline_model_parallel_size == 2);
}
