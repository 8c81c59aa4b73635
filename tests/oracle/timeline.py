#!/usr/bin/python3
"""The allocation timeline oracle: every allocation and free of a whole training step, for the
trace oracle's reference models (models.py) and random configs (oracle.py's draws), on the CPU
with Debian's python3-torch 1.13.

Run:  /usr/bin/python3 tests/oracle/timeline.py [--n 24] [--seed 13] [--qlora 4] [--out FILE] [--check-hand]

How it records. One step (the batch copied in, forward + loss, backward, AdamW step,
zero_grad(set_to_none=True)) runs under torch.profiler with profile_memory=True. 1.13's
profiler records the CPU allocator's every allocation and free as a "[memory]" node of
kineto_results.experimental_event_tree(), with its pointer, its exact size (alloc_size, negative
on free) and the profiler's running total, nested under the op that made it (so the op at the
peak is exact, not guessed from timestamps). The running total checks the order: the sum of the
sizes up to an event equals its total_allocated (asserted). Before the profiled step one step
runs unprofiled so that the AdamW states exist; the gradients are freed by zero_grad as the
2.x default set_to_none does (torch/optim/optimizer.py; 1.13's default is still False, so it is
passed explicitly). Live bytes at any event = what was allocated before the step (the module's
parameters and buffers and the AdamW states, counted by storage) + the running sum.

Phase marks: a uint8 allocation of a size no model tensor has (MARK + k bytes), freed at once,
taken out of the list again; one of them is made in a gradient hook on the final norm's input, so
that it falls where the last decoder layer's backward starts (after the loss's and the output
layer's backward, the loss chunk's saved tensors freed).

Moments (what trainmem's Moments compare with, core/src/estimate/trainmem_profile.cpp
evaluate_stage):
  forward         the most live from the start of the step to the last decoder layer's backward:
                  the forward, the loss, and the loss's and output layer's backward
                  (trainmem: model state without gradients + saved activations + the loss's
                  transients)
  backward        the most live during the decoder layers' backward (trainmem: the larger of the
                  last layer's and, gradients freed between steps, the first layer's candidate)
  optimizer_step  the most live during optimizer.step() (trainmem: model state + torch.optim
                  temporaries), for-loop and foreach AdamW each in its own step
plus end_of_forward (live when the model returns the loss), the peak and the op at each.

Two timelines: "torch113" as measured, and "current": the same events edited for what current
PyTorch does differently, each edit named and sized:
  * rmsnorm_x2: 1.13's mean.dim backward keeps its input (derivatives.yaml of 1.13), so x² of each
    RMSNorm lives until that norm's backward; current PyTorch's mean_backward keeps sizes only
    (pytorch/pytorch@d327a787782618826890c323f8d7e51f3d28ec13 tools/autograd/derivatives.yaml,
    as measure.py's TORCH113_ONLY), so the temporary is freed when `mean` returns: each
    forward (and recomputed) aten::pow allocation's free is moved to just after the next
    aten::mean's output.
  * foreach_denom: 1.13's _multi_tensor_adamw writes `denom = torch._foreach_add(exp_avg_sq_sqrt,
    eps)`, a second list the size of the whole group; current PyTorch adds eps in place
    (torch/optim/adam.py @ dc80ccded5385cca3e777472d64cfe3d874fad89, _multi_tensor_adam:
    `torch._foreach_add_(exp_avg_sq_sqrt, eps)`): the allocations of aten::_foreach_add (not
    the in-place aten::_foreach_add_) in the optimizer step are taken out.
  * cpu_rng_state: torch.utils.checkpoint (preserve_rng_state, the default) keeps
    `torch.get_rng_state()` per checkpointed layer from its forward to its backward, and its
    recomputation takes another while it runs (torch/utils/checkpoint.py @
    dc80ccded5385cca3e777472d64cfe3d874fad89: fwd_cpu_state = torch.get_rng_state(); the
    recompute forks the RNG with torch.random.fork_rng). That is the CPU generator's state, a
    5,056-byte CPU ByteTensor, in host memory on a CUDA run as well (the CUDA generator's state,
    torch.cuda.get_rng_state(), is a CPU ByteTensor too): with checkpointing, allocations of
    exactly that size made outside any aten op (get_rng_state copies the generator's state in
    C++ without dispatching one; every model tensor is made under an aten op) are taken out.
  * scalars: allocations of 8 bytes or fewer (Python numbers wrapped as 0-dim CPU tensors, which
    stay on the CPU in a CUDA run; the loss and nll_loss's total_weight, 4 B each) are taken out
    and their largest live sum reported.

  * gemm scratch (QLoRA draws only): 1.13's oneDNN bf16 GEMM takes a scratch buffer inside
    aten::mm and frees it before returning (gemm_scratch); cuBLAS's workspace is trainmem's
    workspace_bytes, 0 in the comparison.
  * promotion copies: an elementwise op on operands of two dtypes (fp32 + bf16 under fp32 norms,
    a float tensor times native_dropout's bool mask) makes, on the CPU only, a copy of the other
    operand in the common dtype before its loop (aten/src/ATen/TensorIterator.cpp
    compute_types: "Creates temporaries for CPU operations" under `common_device == kCPU`,
    `op.tensor().to(common_dtype_)`); CUDA kernels cast while they read (dynamic casting), so
    the allocations of an aten::to called inside such an op (promotion_copies) are taken out.
  * early stop: the non-reentrant checkpoint runs as current PyTorch's, which stops recomputing
    once the last saved tensor is packed (checkpoint_early_stop); 1.13's re-runs the whole layer.

QLoRA draws (--qlora K, 4 by default, ids q00...): bnb.py's bitsandbytes stand-in on the
transformers model, drawn after the others from a generator of their own (no other draw changes);
their step returns `loss.detach()` after backward as transformers' Trainer.training_step does
(the graph, and what MatMul4Bit keeps on ctx, is gone before the optimizer step); their weights
include each Linear4bit's QuantState (plain attributes, not buffers); no evaluation step.

Named, not edited (reported per moment for the comparison to subtract): batch (the input tensors
the loop holds that no autograd node keeps: HF's Trainer holds input_ids, attention_mask and
labels until compute_loss returns and `del inputs` before backward; torchtune's recipe pops the
labels and holds the batch dict, so the tokens, through backward) and buffers (rope caches,
inv_freq: module buffers, in every moment).
"""
import argparse
import json
import random
import sys
import time
import weakref
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import bnb  # noqa: E402
import models  # noqa: E402
import oracle  # noqa: E402

MARK = 7_777_701  # phase marks: MARK + k bytes (no model tensor has this size: odd, > every draw's)
PHASES = ["step", "forward", "forward_end", "last_layer_backward", "backward_end", "optimizer_end", "step_end",
          "foreach_end"]
# The evaluation step's marks (a profile of its own, after the training step): the forward starts,
# LlamaModel.forward has returned (the decoder layers and the final norm are done, its locals
# gone), the forward has returned.
EVAL_PHASES = ["eval", "eval_loss", "eval_end"]
SCALAR_MAX = 8


def storage_key(t):
    st = t.storage()
    return (st.data_ptr(), st.nbytes())


def unique_bytes(tensors):
    seen = {}
    for t in tensors:
        k = storage_key(t)
        seen[k] = k[1]
    return sum(seen.values())


# Whether the profiled step's forward has returned (mark 2), for measure's pack hook.
_PHASE = {"forward_done": False}


def mark(k):
    if k in (0, 2):
        _PHASE["forward_done"] = k == 2
    t = torch.empty(MARK + k, dtype=torch.uint8)
    del t


# ------------------------------------------------------------------------------ the recording ----

def op_chain(node):
    """Names of the ops enclosing an allocation node, innermost first."""
    out = []
    n = node.parent
    while n is not None:
        out.append(n.name)
        n = n.parent
    return out


def allocation_events(prof):
    """Every allocation and free in time order: dicts {size, ptr, total, chain}."""
    nodes = []

    def walk(n):
        if type(n.extra_fields).__name__ == "_ExtraFields_Allocation":
            nodes.append(n)
        for c in n.children:
            walk(c)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root)
    nodes.sort(key=lambda n: n.start_time_ns)
    events = []
    running = 0
    for n in nodes:
        ef = n.extra_fields
        if str(ef.device) != "cpu":
            continue
        running += ef.alloc_size
        events.append({"size": ef.alloc_size, "ptr": ef.ptr, "total": ef.total_allocated,
                       "chain": op_chain(n)})
    # The order is right when the running sum follows the profiler's own running total.
    offset = events[0]["total"] - events[0]["size"] if events else 0
    run = offset
    for e in events:
        run += e["size"]
        assert run == e["total"], "allocation events out of order"
    return events


def split_marks(events, phases=PHASES):
    """Takes the phase marks out; returns (events, {phase: index of the first event after it})."""
    out, at = [], {}
    i = 0
    while i < len(events):
        e = events[i]
        k = e["size"] - MARK
        if 0 <= k < len(phases) and i + 1 < len(events) and events[i + 1]["size"] == -e["size"] \
                and events[i + 1]["ptr"] == e["ptr"]:
            at[phases[k]] = len(out)
            i += 2
            continue
        out.append(e)
        i += 1
    return out, at


def pair_lifetimes(events):
    """For each allocation event index, the index of its free (None when it outlives the list)."""
    open_at, free_of = {}, {}
    for i, e in enumerate(events):
        if e["size"] > 0:
            open_at[e["ptr"]] = i
        else:
            j = open_at.pop(e["ptr"], None)
            if j is not None:
                free_of[j] = i
    return free_of


GEMM_OPS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm")


def gemm_scratch(events, free_of):
    """CPU only: 1.13's oneDNN GEMM for bf16 operands takes a scratch buffer inside the op
    (aten::mm allocates its output, then the buffer, and frees the buffer before it returns: at
    [30, 256] x [256, 568] in bf16, 33,536 B beside the 34,080-byte output). cuBLAS's workspace
    is trainmem's workspace_bytes (0 in the comparison). Such an allocation is one freed by the
    next event, within the same GEMM call (the same op chain)."""
    out = set()
    for i, e in enumerate(events):
        j = free_of.get(i)
        if e["size"] > 0 and j == i + 1 and e["chain"] and e["chain"][0] in GEMM_OPS \
                and events[j]["chain"] == e["chain"]:
            out.update((i, j))
    return out


# The elementwise ops built on TensorIterator whose CPU path copies an operand of another dtype.
PROMOTING_OPS = ("aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::sub", "aten::sub_",
                 "aten::div", "aten::div_", "aten::where", "aten::masked_fill", "aten::masked_fill_")


def promotion_copies(events, free_of):
    """CPU only: TensorIterator's input promotion (TensorIterator.cpp compute_types, under
    `common_device == kCPU`): an elementwise op whose operands differ in dtype copies the other
    one with `.to(common_dtype)` and frees the copy when it returns; on CUDA the kernel casts as
    it reads. Such an allocation is an aten::to (aten::_to_copy) whose caller is the op itself."""
    out = set()
    for i, e in enumerate(events):
        ch = e["chain"]
        if e["size"] > 0 and len(ch) >= 4 and ch[1] == "aten::_to_copy" and ch[2] == "aten::to" \
                and ch[3] in PROMOTING_OPS:
            out.add(i)
            if i in free_of:
                out.add(free_of[i])
    return out


def current_pytorch(events, at, rng_state_bytes=0, cpu_gemm_scratch=False):
    """The 1.13 events edited to what current PyTorch allocates on the device (see the module
    doc). `rng_state_bytes`: the size of torch.get_rng_state() when the model checkpoints its
    layers (those CPU tensors are taken out), else 0. `cpu_gemm_scratch`: take out the bf16 GEMM
    scratch buffers (gemm_scratch; the QLoRA draws)."""
    free_of = pair_lifetimes(events)
    opt_lo, opt_hi = at["optimizer_end"], at["foreach_end"]  # the foreach step
    drop, move = set(), {}
    if cpu_gemm_scratch:
        drop |= gemm_scratch(events, free_of)
    drop |= promotion_copies(events, free_of)
    for i, e in enumerate(events):
        if e["size"] <= 0 or i in drop:
            continue
        rng_copy = rng_state_bytes and e["size"] == rng_state_bytes and \
            not (e["chain"] and e["chain"][0].startswith("aten::"))
        if e["size"] <= SCALAR_MAX or rng_copy:
            drop.add(i)
            if i in free_of:
                drop.add(free_of[i])
            continue
        head = e["chain"][0] if e["chain"] else ""
        if head == "aten::pow" and not any("PowBackward" in c for c in e["chain"]) and i in free_of \
                and i + 1 < len(events) and events[i + 1]["size"] > 0 and events[i + 1]["chain"] \
                and events[i + 1]["chain"][0] == "aten::mean":
            # x² of an RMSNorm (its mean's output is the next allocation): freed right after it.
            # Only that pow: RsqrtBackward0's result.pow(3) is a temporary of its own (moving its
            # free to the next layer's mean kept 4·T B too long under checkpointing: seed 5 c12).
            move[free_of[i]] = i + 1
        # the CPU foreach kernels run one aten op per tensor under the _foreach_ op
        if "aten::_foreach_add" in e["chain"] and opt_lo <= i < opt_hi:
            drop.add(i)
            if i in free_of:
                drop.add(free_of[i])
    out = []
    moved_after = {}
    for src, dst in move.items():
        moved_after.setdefault(dst, []).append(events[src])
    new_at = {}
    for i, e in enumerate(events):
        for p, idx in at.items():
            if idx == i:
                new_at[p] = len(out)
        if i not in drop and i not in move:
            out.append(e)
        out.extend(moved_after.get(i, []))
    for p, idx in at.items():
        if idx >= len(events):
            new_at[p] = len(out)
    return out, new_at


def live_curve(events, base):
    live, out = base, []
    for e in events:
        live += e["size"]
        out.append(live)
    return out


def segment_peak(events, curve, lo, hi, base_before):
    """The largest live amount in events [lo, hi) and the op that reached it (live before lo if no
    event there raises it)."""
    best, where = base_before, None
    for i in range(lo, hi):
        if curve[i] > best:
            best, where = curve[i], i
    if where is None:
        return {"bytes": best, "op": None, "index": lo}
    ch = events[where]["chain"]
    node = next((c.split(": ", 1)[1] for c in ch if c.startswith("autograd::engine::evaluate_function: ")), None)
    return {"bytes": best, "op": ch[0] if ch else "(python)", "node": node,
            "allocation": events[where]["size"], "index": where + 1}


def live_at(curve, idx, base):
    return curve[idx - 1] if idx > 0 else base


def moments(events, at, base):
    curve = live_curve(events, base)
    n = len(events)
    last = at.get("last_layer_backward", at["backward_end"])
    m = {
        "end_of_forward": live_at(curve, at["forward_end"], base),
        "forward": segment_peak(events, curve, at["step"], last, live_at(curve, at["step"], base)),
        "backward": segment_peak(events, curve, last, at["backward_end"], live_at(curve, last, base)),
        "optimizer_step": segment_peak(events, curve, at["backward_end"], at["optimizer_end"],
                                       live_at(curve, at["backward_end"], base)),
        "optimizer_step_foreach": segment_peak(events, curve, at["optimizer_end"], at["foreach_end"],
                                               live_at(curve, at["optimizer_end"], base)),
        "peak": segment_peak(events, curve, 0, n, base),  # the whole step, both optimizer steps
        "after_backward": live_at(curve, at["backward_end"], base),
        "step_end": live_at(curve, at["step_end"], base),
    }
    m["last_layer_backward_start"] = live_at(curve, last, base)
    return m


# ------------------------------------------------------------- the non-reentrant checkpoint ----

class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once it has packed the last saved tensor."""


class _Holder:
    """What the checkpointed forward's pack hook hands autograd instead of a tensor (weakly
    referenced: it dies when the node holding it releases its saved variables)."""


def checkpoint_early_stop(function, *args):
    """torch.utils.checkpoint's non-reentrant mode as current PyTorch runs it, on torch 1.13.

    1.13's `_checkpoint_without_reentrant` (torch/utils/checkpoint.py) packs every tensor the
    checkpointed forward saves into a holder and, at the first unpack, re-runs the whole function,
    storing each recomputed tensor whose holder is still alive. Current PyTorch does the same but
    stops the recomputation as soon as the last saved tensor is packed (early stop, the default
    since 2.1: pytorch/pytorch torch/utils/checkpoint.py `_enable_checkpoint_early_stop = True`,
    `_recomputation_hook.pack_hook` raises `_StopRecomputationError` when `recomp_counter ==
    len(weak_holders)`), so whatever the layer computes after its last saving op (down_proj's
    forward when it saves nothing, the residual add) is not recomputed. This is 1.13's function
    with that stop; the CPU RNG state is kept and restored as both do (torch.get_rng_state, taken
    out of the timeline as cpu_rng_state). No CUDA state (the oracle runs on the CPU)."""
    fwd_cpu_state = torch.get_rng_state()
    weak_holders = []
    storage = weakref.WeakKeyDictionary()
    recomputed = [False]

    def pack(x):
        holder = _Holder()
        weak_holders.append(weakref.ref(holder))
        return holder

    def unpack(holder):
        if not recomputed[0]:
            recomputed[0] = True
            counter, stopped = [0], [False]

            def inner_pack(inner):
                index = counter[0]
                counter[0] += 1
                alive = weak_holders[index]()
                if alive is not None:
                    storage[alive] = inner.detach()
                if counter[0] == len(weak_holders):
                    stopped[0] = True
                    raise _StopRecomputation()

            def inner_unpack(packed):
                raise RuntimeError("the recomputation's graph is never run backward")

            with torch.random.fork_rng(devices=[]):
                torch.set_rng_state(fwd_cpu_state)
                with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(inner_pack, inner_unpack):
                    # 1.13 hands an exception raised in a pack hook back as a RuntimeError.
                    try:
                        function(*args)
                    except (_StopRecomputation, RuntimeError):
                        if not stopped[0]:
                            raise
        return storage[holder]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return function(*args)


# ---------------------------------------------------------------------------------- the step ----

def final_norm(model):
    return model.norm


def one_step(model, cfg, opt, inputs_src, marks, holder):
    """One training step as the loops run it. `holder` keeps the tensors the loop would."""
    if marks:
        mark(0)
    inputs = tuple(t.clone() for t in inputs_src)  # the batch, copied to the device
    if marks:
        mark(1)
    loss = model(*inputs)
    # fsdp_qlora's loop keeps the model's output (its logits) until after the optimizer step.
    output = getattr(model, "kept_output", None)
    model.kept_output = None
    if marks:
        mark(2)
    if cfg["impl"] == "hf-transformers":
        # Trainer.training_step: compute_loss returns, `del inputs`, then backward.
        del inputs
        kept = ()
    else:
        # torchtune recipe: labels popped from the batch; the batch dict (tokens) stays alive in
        # the loop through backward.
        kept = inputs[:1]
        del inputs
    loss.backward()
    if cfg["impl"] == "hf-transformers":
        # Trainer.training_step returns loss.detach(): the step's graph is freed before the
        # optimizer step (what reentrant checkpoint nodes hold in it goes with it), unless the loop
        # keeps the model's output, whose grad_fn keeps the graph.
        loss = loss.detach()
    if marks:
        mark(4)
    opt.step()
    if marks:
        mark(5)
        # The same step with foreach AdamW, on the same gradients and states (the bytes do not
        # depend on the values): one profiled step gives both implementations' optimizer moment.
        for group in opt.param_groups:
            group["foreach"] = True
        opt.step()
        for group in opt.param_groups:
            group["foreach"] = False
        mark(7)
    opt.zero_grad(set_to_none=True)
    del loss, kept, output
    if marks:
        mark(6)


def measure(cfg):
    torch.manual_seed(cfg["seed"])
    model = bnb.build(cfg) if cfg.get("qlora") else models.build(cfg)
    # transformers' gradient_checkpointing_kwargs {"use_reentrant": ...}: the draw's mode
    # (oracle.draw, checkpoint_reentrant); torchtune's and torchtitan's wrappers are non-reentrant.
    reentrant = bool(cfg.get("checkpoint_reentrant"))
    # The non-reentrant mode as current PyTorch runs it (checkpoint_early_stop: 1.13's recomputes
    # the whole layer, current PyTorch stops at the layer's last saved tensor).
    if reentrant:
        model.checkpoint_fn = lambda fn, *args: torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=True)
    else:
        model.checkpoint_fn = checkpoint_early_stop
    inputs_src = models.make_inputs(cfg)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-3, foreach=False)
    one_step(model, cfg, opt, inputs_src, False, None)  # makes the AdamW states

    armed = {"on": False}

    def pre(mod, inp):
        x = inp[0]
        if armed["on"] and x.requires_grad:
            def hook(g):
                mark(3)
            x.register_hook(hook)
    h = final_norm(model).register_forward_pre_hook(pre)

    params = list(model.parameters())
    buffers = list(model.buffers())
    states, steps = [], []
    for st in opt.state.values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                (steps if k == "step" else states).append(v)
    # A QLoRA model's weights include each Params4bit's QuantState (plain attributes, bnb.py).
    base = {"weights": unique_bytes(params + bnb.quant_state_tensors(model)), "buffers": unique_bytes(buffers),
            "optimizer_states": unique_bytes(states), "step_counters": unique_bytes(steps)}
    batch_keys = set()

    saved_ptrs = set()

    def pack(t):
        # The batch tensors are the loop's from their copy to the forward's end (transformers'
        # Trainer drops them before backward): only what the forward saves can be one of them. A
        # pointer saved later (a recomputation in backward) may be a freed batch tensor's address
        # reused, which excluded it from the batch by chance (seed 7 c14's labels, 784 B, in one
        # run and not in another).
        if not _PHASE["forward_done"]:
            saved_ptrs.add(t.storage().data_ptr())
        return t

    armed["on"] = True
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            one_step(model, cfg, opt, inputs_src, True, None)
    armed["on"] = False
    h.remove()
    events, at = split_marks(allocation_events(prof))
    missing = [p for p in PHASES if p != "last_layer_backward" and p not in at]
    assert not missing, f"phase marks not found: {missing}"
    at.setdefault("last_layer_backward", at["backward_end"])
    del batch_keys
    # What was allocated before the step: weights, buffers, AdamW states and step counters.
    before = base["weights"] + base["buffers"] + base["optimizer_states"] + base["step_counters"]
    raw = moments(events, at, before)
    rng = torch.get_rng_state().numel() if cfg["checkpoint"] else 0
    # oneDNN's bf16 GEMM scratch is CPU-only for every bf16 draw, not only QLoRA's (seed 21 c15: the
    # output layer's input-gradient mm took 74,880 B beside its 12,672-byte output).
    cur_events, cur_at = current_pytorch(events, at, rng, cpu_gemm_scratch=True)
    # The current-PyTorch timeline on the device: step counters stay on the CPU in PyTorch 2.x
    # (adam.py: torch.tensor(0.0, dtype=_get_scalar_dtype()) unless capturable or fused).
    cur = moments(cur_events, cur_at, before - base["step_counters"])
    cur["batch"] = batch_unsaved(cur_events, cur_at, cur, saved_ptrs)
    # _single_tensor_adam (torch/optim/adam.py @ dc80ccded5385cca3e777472d64cfe3d874fad89, and
    # 1.13's adamw.py alike): `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)` in
    # `for i, param in enumerate(params)`: the sqrt and the quotient of tensor i exist together,
    # and the previous iteration's denom is still bound to `denom` until the quotient is assigned.
    # So the step's temporaries peak at max_i (2·s_i + s_(i-1)), s in the optimizer's order.
    sizes = [opt.state[p]["exp_avg_sq"].numel() * opt.state[p]["exp_avg_sq"].element_size() for p in trainable]
    cur["forloop_rule"] = max(2 * s + (sizes[i - 1] if i else 0) for i, s in enumerate(sizes))
    cur["foreach_rule"] = sum(sizes)  # _foreach_sqrt of the whole group, then in place
    out = {"base": base, "torch113": raw, "current": cur,
           "events": len(events), "gradients": unique_bytes([p.grad for p in trainable if p.grad is not None])}
    settings = evaluation_settings(cfg)
    if settings:
        # The gradients are gone (zero_grad(set_to_none=True) ended the step); the step counters
        # stay on the CPU in PyTorch 2.x, so the device holds the weights, buffers and AdamW states.
        out["evaluation"] = measure_evaluation(model, cfg, settings, before - base["step_counters"])
    return out


def evaluation_settings(cfg):
    """The evaluation step a transformers run adds, drawn from a generator of its own (so that no
    other draw changes): per_device_eval_batch_size 1-4 and config.use_cache half the time. Only
    transformers' models under their own loss (trainmem's eval_micro_batch_size rules)."""
    if cfg["impl"] != "hf-transformers" or cfg["ce_chunks"] > 1 or cfg.get("qlora"):
        return None
    rng = random.Random(cfg["seed"] * 7 + 3)
    return {"batch": rng.choice([1, 2, 3, 4]), "kv_cache": rng.random() < 0.5}


def evaluate(model, inputs_src, marks):
    """transformers' Trainer.prediction_step (trainer.py @ 000945a9): model.eval() (evaluation_loop),
    the batch copied to the device, compute_loss under torch.no_grad(); the output and the batch
    are dropped when it returns. Called between steps, after zero_grad(set_to_none=True)."""
    model.eval()
    with torch.no_grad():
        inputs = tuple(t.clone() for t in inputs_src)
        if marks:
            mark(0)
        loss = model(*inputs)
        model.kept_output = None
        if marks:
            mark(2)
        del loss, inputs
    model.train()


def measure_evaluation(model, cfg, settings, before):
    """The evaluation step's allocations, profiled on their own after the training step: the
    peak of the decoder layers (from the forward's start to LlamaModel.forward's return) and of the
    output layer and the loss (from there to the forward's return), less the module buffers and
    the batch's own tensors (input ids, attention mask, labels: the loop's, as in the step) and
    0-dim scalars (which stay on the CPU in a CUDA run)."""
    ecfg = dict(cfg, batch=settings["batch"], eval_kv_cache=settings["kv_cache"])
    model.cfg = dict(model.cfg, eval_kv_cache=settings["kv_cache"])
    inputs_src = models.make_inputs(ecfg)
    batch = sum(t.numel() * t.element_size() for t in inputs_src)
    model.on_decoder_return = lambda: mark(1)
    evaluate(model, inputs_src, False)  # warm-up: lazily made buffers
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        evaluate(model, inputs_src, True)
    model.on_decoder_return = None
    model.cfg = dict(model.cfg, eval_kv_cache=False)
    raw, raw_at = split_marks(allocation_events(prof), EVAL_PHASES)
    missing = [p for p in EVAL_PHASES if p not in raw_at]
    assert not missing, f"evaluation marks not found: {missing}"
    # Scalars out, the marks' positions carried over to the shorter list.
    keep = [i for i, e in enumerate(raw) if abs(e["size"]) > SCALAR_MAX]
    events = [raw[i] for i in keep]
    at = {p: sum(1 for i in keep if i < idx) for p, idx in raw_at.items()}
    curve = live_curve(events, before)
    layers = segment_peak(events, curve, at["eval"], at["eval_loss"], live_at(curve, at["eval"], before))
    loss = segment_peak(events, curve, at["eval_loss"], at["eval_end"], live_at(curve, at["eval_loss"], before))
    return {"settings": settings, "batch": batch, "layers": layers, "loss": loss}


def batch_unsaved(events, at, m, saved_ptrs):
    """Per moment, the bytes of the batch copies (the allocations between the 'step' and
    'forward' marks) live then that no autograd node holds: what the loop holds beyond the saved
    token ids, which trainmem counts with the activations (until backward has run; in the
    optimizer step torchtune's batch dict still holds the tokens)."""
    free_of = pair_lifetimes(events)
    batch = [(i, events[i]) for i in range(at["step"], at["forward"]) if events[i]["size"] > 0]

    def at_index(idx):
        # after backward autograd holds nothing: a saved batch tensor still live is the loop's
        saved = saved_ptrs if idx < at["backward_end"] else set()
        return sum(e["size"] for i, e in batch
                   if i < idx and free_of.get(i, len(events)) >= idx and e["ptr"] not in saved)
    out = {"end_of_forward": at_index(at["forward_end"])}
    for k in ("forward", "backward", "optimizer_step", "optimizer_step_foreach", "peak"):
        out[k] = at_index(m[k]["index"])
    return out


# ------------------------------------------------------------------------------- hand check ----

def hand_check():
    """nn.Linear(256, 512, bias=False) on x [64, 256] fp32, MSE-like loss y.pow(2).mean(), AdamW
    for-loop. By hand, W = 512·256·4 = 524,288 B, exp_avg and exp_avg_sq the same each:
    before the step 3·524,288 = 1,572,864 B (+ the 4-byte step counter).
      batch copy x: 64·256·4 = 65,536; y = x Wᵀ: 64·512·4 = 131,072; y² (pow): 131,072
      (1.13 keeps it for mean's backward; current frees it after mean); mean: 4 B (a scalar).
    End of forward (current): 1,572,864 + 65,536 (x, kept by mm) + 131,072 (y, kept by pow)
      = 1,769,472 B (+ the scalar loss).
    Backward: mean's backward gives grad_y² (131,072), pow's gives grad_y (131,072, with a
      131,072 temporary 2·y in 1.13's pow_backward: grad * 2 * y.pow(1)), mm's the weight
      gradient (524,288). The most live at W's gradient: model state + x + grad_y + grad_W.
    Optimizer step (for-loop): + exp_avg_sq.sqrt() and its quotient: 2·524,288.
      1,572,864 + 524,288 (grad) + 1,048,576 = 3,145,728 B.
    The loss's backward (no decoder layer here, so the "forward" moment runs to the end of
    backward) peaks in pow's backward, 1.13's grad * (2 * y.pow(1)): model state + x + y (kept
    by pow) + grad_y² + y.pow(1) + 2·y + the product, 1,572,864 + 65,536 + 5·131,072
    = 2,293,760 B."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 512, bias=False)
    x_src = torch.randn(64, 256)
    opt = torch.optim.AdamW(lin.parameters(), lr=1e-3, foreach=False)

    def step(marks):
        if marks:
            mark(0)
        x = x_src.clone()
        if marks:
            mark(1)
        loss = lin(x).pow(2).mean()
        if marks:
            mark(2)
        del x
        loss.backward()
        if marks:
            mark(4)
        opt.step()
        if marks:
            mark(5)
        opt.zero_grad(set_to_none=True)
        del loss
        if marks:
            mark(6)
    step(False)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(True)
    events, at = split_marks(allocation_events(prof))
    at.setdefault("last_layer_backward", at["backward_end"])
    at.setdefault("foreach_end", at["optimizer_end"])
    before = 3 * 524_288 + 4
    cur_events, cur_at = current_pytorch(events, at)
    cur = moments(cur_events, cur_at, before - 4)
    expect = {"end_of_forward": 1_769_472, "forward": 2_293_760, "optimizer_step": 3_145_728}
    got = {"end_of_forward": cur["end_of_forward"], "forward": cur["forward"]["bytes"],
           "optimizer_step": cur["optimizer_step"]["bytes"]}
    return expect, got, cur


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", default="-")
    ap.add_argument("--qlora", type=int, default=4, help="QLoRA draws after the others (bnb.py)")
    ap.add_argument("--check-hand", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.check_hand:
        expect, got, cur = hand_check()
        print(json.dumps({"expect": expect, "got": got, "moments": cur}, indent=1))
        return 0 if expect == got else 1
    rng = random.Random(args.seed)
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    t0 = time.time()
    for i in range(args.n):
        kind, cfg = oracle.draw(rng, i, args.seed)
        line = {"id": f"c{i:02d}", "kind": kind, "config": cfg, "trainmem_config": oracle.trainmem_config(cfg)}
        line["timeline"] = measure(cfg)
        out.write(json.dumps(line) + "\n")
        out.flush()
    for j in range(args.qlora):
        kind, cfg = bnb.draw(args.seed, j)
        line = {"id": f"q{j:02d}", "kind": kind, "config": cfg, "trainmem_config": bnb.trainmem_config(cfg)}
        line["timeline"] = measure(cfg)
        out.write(json.dumps(line) + "\n")
        out.flush()
    print(f"timeline: {args.n} configs and {args.qlora} QLoRA in {time.time() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
