// MoE at scale (issue 13 item 7): the tokens the most-loaded GPU's experts receive
// (moe_routing_imbalance), the all-to-all dispatcher's transient buffers and what the dispatcher
// keeps between forwards, where they join the moments of a step, and the expert-tensor-parallel
// default. Rules: core/src/estimate/activations.cpp ("MoE at scale"), trainmem_profile.cpp
// (stage_moe), docs/trainmem-profile.md (MoE at scale). Every golden value is worked out by hand
// in the comment beside it.
//
// The block of these tests: h 64, s 128, b 2, TP 2 with SP, so T_sp = 128·2/2 = 128 tokens enter
// each MoE layer on a GPU; E 8 experts, K 2, f_e 32 (SwiGLU: fc1 2·f_e = 64 wide), bf16 (e = 2).
// One routed row of the hidden width is e·h = 128 B. Balanced: N_s = N_a = T_sp·K = 256 token
// copies sent and received, N_r = N_a·ETP.
#include <string>

#include "moe_block.hpp"

using namespace trainmem;
using namespace trainmem::test;

TEST_CASE("moe_routing_imbalance scales the rows the most-loaded GPU's experts run, and only those",
          "[moe][golden]") {
  SECTION("balanced (the default 1.0): N_r = T_sp·K·ETP = 128·2·1 = 256") {
    const Config c = config_from(moe());
    CHECK(c.moe_routing_imbalance == 1.0);
    const SavedTensors d = moe_layer(c);
    CHECK(row_bytes(d, "moe.expert_input") == 32'768.0);       // 2·64·256
    CHECK(row_bytes(d, "moe.expert_fc1_output") == 32'768.0);  // 2·(2·32)·256
    CHECK(row_bytes(d, "moe.expert_fc2_input") == 16'384.0);   // 2·32·256
    CHECK(row_bytes(d, "moe.expert_probs") == 1'024.0);        // 4·256
  }
  SECTION("1.5: N_r = 256·1.5 = 384 on the experts' side; the router and the permutation stay") {
    const SavedTensors d = moe_layer(config_from(moe(R"("moe_routing_imbalance": 1.5)")));
    CHECK(row_bytes(d, "moe.expert_input") == 49'152.0);       // 2·64·384
    CHECK(row_bytes(d, "moe.expert_fc1_output") == 49'152.0);  // 2·64·384
    CHECK(row_bytes(d, "moe.expert_fc2_input") == 24'576.0);   // 2·32·384
    CHECK(row_bytes(d, "moe.expert_probs") == 1'536.0);        // 4·384
    // The sending side is the GPU's own T_sp tokens: 4·E·T_sp, 8·K·T_sp, 4·K·T_sp, 8·N_s.
    CHECK(row_bytes(d, "moe.router_probs") == 4'096.0);         // 4·8·128
    CHECK(row_bytes(d, "moe.router_topk_indices") == 2'048.0);  // 8·2·128
    CHECK(row_bytes(d, "moe.router_topk_probs") == 1'024.0);    // 4·2·128
    CHECK(row_bytes(d, "moe.permutation_indices") == 2'048.0);  // 8·256
    CHECK(row_bytes(d, "moe.permuted_probs_indices") == 2'048.0);
  }
  SECTION("capped at what one GPU can receive: EP·min(K, E/EP)/K = 2·min(2, 4)/2 = 2") {
    const SavedTensors d = moe_layer(config_from(moe(R"("moe_routing_imbalance": 5)")));
    CHECK(row_bytes(d, "moe.expert_input") == 65'536.0);  // 2·64·(256·2)
  }
  SECTION("with EP = 1 one GPU runs every expert: the cap is 1·min(2, 8)/2 = 1") {
    const SavedTensors d = moe_layer(config_from(moe(R"("expert_model_parallel_size": 1,
        "moe_routing_imbalance": 3)")));
    CHECK(row_bytes(d, "moe.expert_input") == 32'768.0);
  }
  SECTION("padding to the capacity: sent and received 256·1.25 = 320") {
    const SavedTensors d = moe_layer(config_from(moe(R"("moe_expert_capacity_factor": 1.25,
        "moe_pad_expert_input_to_capacity": true)")));
    CHECK(row_bytes(d, "moe.expert_input") == 40'960.0);        // 2·64·320
    CHECK(row_bytes(d, "moe.permutation_indices") == 2'560.0);  // 8·320 (E·capacity indices)
  }
  SECTION("a capacity without padding drops only: sent T_sp·K = 256, received at most 256·1.25") {
    const SavedTensors d = moe_layer(config_from(moe(R"("moe_expert_capacity_factor": 1.25)")));
    // λ = min(cf 1.25, cap EP·min(K, E/EP)/K = 2·2/2 = 2) = 1.25: N_r = 320.
    CHECK(row_bytes(d, "moe.expert_input") == 40'960.0);        // 2·64·320
    CHECK(row_bytes(d, "moe.permutation_indices") == 2'048.0);  // 8·256
    CHECK(row_bytes(d, "moe.permuted_probs_indices") == 2'048.0);
  }
  SECTION("without padding at EP 1 the capacity cannot raise one GPU's share: cap 1, N_r = 256") {
    const SavedTensors d = moe_layer(config_from(moe(R"("expert_model_parallel_size": 1,
        "moe_expert_capacity_factor": 2)")));
    CHECK(row_bytes(d, "moe.expert_input") == 32'768.0);  // 2·64·256
  }
  SECTION("expert tensor parallelism gathers the received tokens: N_r = 256·1.5·2 = 768") {
    // EP·ETP = 4 must divide DP·TP·CP: DP 2.
    const SavedTensors d = moe_layer(config_from(moe(R"("expert_tensor_parallel_size": 2,
        "data_parallel_size": 2, "moe_routing_imbalance": 1.5)")));
    CHECK(row_bytes(d, "moe.expert_input") == 98'304.0);       // 2·64·768
    CHECK(row_bytes(d, "moe.expert_fc1_output") == 49'152.0);  // 2·(64/2)·768
  }
}

TEST_CASE("the all-to-all dispatcher's transient buffers in one MoE layer's forward", "[moe][golden]") {
  // P = e·h·N_s (permuted tokens), A = e·h·N_a (all-to-all output, EP > 1), O = e·h·N_r (experts'
  // output), B = O's sorted-back copy (more than one local expert), R = e·h·N_a (reduce-scatter,
  // ETP > 1), C = e·h·N_s (returning all-to-all, EP > 1); the experts' input G is saved by
  // linear_fc1. The largest of P + A + G + O + B + R and P + A + (R, B or O) + C.
  SECTION("EP 2, 4 local experts: P + A + O + B = 4·(128·256) = 131,072") {
    CHECK(moe_dispatch_transient_bytes(config_from(moe())) == 131'072.0);
  }
  SECTION("ETP 2 (DP 2): N_r = 512; P + A + O + B + R = 32,768·2 + 65,536·2 + 32,768 = 229,376") {
    CHECK(moe_dispatch_transient_bytes(config_from(moe(R"("expert_tensor_parallel_size": 2,
        "data_parallel_size": 2)"))) == 229'376.0);
  }
  SECTION("EP 1: A and C are P and the combine input; P + O + B = 98,304") {
    CHECK(moe_dispatch_transient_bytes(config_from(moe(R"("expert_model_parallel_size": 1)"))) ==
          98'304.0);
  }
  SECTION("EP 8 (DP 4), one local expert: the experts' input is A itself, saved; P + O + C = 98,304") {
    // At combine_preprocess P + O = 65,536; at the combine all-to-all P + O + C = 98,304.
    CHECK(moe_dispatch_transient_bytes(config_from(moe(R"("expert_model_parallel_size": 8,
        "data_parallel_size": 4)"))) == 98'304.0);
  }
  SECTION("imbalance 1.5: N_a = N_r = 384; P + A + O + B = 32,768 + 3·49,152 = 180,224") {
    CHECK(moe_dispatch_transient_bytes(config_from(moe(R"("moe_routing_imbalance": 1.5)"))) ==
          180'224.0);
  }
  SECTION("a dense model, or a PyTorch implementation's MoE block, has none") {
    CHECK(moe_dispatch_transient_bytes(config_from(R"({"profile": "trainmem", "num_layers": 2,
        "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 0, "seq_length": 128,
        "micro_batch_size": 2})")) == 0.0);
    CHECK(moe_dispatch_transient_bytes(config_from(moe(R"("framework": "ddp",
        "tensor_model_parallel_size": 1, "sequence_parallel": false,
        "expert_model_parallel_size": 1)"))) == 0.0);
  }
}

TEST_CASE("the dispatcher keeps each MoE layer's routing between its forwards", "[moe][golden]") {
  const Config c = config_from(moe());
  // self.probs [T_sp, E] in bf16 and self.routing_map [T_sp, E] bool: (2 + 1)·8·128 = 3,072.
  CHECK(moe_dispatcher_state_bytes(c, false) == 3'072.0);
  // After backward the permutation indices stay too: + 8·N_s = 8·256 = 2,048.
  CHECK(moe_dispatcher_state_bytes(c, true) == 5'120.0);
}

TEST_CASE("moe_router_dtype fp32 keeps the dispatcher's probabilities in fp32", "[moe][golden]") {
  const Config c = config_from(moe(R"("moe_router_dtype": "fp32")"));
  // self.probs [T_sp, E] fp32 and the bool routing map: (4 + 1)·8·128 = 5,120.
  CHECK(moe_dispatcher_state_bytes(c, false) == 5'120.0);
  // After backward the permutation indices too: + 8·N_s = 8·256 = 2,048.
  CHECK(moe_dispatcher_state_bytes(c, true) == 7'168.0);
  // The saved tensors do not change: the aux-loss softmax and the top-k softmax are fp32 either way.
  CHECK(layer_activation_bytes(c, true, LayerRecompute::policy) ==
        layer_activation_bytes(config_from(moe()), true, LayerRecompute::policy));
}

TEST_CASE("moe_permute_fusion keeps Transformer Engine's row maps instead of the int64 indices",
          "[moe][golden]") {
  SECTION("4 local experts: the row-id map and the two chunk-sort maps") {
    const Config c = config_from(moe(R"("moe_permute_fusion": true)"));
    const SavedTensors d = moe_layer(c);
    // Row-id map int32 [T_sp, 2E + 1]: 4·128·17 = 8,704.
    CHECK(row_bytes(d, "moe.permute_row_id_map") == 8'704.0);
    // Sort by local expert and back, 8 B per row each: 2·8·N_r = 2·8·256 = 4,096.
    CHECK(row_bytes(d, "moe.chunk_sort_row_maps") == 4'096.0);
    CHECK(row_bytes(d, "moe.permutation_indices") == 0.0);
    CHECK(row_bytes(d, "moe.permuted_probs_indices") == 0.0);
    // The layer: the unfused layer less 2·2,048, plus 8,704 + 4,096.
    CHECK(layer_activation_bytes(c, true, LayerRecompute::policy) ==
          layer_activation_bytes(config_from(moe()), true, LayerRecompute::policy) - 4'096 + 12'800);
    // After backward the dispatcher keeps the row-id map: 3,072 + 8,704 = 11,776.
    CHECK(moe_dispatcher_state_bytes(c, true) == 11'776.0);
  }
  SECTION("one local expert (EP 8, DP 4): no sort, no chunk-sort maps") {
    const SavedTensors d = moe_layer(config_from(moe(R"("moe_permute_fusion": true,
        "expert_model_parallel_size": 8, "data_parallel_size": 4)")));
    CHECK(row_bytes(d, "moe.permute_row_id_map") == 8'704.0);
    CHECK(row_bytes(d, "moe.chunk_sort_row_maps") == 0.0);
  }
}

TEST_CASE("MoE dispatch fields: named errors", "[moe][validation]") {
  CHECK(messages_for(moe(R"("moe_pad_expert_input_to_capacity": true)")) ==
        one("moe_pad_expert_input_to_capacity: applies to MoE with model_implementation "
            "megatron-core and moe_expert_capacity_factor (the padding is to the capacity)"));
  CHECK(messages_for(moe(R"("moe_router_dtype": "fp64")")).size() == 1);
  const std::string& hf = k_hf_moe;
  CHECK(messages_for(moe(R"("moe_permute_fusion": true, )" + hf)) ==
        one("moe_permute_fusion: applies to MoE with model_implementation megatron-core "
            "(Transformer Engine's fused permutation in Megatron Core's dispatcher)"));
  CHECK(messages_for(moe(R"("moe_router_dtype": "fp32", )" + hf)) ==
        one("moe_router_dtype: applies to MoE with model_implementation megatron-core (Megatron "
            "Core's router; the PyTorch implementations route in the compute dtype)"));
  CHECK(messages_for(moe(R"("moe_router_dtype": "none", )" + hf)).empty());
  // The rule reads the implementation the framework defaults to, as every rule reads the resolved
  // config: FSDP2 trains torchtitan's model unless told otherwise (before the rules were rows the
  // check ran before that default was derived and let this pass).
  const std::string fsdp2 = R"("framework": "fsdp2", "tensor_model_parallel_size": 1, "sequence_parallel": false,
      "expert_model_parallel_size": 1)";
  CHECK(messages_for(moe(R"("moe_router_dtype": "fp32", )" + fsdp2)) ==
        one("moe_router_dtype: applies to MoE with model_implementation megatron-core (Megatron "
            "Core's router; the PyTorch implementations route in the compute dtype)"));
  // For a dense model they mean nothing, as every MoE field: no error, not written back (an
  // import of a launcher that always passes them, as ms-swift does --moe_router_dtype fp32).
  const std::string dense = R"({"profile": "trainmem", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 0, "seq_length": 128, "micro_batch_size": 2,
      "moe_router_dtype": "fp32", "moe_permute_fusion": true,
      "moe_pad_expert_input_to_capacity": true})";
  CHECK(messages_for(dense).empty());
  const ConfigInput written = to_input(config_from(dense));
  CHECK_FALSE(written.moe_router_dtype.has_value());
  CHECK_FALSE(written.moe_permute_fusion.has_value());
}

TEST_CASE("the dispatcher's buffers join the moments of a step", "[moe][golden]") {
  // Two MoE layers on one stage, no vocabulary (no output layer or loss), no workspaces: what the
  // moments hold beyond the model state and the activations in flight is the dispatcher's.
  SECTION("no recompute: the forward end holds one layer's transient, every moment the state") {
    const StageParams s = stages_of(moe()).at(0);
    const Moments& m = s.moments;
    // 131,072 + 2 layers · 3,072 = 137,216.
    CHECK(m.forward - s.weight_and_optimizer_bytes - s.activation_bytes == 137'216.0);
    // Backward's gradients through the dispatcher are not counted: the state only, 2·3,072.
    CHECK(m.backward - s.weight_and_optimizer_bytes - s.activation_bytes == 6'144.0);
    // The optimizer step: the state with the permutation indices, 2·5,120 (megatron steps with no
    // temporaries of its own).
    CHECK(m.optimizer_step - s.weight_and_optimizer_bytes == 10'240.0);
  }
  SECTION("full recompute re-runs the dispatcher inside the recomputed layer") {
    const std::string json = moe(R"("recompute_granularity": "full", "recompute_method": "uniform",
        "recompute_num_layers": 1)");
    const StageParams s = stages_of(json).at(0);
    const double working = layer_recompute_working_bytes(config_from(json), true);
    // The first forward ran under no_grad, so each dispatcher's permutation index (8·N_s = 2,048)
    // is its own all step: the state is 3,072 + 2,048 = 5,120 per layer. The recomputed layer's
    // set, then 131,072 + 2·5,120 = 141,312 on top.
    CHECK(moe_dispatcher_state_bytes(config_from(json), false) == 5'120.0);
    // The backward's largest end is now its first layer's (the recomputed graph the second
    // layer's dispatcher holds, below): that layer's checkpoint (16,384) beside the second
    // layer's input and input gradient (2·16,384), where the last layer's end holds the two
    // checkpoints (2·16,384 = activation_bytes): 16,384 more than 141,312.
    CHECK(s.moments.backward - s.weight_and_optimizer_bytes - s.activation_bytes - working == 141'312.0 + 16'384.0);
  }
}

TEST_CASE("the dispatcher's kept probabilities hold a recomputed layer's input and its gradient",
          "[moe][golden][recompute]") {
  // One residual-stream tensor of the block: e·h·T_sp = 2·64·128 = 16,384 B; a checkpoint holds
  // its detached input and that input's gradient through the recomputed graph: 32,768 B.
  constexpr double per_checkpoint = 2 * 16'384.0;
  const auto recompute = [](const std::string& fields) { return moe(fields); };
  const std::string uniform1 = recompute(R"("recompute_granularity": "full", "recompute_method": "uniform",
      "recompute_num_layers": 1)");
  CHECK(moe_recompute_graph_bytes(config_from(uniform1)) == per_checkpoint);
  // After the backward every checkpoint's is held through the optimizer step: two layers, two
  // checkpoints, beside the dispatcher state after backward (2 · 5,120, the test above).
  Trace trace;
  full_estimate(config_from(uniform1), &trace);
  CHECK(trace_value(trace, "trainmem.moe_recompute_graph") == 2 * per_checkpoint);
  const StageParams one = stages_of(uniform1).at(0);
  CHECK(one.moments.optimizer_step - one.weight_and_optimizer_bytes == 2 * 5'120.0 + 2 * per_checkpoint);
  // A uniform group of two layers is one checkpoint with one input.
  const StageParams two = stages_of(recompute(R"("recompute_granularity": "full", "recompute_method": "uniform",
      "recompute_num_layers": 2)")).at(0);
  CHECK(two.moments.optimizer_step - two.weight_and_optimizer_bytes == 2 * 5'120.0 + per_checkpoint);
  // The block method checkpoints the first recompute_num_layers layers only; the other keeps its
  // whole saved set, and its graph has no detached input.
  const StageParams block = stages_of(recompute(R"("recompute_granularity": "full", "recompute_method": "block",
      "recompute_num_layers": 1)")).at(0);
  CHECK(block.moments.optimizer_step - block.weight_and_optimizer_bytes == 2 * 5'120.0 + per_checkpoint);
  // Selective recompute with the moe module: MoELayer's own checkpoint of its pre-MLP norm
  // output, the same shape, one per MoE layer.
  const std::string selective = recompute(R"("recompute_granularity": "selective", "recompute_modules": ["moe"])");
  const StageParams sel = stages_of(selective).at(0);
  CHECK(moe_recompute_graph_bytes(config_from(selective)) == per_checkpoint);
  CHECK(sel.moments.optimizer_step - sel.weight_and_optimizer_bytes == 2 * 5'120.0 + 2 * per_checkpoint);
  // Selective without the moe module, or no recompute: no checkpoint around the dispatcher.
  CHECK(moe_recompute_graph_bytes(config_from(recompute(R"("recompute_granularity": "selective",
      "recompute_modules": ["core_attn"])"))) == 0.0);
  CHECK(moe_recompute_graph_bytes(config_from(moe())) == 0.0);
  // transformers' MoE block has no Megatron dispatcher.
  CHECK(moe_recompute_graph_bytes(config_from(moe(R"("recompute_granularity": "full", )" + k_hf_moe))) == 0.0);
}

TEST_CASE("moe_routing_imbalance: named errors", "[moe][validation]") {
  CHECK(messages_for(moe(R"("moe_expert_capacity_factor": 1.25, "moe_routing_imbalance": 1.5)")) ==
        one("moe_routing_imbalance: has no effect with moe_expert_capacity_factor (1.25): every "
            "expert is counted at the capacity; leave it unset"));
  CHECK(messages_for(moe(R"("moe_routing_imbalance": 0.5)")) ==
        one("moe_routing_imbalance: must be between 1 and 1000000, got 0.5"));
  // The reference profiles reject it (their own model of the run has no routing imbalance).
  const std::string reference = R"({"profile": "megatron-bridge", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 2,
      "num_moe_experts": 8, "moe_router_topk": 2, "moe_routing_imbalance": 1.5})";
  CHECK(messages_for(reference) ==
        one("moe_routing_imbalance: is read only by the trainmem profile (profile is "
            "\"megatron-bridge\")"));
  // Given for a dense model it means nothing: not written back, no error (as every MoE field).
  CHECK(messages_for(R"({"profile": "trainmem", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 0, "seq_length": 128, "micro_batch_size": 2,
      "moe_routing_imbalance": 2})").empty());
}

TEST_CASE("expert_tensor_parallel_size defaults to TP as Megatron Core resolves it", "[moe]") {
  // megatron/core/model_parallel_config.py @ 02aa3ee4: None -> tensor_model_parallel_size.
  const Config c = config_from(R"({"profile": "trainmem", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 0, "seq_length": 128, "micro_batch_size": 2,
      "num_moe_experts": 8, "moe_router_topk": 2, "tensor_model_parallel_size": 2,
      "sequence_parallel": true, "data_parallel_size": 2, "expert_model_parallel_size": 2})");
  CHECK(c.expert_tensor_parallel_size == 2);
}

// The all-gather dispatcher (moe_token_dispatcher_type allgather; token_dispatcher.py,
// moe_utils.py @ 93aa335b, activations.cpp "The all-gather dispatcher"). The block above: G =
// ETP·EP = 2 ranks gather their T_sp = 128 tokens, N_g = 256; E/EP = 4 local experts; N_r =
// T_sp·K·ETP = 256 local rows; probabilities in bf16 (no router dtype), p = 2.
TEST_CASE("the all-gather dispatcher keeps the gathered tokens' map and probabilities, not the sent copies",
          "[moe][golden]") {
  const Config c = config_from(moe(R"("moe_token_dispatcher_type": "allgather")"));
  REQUIRE(c.moe_token_dispatcher_type == MoeTokenDispatcher::allgather);
  SECTION("saved: the local rows' int64 index, and masked_select's operands over the gathered tokens") {
    const SavedTensors d = moe_layer(c);
    CHECK(row_bytes(d, "moe.permutation_indices") == 2'048.0);  // 8·N_r = 8·256
    CHECK(row_bytes(d, "moe.permuted_probs_indices") == 0.0);   // the all-to-all's probs index
    CHECK(row_bytes(d, "moe.local_probs") == 2'048.0);          // p·E/EP·N_g = 2·4·256
    CHECK(row_bytes(d, "moe.local_map") == 1'024.0);            // 1·4·256
    CHECK(row_bytes(d, "moe.expert_input") == 32'768.0);        // the experts' side unchanged
    // Against the all-to-all's block: − 2,048 (its probs index) + 2,048 + 1,024.
    const SavedTensors a = moe_layer(config_from(moe()));
    double total = 0, alltoall = 0;
    for (const SavedTensor& t : d) total += t.bytes;
    for (const SavedTensor& t : a) alltoall += t.bytes;
    CHECK(total == alltoall + 1'024.0);
  }
  SECTION("fused permutation: TE's row map over the gathered tokens and local experts, no chunk sort") {
    const SavedTensors d = moe_layer(config_from(moe(R"("moe_token_dispatcher_type": "allgather", "moe_permute_fusion": true)")));
    CHECK(row_bytes(d, "moe.permute_row_id_map") == 9'216.0);  // 4·N_g·(2·4 + 1) = 4·256·9
    CHECK(row_bytes(d, "moe.chunk_sort_row_maps") == 0.0);
  }
  SECTION("forward transient: gathered probs + max(O + U, U + R)") {
    // gathered probs p·E·N_g = 2·8·256 = 4,096; O = U = e·h·256 = 32,768 each;
    // R = e·h·T_sp = 16,384: max(65,536, 49,152) + 4,096.
    CHECK(moe_dispatch_transient_bytes(c) == 69'632.0);
  }
  SECTION("fp32 router: token_combine's fp32 copy of U and an fp32 reduce-scatter output") {
    const Config f = config_from(moe(R"("moe_token_dispatcher_type": "allgather", "moe_router_dtype": "fp32")"));
    // gathered probs 4·8·256 = 8,192; at combine U 32,768 + 4·64·256 = 65,536 + 4·64·128 =
    // 32,768: 131,072 > O + U = 65,536.
    CHECK(moe_dispatch_transient_bytes(f) == 139'264.0);
  }
  SECTION("backward: the gathered gradients; the global buffer; what the dispatcher keeps") {
    // max(p·h·N_g + e·h·N_r, e·h·N_g + e·h·T_sp) = max(65,536, 49,152).
    CHECK(moe_dispatch_backward_bytes(c) == 65'536.0);
    CHECK(moe_gather_buffer_bytes(c) == 32'768.0);  // e·h·N_g
    CHECK(moe_dispatcher_state_bytes(c, false) == 1'024.0);  // local_map 4·256
    // after backward also the index 2,048 and local_probs p·N_r = 512.
    CHECK(moe_dispatcher_state_bytes(c, true) == 3'584.0);
    const Config a = config_from(moe());
    CHECK(moe_dispatch_backward_bytes(a) == 0.0);
    CHECK(moe_gather_buffer_bytes(a) == 0.0);
  }
  SECTION("one rank gathers nothing: no buffer, no gathered probabilities") {
    const Config one_rank = config_from(moe(R"("moe_token_dispatcher_type": "allgather", "expert_model_parallel_size": 1, "tensor_model_parallel_size": 1, "sequence_parallel": false)"));
    CHECK(moe_gather_buffer_bytes(one_rank) == 0.0);
  }
}

TEST_CASE("moe_token_dispatcher_type is Megatron Core's: refused for the PyTorch implementations' MoE blocks",
          "[moe][fields]") {
  const auto messages = messages_for(moe(R"("framework": "ddp", "model_implementation": "hf-transformers", "moe_token_dispatcher_type": "allgather", "tensor_model_parallel_size": 1, "expert_model_parallel_size": 1, "sequence_parallel": false)"));
  bool named = false;
  for (const std::string& m : messages) named |= m.find("moe_token_dispatcher_type") != std::string::npos;
  INFO(messages.size());
  CHECK(named);
}
