"""QLoRA as bitsandbytes runs it, for the allocation timeline oracle (issue 29 item 4): a CPU
stand-in for bitsandbytes' Linear4bit, Params4bit / QuantState and MatMul4Bit that allocates the
same bytes in the same order (it does not compute NF4: the dequantised weight is filled with
random numbers), PEFT's LoRA layer over it, the Trainer's bf16 autocast where it casts, and
the QLoRA reference model built from models.py's transformers Llama as from_pretrained with a
BitsAndBytesConfig, prepare_model_for_kbit_training (or TRL) and get_peft_model leave it.

Why a stand-in: Debian has no bitsandbytes, and MatMul4Bit keeps what it needs for backward on
`ctx.tensors`, a plain attribute that torch.autograd.graph.saved_tensors_hooks never sees, so
only the allocator's events show it (timeline.py), not the saved-tensor oracle.

Sources (bitsandbytes-foundation/bitsandbytes; tags and their commits):
  BNB041  0.41.0 a06a0f6a08cb23754b110359a109e069fa97ce9e and 0.43.1
          4a6fb352cfb90b17820391f0db18aeda98774f0a, bitsandbytes/autograd/_functions.py
          MatMul4Bit.forward: `ctx.tensors = (A, B)` when any(ctx.needs_input_grad[:2])
  BNB0432 0.43.2 ce53caf3c358ec3f81db6a9edc0b6fc2f17d9503 (and every release after, 0.48.0
          406fb6aaeb92509540ccbbb2013518b6eea2fc7c, 0.50.1 37d2a9387f7146ccb85517ff45c665d345bfda79):
          `ctx.tensors = (None, B)`
  MOD048  0.48.0 406fb6aa bitsandbytes/nn/modules.py Linear4bit.forward, Params4bit._quantize
  FUN048  0.48.0 406fb6aa bitsandbytes/functional.py quantize_4bit, dequantize_4bit,
          quantize_blockwise, dequantize_blockwise, get_4bit_type, and
          bitsandbytes/backends/cuda/ops.py (the kernels' output allocations)
  OPS050  0.50.1 37d2a938 bitsandbytes/backends/cuda/ops.py: MatMul4Bit.forward calls
          torch.ops.bitsandbytes.gemm_4bit, whose CUDA kernel takes the fused path (no
          dequantised weight) only for M <= _gemm_4bit_custom_max_m (1536) rows and per-arch
          heuristics; above it `_dequant_linear_fallback`, the dequantise + F.linear modelled
          here. Training microbatches of more than 1536 tokens take the fallback; smaller ones
          may not (CUDA only, 0.50 only: named, not modelled).
  PEFTBNB huggingface/peft src/peft/tuners/lora/bnb.py @ 5d602fdbf (lora.Linear4bit.forward)
  PEFTKB  huggingface/peft src/peft/utils/other.py @ 5d602fdbf (prepare_model_for_kbit_training)
  TRL     huggingface/trl trl/trainer/utils.py @ v0.12.0 (peft_module_casting_to_bf16), as
          trainmem's kbit_upcast "trl" reads it (core/src/estimate/trainmem_profile.cpp
          kbit_upcast_dtype)
  AC      pytorch/pytorch aten/src/ATen/autocast_mode.cpp (cached_cast: a lower-precision op's
          floating inputs cast to the autocast dtype; the cast of a leaf that requires grad is
          cached until the outermost autocast region exits) and autocast_mode.h (mm, matmul,
          linear, bmm in the CUDA lower-precision list)

What is allocated, in order (CUDA run; the same order here):
  load      Params4bit._quantize -> quantize_4bit(w, blocksize 64, compress_statistics,
            quant_storage uint8): the kernel's absmax fp32 [ceil(n/64)] and packed data
            quant_storage [(n + 1) // (2 * itemsize), 1]; get_4bit_type's NF4 code, fp32 [16],
            one per weight. With double quantisation (compress_statistics): offset =
            absmax.mean() (0-dim fp32), quantize_blockwise(absmax - offset, blocksize 256): a
            uint8 [ceil(n/64)] and an fp32 absmax [ceil(n/64/256)], and QuantState keeps
            `code.to(device, copy=True)`, a copy of the 256-entry dynamic map (fp32, 1,024 B),
            per weight; the fp32 absmax is then freed.
  forward   Linear4bit.forward: x.to(compute_dtype) (a copy when x is fp32), MatMul4Bit:
            dequantize_4bit (double quantisation first restores the absmax, a new fp32
            [ceil(n/64)], freed when it returns) -> the weight [out, in] in quant_state.dtype
            (the dtype it was quantised from, the compute dtype: .to(A.dtype) copies nothing),
            F.linear, the weight freed when forward returns; ctx.tensors as above; the output
            .to(inp_dtype) (a copy when x was fp32).
  backward  grad_A = grad_output @ dequantize_4bit(B).to(grad_output.dtype): the weight (and
            the absmax) again, beside grad_output and grad_A.
  kept      ctx.tensors is a Python attribute of the node: not released by the engine when the
            node has run (release_variables clears saved tensors only), so 0.41.0-0.43.1's A
            lives until the graph is dropped, which the Trainer does when training_step returns
            `loss.detach()` after backward, before the optimizer step.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

import models

NF4_BLOCK = 64       # Linear4bit's blocksize (Params4bit default)
DQ_BLOCK = 256       # quantize_4bit's nested quantize_blockwise(absmax - offset, blocksize=256)
DYNAMIC_MAP = 256    # create_dynamic_map(): 256 fp32 values (name2qmap["dynamic"])
NF4_CODE = 16        # get_4bit_type("nf4"): 16 fp32 values

# create_dynamic_map() is made once per process and device (functional.py name2qmap["dynamic"]).
_DYNAMIC = {}


def _dynamic_map():
    if "dynamic" not in _DYNAMIC:
        _DYNAMIC["dynamic"] = torch.linspace(-1.0, 1.0, DYNAMIC_MAP)
    return _DYNAMIC["dynamic"]


# ------------------------------------------------------------------------ the 4-bit weight ----

class QuantState:
    """bitsandbytes functional.QuantState: what a Params4bit carries besides its packed data."""

    def __init__(self, absmax, shape, dtype, code, offset=None, state2=None, blocksize=NF4_BLOCK):
        self.absmax, self.shape, self.dtype, self.code = absmax, shape, dtype, code
        self.offset, self.state2, self.blocksize = offset, state2, blocksize
        self.nested = state2 is not None

    def tensors(self):
        out = [self.absmax, self.code]
        if self.nested:
            out += [self.offset, self.state2.absmax, self.state2.code]
        return out


def quantize_4bit(w, compress_statistics, quant_storage=torch.uint8):
    """functional.quantize_4bit (FUN048) with blocksize 64, NF4: allocations only."""
    n = w.numel()
    blocks = -(n // -NF4_BLOCK)
    absmax = torch.empty(blocks, dtype=torch.float32)
    itemsize = torch.empty(0, dtype=quant_storage).element_size()
    packed = torch.zeros(((n + 1) // (itemsize * 2), 1), dtype=quant_storage)
    absmax.fill_(1.0)
    code = torch.linspace(-1.0, 1.0, NF4_CODE)  # get_4bit_type: torch.tensor(data), fp32
    if not compress_statistics:
        return packed, QuantState(absmax, tuple(w.shape), w.dtype, code)
    offset = absmax.mean()
    # quantize_blockwise(absmax - offset, blocksize=256): uint8 per element, fp32 per 256
    centred = absmax - offset
    qabsmax = torch.zeros_like(centred, dtype=torch.uint8)
    absmax2 = torch.empty(-(blocks // -DQ_BLOCK), dtype=torch.float32).fill_(1.0)
    state2 = QuantState(absmax2, (blocks,), torch.float32, _dynamic_map().clone(), blocksize=DQ_BLOCK)
    del centred, absmax
    return packed, QuantState(qabsmax, tuple(w.shape), w.dtype, code, offset, state2)


def dequantize_4bit(packed, qs):
    """functional.dequantize_4bit (FUN048): with double quantisation dequantize_blockwise
    restores the absmax (`torch.empty_like(A, dtype=float32)` in the CUDA kernel wrapper, then
    `absmax += offset`), then the weight `torch.empty(shape, dtype=quant_state.dtype)`; the
    restored absmax is freed when this returns. The weight's values here are random."""
    absmax = qs.absmax
    if qs.nested:
        absmax = torch.empty(qs.absmax.shape, dtype=torch.float32)
        absmax.fill_(0.0)
        absmax += qs.offset
    out = torch.empty(qs.shape, dtype=qs.dtype)
    fan_in = qs.shape[1]
    out.uniform_(-1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in))
    del absmax
    return out


class MatMul4Bit(torch.autograd.Function):
    """autograd/_functions.py MatMul4Bit. `keeps_input`: bitsandbytes 0.41.0-0.43.1 (BNB041)
    keep A on ctx; 0.43.2 on (BNB0432) do not."""

    @staticmethod
    def forward(ctx, A, B, quant_state, keeps_input):
        output = F.linear(A, dequantize_4bit(B, quant_state).to(A.dtype))
        ctx.state = quant_state
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            ctx.tensors = (A, B) if keeps_input else (None, B)
        else:
            ctx.tensors = (None, None)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        _, B = ctx.tensors
        grad_A = None
        if ctx.needs_input_grad[0]:
            grad_A = torch.matmul(grad_output, dequantize_4bit(B, ctx.state).to(grad_output.dtype))
        return grad_A, None, None, None


class Linear4bit(nn.Module):
    """bitsandbytes nn.Linear4bit (MOD048) holding a Params4bit (a frozen Parameter of the packed
    data) and its QuantState; compute_dtype as transformers sets it (bnb_4bit_compute_dtype)."""

    def __init__(self, linear, compute_dtype, double_quant, keeps_input):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        packed, qs = quantize_4bit(linear.weight.data, double_quant)
        self.weight = nn.Parameter(packed, requires_grad=False)
        self.quant_state = qs
        self.compute_dtype = compute_dtype
        self.keeps_input = keeps_input

    def forward(self, x):
        inp_dtype = x.dtype
        if self.compute_dtype is not None:
            x = x.to(self.compute_dtype)
        # matmul_4bit: MatMul4Bit.apply for a matrix input on CUDA (the gemv path is for a
        # single token without grad)
        return MatMul4Bit.apply(x, self.weight, self.quant_state, self.keeps_input).to(inp_dtype)


def quant_state_tensors(model):
    """Every QuantState tensor of the model (they are plain attributes, not buffers), each storage
    once; the dynamic map's process-wide original is not the model's."""
    out = []
    for m in model.modules():
        if isinstance(m, Linear4bit):
            out += m.quant_state.tensors()
    return out


# ------------------------------------------------------------------------------ PEFT's layer ----

class PeftLoraLinear4bit(nn.Module):
    """PEFT lora.bnb.Linear4bit.forward (PEFTBNB): result = base_layer(x); result =
    result.clone(); under autocast (the Trainer's bf16) no cast of x, the adapter's F.linear
    casts; otherwise x is cast to the adapter's dtype and the output back. Adapters fp32 (PEFT's
    autocast_adapter_dtype)."""

    def __init__(self, base, r, alpha, p):
        super().__init__()
        self.base_layer = base
        self.lora_dropout = models.Dropout(p) if p > 0 else nn.Identity()
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.normal_(self.lora_B.weight, std=0.02)
        self.scaling = alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        result = result.clone()
        requires_conversion = not autocast_enabled()
        if requires_conversion:
            expected_dtype = result.dtype
            if x.dtype != self.lora_A.weight.dtype:
                x = x.to(self.lora_A.weight.dtype)
        output = self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        if requires_conversion:
            output = output.to(expected_dtype)
        return result + output


# ---------------------------------------------------------------- the Trainer's bf16 autocast ----

# autocast_mode.h: the CUDA lower-precision ops the reference models call.
_LOWER = {"linear", "matmul", "mm", "bmm", "__matmul__", "addmm", "baddbmm"}
_STATE = {"depth": 0, "cache": {}, "mode": None}


def autocast_enabled():
    return _STATE["depth"] > 0


class _AutocastBf16(TorchFunctionMode):
    """CUDA autocast's cached_cast for the lower-precision ops: every floating argument not bf16
    is cast (aten::_to_copy); a leaf that requires grad is cast once per outermost region."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") not in _LOWER:
            return func(*args, **kwargs)
        cache = _STATE["cache"]

        def cast(t):
            if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.dtype == torch.bfloat16:
                return t
            if t.is_leaf and t.requires_grad:
                key = id(t)
                if key not in cache:
                    cache[key] = (t, t.to(torch.bfloat16))
                return cache[key][1]
            return t.to(torch.bfloat16)
        return func(*[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})


class autocast_bf16:
    """`with autocast_bf16():` as torch.autocast("cuda", torch.bfloat16) for the ops above;
    nested regions share the outermost's cache, cleared when it exits."""

    def __enter__(self):
        if _STATE["depth"] == 0:
            _STATE["mode"] = _AutocastBf16()
            _STATE["mode"].__enter__()
        _STATE["depth"] += 1

    def __exit__(self, *exc):
        _STATE["depth"] -= 1
        if _STATE["depth"] == 0:
            _STATE["mode"].__exit__(*exc)
            _STATE["mode"] = None
            _STATE["cache"].clear()
        return False


class _AutocastLayer(nn.Module):
    """A decoder layer whose forward runs under the autocast of its caller: torch.utils.checkpoint
    records the autocast state of the forward and recomputes under it (a region of its own)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, *args):
        with autocast_bf16():
            return self.layer(*args)


# ------------------------------------------------------------------------------- the model ----

class QLoRALlamaForCausalLM(models.HFLlamaForCausalLM):
    """models.HFLlamaForCausalLM as a QLoRA run has it; its forward runs under the Trainer's bf16
    autocast (accelerate wraps model.forward in torch.autocast when the Trainer has bf16)."""

    def forward(self, input_ids, attention_mask, labels):
        with autocast_bf16():
            return super().forward(input_ids, attention_mask, labels)


QUANT_SKIP = {"lm_head", "gate"}  # transformers keeps lm_head unquantised; the MoE router as trainmem does


def build(cfg):
    """from_pretrained(torch_dtype=bf16, BitsAndBytesConfig(load_in_4bit, nf4, compute bf16,
    bnb_4bit_use_double_quant)) -> prepare_model_for_kbit_training (kbit_upcast peft; trl then
    casts norms fp32 and embed_tokens / lm_head back to bf16; none: not called) ->
    get_peft_model (adapters fp32, PEFT's autocast_adapter_dtype)."""
    q = cfg["qlora"]
    torch.manual_seed(cfg["seed"])
    model = QLoRALlamaForCausalLM(cfg)
    model.to(torch.bfloat16)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear) and name not in QUANT_SKIP:
                setattr(parent, name, Linear4bit(child, torch.bfloat16, q["double_quant"], q["keeps_input"]))
    if q["upcast"] in ("peft", "trl"):
        # PEFTKB: every fp16/bf16 parameter that is not a Params4bit to fp32
        for p in model.parameters():
            if p.dtype in (torch.float16, torch.bfloat16):
                p.data = p.data.to(torch.float32)
    if q["upcast"] == "trl":
        for name, module in model.named_modules():
            if "norm" in name:
                module.to(torch.float32)
            elif any(k in name for k in ("lm_head", "embed_tokens")) and module.weight.dtype == torch.float32:
                module.to(torch.bfloat16)
    for p in model.parameters():
        p.requires_grad_(False)
    wanted = set(cfg["lora_targets"])
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if name in wanted and isinstance(child, Linear4bit):
                setattr(parent, name, PeftLoraLinear4bit(child, cfg["lora_rank"], 2.0 * cfg["lora_rank"], cfg["lora_dropout"]))
    model.layers = nn.ModuleList([_AutocastLayer(layer) for layer in model.layers])
    model.train()
    return model


def trainmem_fields(cfg):
    """The QLoRA fields of trainmem's config for a draw (docs/fields.md)."""
    q = cfg["qlora"]
    return {"peft": "qlora", "params_dtype": "nf4", "compute_dtype": "bf16",
            "kbit_upcast": q["upcast"], "nf4_double_quant": q["double_quant"],
            "bnb_keeps_matmul_input": q["keeps_input"]}


# ---------------------------------------------------------------------------------- the draws ----

ATTENTION_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLP_TARGETS = ["gate_proj", "up_proj", "down_proj"]
UPCASTS = ["none", "peft", "trl"]


def draw(seed, j):
    """QLoRA draw j of a seed, from a generator of its own (no other draw changes): transformers'
    Llama (dense) or its Mixtral block (MoE, adapters on the attention), bf16 compute, adapters
    on some linears, kbit_upcast none / peft / trl in turn, double quantisation every other
    draw, checkpointing on the second pair of every four, bitsandbytes before or after 0.43.2."""
    import random
    import oracle
    rng = random.Random(f"qlora-{seed}-{j}")
    hidden, heads, head_dim = oracle.shape(rng)
    moe = j % 2 == 1
    gqa = [g for g in range(1, heads) if heads % g == 0]
    kv = rng.choice(gqa) if gqa and rng.random() < 0.5 else heads
    cfg = {
        "seed": seed * 1000 + 500 + j, "impl": "hf-transformers",
        "hidden": hidden, "heads": heads, "kv_heads": kv, "head_dim": head_dim,
        "ffn": 8 * round(rng.uniform(1.5 * hidden, 4 * hidden) / 8),
        "vocab": rng.randint(100, 600), "layers": rng.randint(1, 3),
        "seq": 8 * rng.randint(2, 12), "batch": rng.randint(1, 2),  # E | T·K: even routing
        "attention_dropout": 0.0, "checkpoint": (j // 2) % 2 == 1,
        "peft": "lora", "dtype": "bf16", "ce_chunks": 1, "experts": 0,
    }
    if moe:
        cfg["experts"] = rng.choice([4, 8])
        cfg["top_k"] = rng.choice([1, 2])
        cfg["expert_ffn"] = 8 * round(rng.uniform(0.5 * hidden, 2 * hidden) / 8)
        cfg["ffn"] = cfg["expert_ffn"]
    pool = ATTENTION_TARGETS if moe else ATTENTION_TARGETS + MLP_TARGETS
    k = rng.randint(1, len(pool))
    cfg["lora_targets"] = sorted(rng.sample(pool, k), key=pool.index)
    cfg["lora_rank"] = rng.choice([2, 4, 8, 16])
    cfg["lora_dropout"] = rng.choice([0.0, 0.05])
    cfg["qlora"] = {"upcast": UPCASTS[j % 3], "double_quant": j % 2 == 0 if j % 4 < 2 else j % 2 == 1,
                    "keeps_input": rng.random() < 0.5}
    return "qlora-moe" if moe else "qlora", cfg


def trainmem_config(cfg):
    """oracle.trainmem_config's run with the QLoRA fields (trainmem_fields)."""
    import oracle
    t = oracle.trainmem_config(dict(cfg, dtype="fp32"))
    t.update(trainmem_fields(cfg))
    return t
