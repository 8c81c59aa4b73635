"""Reference modules for the trace oracle: small re-implementations that follow, op for op, what
the real training code runs, so that autograd saves what it saves there.

Written for Debian's python3-torch 1.13.1 (CPU). Every class names the file and commit whose op
sequence it follows; the sources were read from the public repositories:

  HF    huggingface/transformers src/transformers/models/llama/modeling_llama.py
        @ 5dd4a63548857797727ae73eeb6a6e886ea02a3e (LlamaRMSNorm, LlamaRotaryEmbedding, rotate_half,
        apply_rotary_pos_emb, repeat_kv, eager_attention_forward, LlamaAttention, LlamaMLP,
        LlamaDecoderLayer, LlamaModel._prepare_4d_causal_attention_mask_with_cache_position,
        LlamaForCausalLM.forward)
  HFL   huggingface/transformers src/transformers/loss/loss_utils.py
        @ 0114da07ec0e101b420a923dedeb6032b6ac3a44 (ForCausalLMLoss, fixed_cross_entropy)
  MIX   huggingface/transformers src/transformers/models/mixtral/modeling_mixtral.py
        @ af3efdd71ee5b568dfdb71bb41d316df830147af (MixtralBlockSparseTop2MLP, MixtralSparseMoeBlock)
  PEFT  huggingface/peft src/peft/tuners/lora/layer.py @ b28a09c44695163806dc2d560ec2faa1ce2949c5
        (Linear.forward: result = base_layer(x); result + lora_B(lora_A(dropout(x))) * scaling)
  TT    pytorch/torchtune torchtune/modules/rms_norm.py @ 68200894da3dc9d0e3276b3d91e13758f884ad7a,
        position_embeddings.py @ ba2b36bd545fd6b3bead51634ff4f3fdf88a4fb2,
        attention.py @ 90d5ba51861259b2a94dab524f246acaf196a042,
        attention_utils.py @ 478e32664308144fe679e248c51f43790d6bdedf (_sdpa_or_flex_attention),
        feed_forward.py @ 7304ea5c7258826fc253f21b523b162a42560204,
        transformer.py @ 3e5b0408e636e20ca18e9c6c58c68b4da9339129 (TransformerSelfAttentionLayer,
        TransformerDecoder.forward / chunked_output),
        loss/ce_chunked_output_loss.py @ ce5433b01eefe4ad4abe2d28d9f34b4e658fd982,
        peft/lora.py @ 1142f3a22f92cf5abd2ce64b64c70a92baa77da9 (LoRALinear.forward),
        models/llama3/_component_builders.py @ d1c6963e9070adbbf0602c7632c4a40de82a03d2 (llama3),
        recipes/full_finetune_single_device.py @ 56bfafa9011fd4d8a0464fc01470af2b20228e31 (_loss_step)
  SDPA  pytorch/pytorch aten/src/ATen/native/transformers/attention.cpp
        @ bc8cb28010a6b27e1817d38e1c1e0ac59b34477e (_scaled_dot_product_attention_math)

Two deliberate deviations, both to show what a CUDA run keeps rather than what 1.13's CPU kernels do:
  * dropout calls torch.native_dropout (saves a 1-byte bool mask). On CUDA, at::dropout dispatches
    native_dropout when 0 < p < 1 (is_fused_kernel_acceptable); on CPU F.dropout instead multiplies
    by an fp32 noise tensor and saves that (4 bytes per element).
  * torch 1.13 has no F.scaled_dot_product_attention; torchtune's attention is written here as the
    op sequence of _scaled_dot_product_attention_math (what SDPA runs on CPU and whenever no fused
    kernel applies). The flash / memory-efficient / cuDNN kernels save q, k, v, out and a logsumexp
    instead; the oracle cannot show those (see README).
"""
import copy
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


def dropout(x, p, training):
    """F.dropout as it behaves on CUDA: native_dropout saves its bool mask (see module doc)."""
    if not training or p == 0.0:
        return x
    return torch.native_dropout(x, p, True)[0]


class Dropout(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)


# ---------------------------------------------------------------- LoRA (PEFT and torchtune) ----

class PeftLoraLinear(nn.Module):
    """PEFT lora.Linear (PEFT layer.py Linear.forward): base_layer frozen; the adapter adds
    lora_B(lora_A(dropout(x))) * scaling. lora_dropout is nn.Identity when p = 0, nn.Dropout
    otherwise (LoraLayer.update_layer). scaling = alpha / r."""

    def __init__(self, base: nn.Linear, r, alpha, p):
        super().__init__()
        self.base_layer = base
        self.lora_dropout = Dropout(p) if p > 0 else nn.Identity()
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.normal_(self.lora_B.weight, std=0.02)  # PEFT zero-initialises B; non-zero here is harmless
        self.scaling = alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        x = x.to(self.lora_A.weight.dtype)
        result = result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        return result.to(torch_result_dtype)


class TorchtuneLoRALinear(nn.Module):
    """torchtune LoRALinear.forward (peft/lora.py): out = F.linear(x, weight); lora_out =
    lora_a(dropout(x)); lora_out = (alpha / rank) * lora_b(lora_out); out + lora_out.
    The dropout module is nn.Dropout(p) always (p = 0 returns its input)."""

    def __init__(self, base: nn.Linear, r, alpha, p):
        super().__init__()
        self.weight = base.weight
        self.dropout = Dropout(p)
        self.lora_a = nn.Linear(base.in_features, r, bias=False)
        self.lora_b = nn.Linear(r, base.out_features, bias=False)
        nn.init.normal_(self.lora_b.weight, std=0.02)
        self.alpha, self.rank = alpha, r

    def forward(self, x):
        out = F.linear(x, self.weight)
        lora_out = self.lora_a(self.dropout(x))
        lora_out = (self.alpha / self.rank) * self.lora_b(lora_out)
        return out + lora_out


# Hugging Face PEFT target names -> the module attribute names of each implementation.
HF_TARGETS = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "o_proj",
              "gate_proj": "gate_proj", "up_proj": "up_proj", "down_proj": "down_proj",
              "lm_head": "lm_head"}
TT_TARGETS = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "output_proj",
              "gate_proj": "w1", "up_proj": "w3", "down_proj": "w2", "lm_head": "output"}


class ModulesToSaveWrapper(nn.Module):
    """PEFT's ModulesToSaveWrapper (src/peft/utils/other.py @ 012c0d5a96744096ab28f87cde9bd9918f5367a1,
    update and forward): the original module stays, frozen; a deep copy trains and runs the forward."""

    def __init__(self, module):
        super().__init__()
        self.original_module = module
        self.modules_to_save = nn.ModuleDict({"default": copy.deepcopy(module)})
        self.original_module.requires_grad_(False)
        self.modules_to_save["default"].requires_grad_(True)

    def forward(self, *args, **kwargs):
        return self.modules_to_save["default"](*args, **kwargs)


def apply_modules_to_save(model, names):
    """PEFT's _set_trainable: wrap each named module of the Hugging Face model."""
    for name in names:
        setattr(model, name, ModulesToSaveWrapper(getattr(model, name)))
    return model


def apply_lora(model, impl, targets, r, alpha, p):
    """Freeze every parameter, then wrap the target linears with adapters (their own parameters
    trainable), as get_peft_model / torchtune's lora_llama3 leave the model."""
    for prm in model.parameters():
        prm.requires_grad_(False)
    names = HF_TARGETS if impl == "hf-transformers" else TT_TARGETS
    cls = PeftLoraLinear if impl == "hf-transformers" else TorchtuneLoRALinear
    wanted = {names[t] for t in targets}
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if child_name in wanted and isinstance(child, nn.Linear):
                setattr(parent, child_name, cls(child, r, alpha, p))
    return model


# ------------------------------------------------------------------ Hugging Face Llama (eager) ----

class LlamaRMSNorm(nn.Module):
    """HF LlamaRMSNorm: unfused, upcast to fp32, weight applied after the cast back."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    """HF LlamaRotaryEmbedding.forward (default rope type, attention_scaling 1.0), under no_grad."""

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout_p=0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = dropout(attn_weights, dropout_p, module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class LlamaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, a, g, k = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        self.head_dim = k
        self.num_key_value_groups = a // g
        self.scaling = k ** -0.5
        self.attention_dropout = cfg["attention_dropout"]
        self.q_proj = nn.Linear(h, a * k, bias=False)
        self.k_proj = nn.Linear(h, g * k, bias=False)
        self.v_proj = nn.Linear(h, g * k, bias=False)
        self.o_proj = nn.Linear(a * k, h, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            # DynamicCache.update on a layer's first call keeps the tensors themselves: the keys
            # after RoPE and the values, before repeat_kv (modeling_llama.py @ 002272831f).
            past_key_value.append((key_states, value_states))
        attn_output, _ = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask, self.scaling,
            dropout_p=0.0 if not self.training else self.attention_dropout)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.w1 = nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)
        self.w3 = nn.Linear(h, f, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        return self.w2(current_hidden_states)


class MixtralSparseMoeBlock(nn.Module):
    """HF MixtralSparseMoeBlock.forward (jitter 0): softmax router in fp32, topk, renormalise in
    place, one_hot mask, per-expert torch.where / index / expert MLP / weight multiply /
    index_add_. Qwen2-MoE and Qwen3-MoE (norm_topk_prob) run the same loop."""

    def __init__(self, h, f_e, n_experts, top_k):
        super().__init__()
        self.hidden_dim, self.num_experts, self.top_k = h, n_experts, top_k
        self.gate = nn.Linear(h, n_experts, bias=False)
        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(h, f_e) for _ in range(n_experts)])
        self._even = {}  # tokens -> the constant routing bias (made in a warm-up, outside any profile)

    def even_routing(self, tokens, dtype):
        """A constant bias on the router's logits that sends token t to experts (K·t + j) mod E,
        j < K: every expert gets T·K/E tokens when E divides T·K (the oracle's draws), as trainmem
        assumes (balanced routing). Its add keeps the router's graph (topk, softmax) as it is;
        the bias carries no gradient."""
        key = (tokens, dtype)
        if key not in self._even:
            bias = torch.zeros(tokens, self.num_experts, dtype=dtype)
            for t in range(tokens):
                for j in range(self.top_k):
                    bias[t, (self.top_k * t + j) % self.num_experts] = 1e4
            self._even[key] = bias
        return self._even[key]

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states) + self.even_routing(hidden_states.shape[0], hidden_states.dtype)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = LlamaAttention(cfg)
        self.moe = cfg.get("experts", 0) > 0
        if self.moe:
            self.block_sparse_moe = MixtralSparseMoeBlock(cfg["hidden"], cfg["expert_ffn"], cfg["experts"], cfg["top_k"])
        else:
            self.mlp = LlamaMLP(cfg["hidden"], cfg["ffn"])
        self.input_layernorm = LlamaRMSNorm(cfg["hidden"])
        self.post_attention_layernorm = LlamaRMSNorm(cfg["hidden"])

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value, output_attentions,
                use_cache, cache_position, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        if self.moe:
            hidden_states, _ = self.block_sparse_moe(hidden_states)
        else:
            hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return (hidden_states,)


def hf_causal_mask(attention_mask, sequence_length, dtype, batch_size):
    """LlamaModel._prepare_4d_causal_attention_mask_with_cache_position with a 2-D attention_mask
    (what HF Trainer batches carry): target_length = mask length, the expanded mask is cloned to
    [b, 1, s, s] in the model dtype and padding positions filled."""
    cache_position = torch.arange(sequence_length)
    target_length = attention_mask.shape[-1]
    min_dtype = torch.finfo(dtype).min
    causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
    if sequence_length != 1:
        causal_mask = torch.triu(causal_mask, diagonal=1)
    causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
    causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
    causal_mask = causal_mask.clone()
    mask_length = attention_mask.shape[-1]
    padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :]
    padding_mask = padding_mask == 0
    causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask, min_dtype)
    return causal_mask


class HFLlamaForCausalLM(nn.Module):
    """LlamaForCausalLM (eager attention, gradient checkpointing through
    torch.utils.checkpoint(use_reentrant=False) on each decoder layer, as
    gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False}) sets)
    and ForCausalLMLoss."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        h, V = cfg["hidden"], cfg["vocab"]
        self.embed_tokens = nn.Embedding(V, h)
        self.layers = nn.ModuleList([LlamaDecoderLayer(cfg) for _ in range(cfg["layers"])])
        self.norm = LlamaRMSNorm(h)
        self.rotary_emb = LlamaRotaryEmbedding(cfg["head_dim"])
        self.lm_head = nn.Linear(h, V, bias=False)
        self.gradient_checkpointing = cfg["checkpoint"]
        self.checkpoint_fn = None  # set by the measurer to record what the checkpoint keeps
        self.on_decoder_return = None  # set by the timeline oracle to mark where the loss's part begins

    def decoder(self, input_ids, attention_mask):
        """LlamaModel.forward: the embedding, the decoder layers and the final norm."""
        inputs_embeds = self.embed_tokens(input_ids)
        if self.cfg.get("checkpoint_reentrant") and self.cfg["peft"] == "lora" and self.training:
            # PreTrainedModel.enable_input_require_grads (modeling_utils.py @ 040ba146, which
            # gradient_checkpointing_enable calls for a PEFT model, as PEFT's
            # _prepare_model_for_gradient_checkpointing does): a forward hook on the input
            # embeddings, output.requires_grad_(True). A reentrant checkpoint needs it: under LoRA
            # the frozen embedding's output needs no gradient, so no layer's output would either.
            inputs_embeds.requires_grad_(True)
        cache_position = torch.arange(0, inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        causal_mask = hf_causal_mask(attention_mask, inputs_embeds.shape[1], inputs_embeds.dtype, inputs_embeds.shape[0])
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        # config.use_cache, turned off only for gradient checkpointing in training mode; the
        # reference runs it in evaluation only (the training draws model what trainmem's step does).
        cache = [] if (not self.training and self.cfg.get("eval_kv_cache")) else None
        for decoder_layer in self.layers:
            if self.gradient_checkpointing and self.training:
                layer_outputs = self.checkpoint_fn(decoder_layer.__call__, hidden_states, causal_mask,
                                                   position_ids, None, False, False, cache_position,
                                                   position_embeddings)
            else:
                layer_outputs = decoder_layer(hidden_states, causal_mask, position_ids, cache, False,
                                              cache is not None, cache_position, position_embeddings)
            hidden_states = layer_outputs[0]
        return self.norm(hidden_states), cache

    def forward(self, input_ids, attention_mask, labels):
        # LlamaModel.forward is a frame of its own in transformers: its locals (the embedding output,
        # the causal mask, the positions) are gone by the time LlamaForCausalLM.forward computes
        # the loss; its output, the final norm's, stays with the caller until the loss returns.
        hidden_states, cache = self.decoder(input_ids, attention_mask)  # the output holds the cache
        if self.on_decoder_return is not None:
            self.on_decoder_return()  # the measurer's mark: LlamaModel.forward's locals are gone
        logits = self.lm_head(hidden_states[:, slice(0, None), :])
        form = self.cfg.get("transformers_loss", "pad-labels")
        if form == "upcast-in-model":
            # transformers 4.45 and earlier: LlamaForCausalLM.forward upcasts and rebinds the logits
            # (`logits = logits.float()`, removed by PR #33902 for 4.46) and shifts them itself.
            logits = logits.float()
        if self.cfg.get("model_output_kept"):
            self.kept_output = logits  # the loop's `output` (fsdp_qlora train.py keeps it to the step's end)
        if form in ("shift-logits", "upcast-in-model"):
            return for_causal_lm_loss_shifted(logits, labels, self.cfg["vocab"])
        return for_causal_lm_loss(logits, labels, self.cfg["vocab"])


def for_causal_lm_loss(logits, labels, vocab_size, ignore_index=-100):
    """HF ForCausalLMLoss with num_items_in_batch None (reduction mean)."""
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(logits, shift_labels, ignore_index=ignore_index, reduction="mean")


def for_causal_lm_loss_shifted(logits, labels, vocab_size, ignore_index=-100):
    """HF ForCausalLMLoss as transformers 4.46 to 4.48 wrote it (loss/loss_utils.py before PR #35646,
    reduction mean): the upcast logits are copied shifted by one token, and the labels sliced the
    same way."""
    logits = logits.float()
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    shift_logits = shift_logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(shift_logits, shift_labels, ignore_index=ignore_index, reduction="mean")


# ---------------------------------------------------------------------------- torchtune llama3 ----

class TTRMSNorm(nn.Module):
    """torchtune RMSNorm: x.float(), x * rsqrt(mean(x²) + eps), type_as(x), then * scale."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x_fp32 = x.float()
        x_normed = (x_fp32 * torch.rsqrt(x_fp32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return x_normed * self.scale


class RotaryPositionalEmbeddings(nn.Module):
    """torchtune RotaryPositionalEmbeddings (cache [max_seq_len, dim/2, 2] fp32 buffer)."""

    def __init__(self, dim, max_seq_len, base=500000.0):
        super().__init__()
        theta = 1.0 / (base ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        self.register_buffer("theta", theta, persistent=False)
        seq_idx = torch.arange(max_seq_len, dtype=theta.dtype)
        idx_theta = torch.einsum("i, j -> ij", seq_idx, theta).float()
        cache = torch.stack([torch.cos(idx_theta), torch.sin(idx_theta)], dim=-1)
        self.register_buffer("cache", cache, persistent=False)

    def forward(self, x, input_pos=None):
        seq_len = x.size(1)
        rope_cache = self.cache[:seq_len] if input_pos is None else self.cache[input_pos]
        xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
        rope_cache = rope_cache.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
        x_out = torch.stack([
            xshaped[..., 0] * rope_cache[..., 0] - xshaped[..., 1] * rope_cache[..., 1],
            xshaped[..., 1] * rope_cache[..., 0] + xshaped[..., 0] * rope_cache[..., 1],
        ], -1)
        x_out = x_out.flatten(3)
        return x_out.type_as(x)


def sdpa_math(query_, key, value, dropout_p, is_causal, training=True):
    """_scaled_dot_product_attention_math (attention.cpp): q and k are each scaled by
    sqrt(1/sqrt(E)) before the matmul, a causal additive mask is added in place, softmax, optional
    dropout, matmul with V. Returns the output only, as F.scaled_dot_product_attention does."""
    scaling_factor = math.sqrt(1.0 / math.sqrt(query_.size(-1)))
    query = query_ * scaling_factor
    attn_mask = None
    if is_causal:
        L, S = query.size(-2), key.size(-2)
        attn_mask = torch.ones(L, S, dtype=torch.bool).tril()
        new_mask = torch.zeros_like(attn_mask, dtype=query.dtype)
        attn_mask = new_mask.masked_fill_(attn_mask.logical_not(), -float("inf"))
    attn = torch.matmul(query, key.transpose(-2, -1) * scaling_factor)
    if attn_mask is not None:
        attn.add_(attn_mask)
    attn = torch.softmax(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, training)
    return torch.matmul(attn, value)


class MultiHeadAttention(nn.Module):
    def __init__(self, cfg, rope):
        super().__init__()
        h, a, g, k = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        self.num_heads, self.num_kv_heads, self.head_dim = a, g, k
        self.attn_dropout = cfg["attention_dropout"]
        self.q_proj = nn.Linear(h, a * k, bias=False)
        self.k_proj = nn.Linear(h, g * k, bias=False)
        self.v_proj = nn.Linear(h, g * k, bias=False)
        self.output_proj = nn.Linear(a * k, h, bias=False)
        self.pos_embeddings = rope
        self.is_causal = True

    def forward(self, x, y, mask=None, input_pos=None):
        b, s_x, _ = x.shape
        s_y = y.shape[1]
        q = self.q_proj(x)
        q_per_kv = self.num_heads // self.num_kv_heads
        q = q.view(b, s_x, self.num_kv_heads * q_per_kv, self.head_dim)
        q = self.pos_embeddings(q, input_pos=input_pos)
        q = q.transpose(1, 2)
        k = self.k_proj(y)
        v = self.v_proj(y)
        k = k.view(b, s_y, -1, self.head_dim)
        v = v.view(b, s_y, -1, self.head_dim)
        k = self.pos_embeddings(k, input_pos=input_pos)
        k = k.transpose(1, 2)
        v = v.transpose(1, 2)
        if self.num_heads != self.num_kv_heads:
            expand_shape = (b, self.num_kv_heads, q_per_kv, -1, self.head_dim)
            k = k.unsqueeze(2).expand(expand_shape).flatten(1, 2)
            v = v.unsqueeze(2).expand(expand_shape).flatten(1, 2)
        output = sdpa_math(q, k, v, self.attn_dropout if self.training else 0.0,
                           is_causal=mask is None and self.is_causal, training=self.training)
        output = output.transpose(1, 2).contiguous().view(b, s_x, -1)
        return self.output_proj(output)


class FeedForward(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.w1 = nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)
        self.w3 = nn.Linear(h, f, bias=False)
        self.activation = nn.SiLU()

    def forward(self, x):
        h = self.activation(self.w1(x))
        h = h * self.w3(x)
        return self.w2(h)


class TransformerSelfAttentionLayer(nn.Module):
    def __init__(self, cfg, rope):
        super().__init__()
        self.attn = MultiHeadAttention(cfg, rope)
        self.mlp = FeedForward(cfg["hidden"], cfg["ffn"])
        self.sa_norm = TTRMSNorm(cfg["hidden"])
        self.mlp_norm = TTRMSNorm(cfg["hidden"])

    def forward(self, x, mask=None, input_pos=None):
        h = self.sa_norm(x)
        attn_out = self.attn(h, h, mask=mask, input_pos=input_pos)
        h = attn_out + x
        mlp_out = self.mlp(self.mlp_norm(h))
        return h + mlp_out


class TorchtuneLlama3(nn.Module):
    """torchtune llama3() decoder + the single-device recipe's _loss_step. Each layer owns a deep
    copy of the rope module (TransformerDecoder._get_clones deep-copies the layer). Activation
    checkpointing as training.set_activation_checkpointing (checkpoint_wrapper, non-reentrant) on
    every TransformerSelfAttentionLayer."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        h, V = cfg["hidden"], cfg["vocab"]
        self.tok_embeddings = nn.Embedding(V, h)
        self.layers = nn.ModuleList([
            TransformerSelfAttentionLayer(cfg, RotaryPositionalEmbeddings(cfg["head_dim"], max_seq_len=cfg["seq"]))
            for _ in range(cfg["layers"])])
        self.norm = TTRMSNorm(h)
        self.output = nn.Linear(h, V, bias=False)
        self.num_output_chunks = cfg["ce_chunks"] if cfg["ce_chunks"] > 1 else 0
        self.checkpoint_fn = None

    def forward(self, tokens, labels):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            if self.cfg["checkpoint"] and self.training:
                h = self.checkpoint_fn(layer, h)
            else:
                h = layer(h)
        h = self.norm(h)
        if self.num_output_chunks > 0:
            logits = [self.output(chunk) for chunk in h.chunk(self.num_output_chunks, dim=1)]
        else:
            logits = self.output(h).float()
        # recipe _loss_step: shift labels by appending an ignore index column
        ignore = torch.full((labels.shape[0], 1), -100, dtype=labels.dtype)
        labels = torch.hstack((labels[..., 1:], ignore))
        if not isinstance(logits, list):
            labels = labels.reshape(-1)
            logits = logits.reshape(-1, logits.size(-1))
            return F.cross_entropy(logits, labels, ignore_index=-100)
        return ce_with_chunked_output_loss(logits, labels, self.num_output_chunks)


def ce_with_chunked_output_loss(logits, labels, num_output_chunks, ignore_index=-100):
    """torchtune CEWithChunkedOutputLoss.forward / compute_cross_entropy."""
    total_elements = (labels != ignore_index).sum()
    labels = [target_chunk.reshape(-1) for target_chunk in labels.chunk(num_output_chunks, dim=1)]
    logits = [logit_chunk.reshape(-1, logit_chunk.size(-1)) for logit_chunk in logits]
    total_loss = 0.0
    for logits_chunk, labels_chunk in zip(logits, labels):
        total_loss += F.cross_entropy(logits_chunk.float(), labels_chunk, ignore_index=ignore_index, reduction="sum")
    return total_loss / total_elements


def build(cfg):
    torch.manual_seed(cfg["seed"])
    if cfg["impl"] == "hf-transformers":
        model = HFLlamaForCausalLM(cfg)
    else:
        model = TorchtuneLlama3(cfg)
    if cfg["peft"] == "lora":
        apply_lora(model, cfg["impl"], cfg["lora_targets"], cfg["lora_rank"], 2.0 * cfg["lora_rank"], cfg["lora_dropout"])
        apply_modules_to_save(model, cfg.get("modules_to_save") or [])
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[cfg["dtype"]]
    model.to(dtype)
    model.train()
    return model


def make_inputs(cfg):
    g = torch.Generator().manual_seed(cfg["seed"] + 1)
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), generator=g)
    labels = tokens.clone()
    if cfg["impl"] == "hf-transformers":
        return (tokens, torch.ones_like(tokens), labels)
    return (tokens, labels)
