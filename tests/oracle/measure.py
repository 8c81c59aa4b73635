"""The measurer: what autograd keeps for backward after forward + loss, and the model-state bytes.

Saved activations: forward and loss run under torch.autograd.graph.saved_tensors_hooks. Every
tensor autograd saves passes through the pack hook; it is keyed by its storage (data_ptr, nbytes),
so a view, a transpose or a second saver of the same storage adds nothing, and a saved view keeps
its whole storage alive (counted whole). Storages of parameters and buffers are not activations.
0-dim tensors (Python scalars wrapped as CPU tensors by `x * 0.5`, nll_loss's total_weight) are
listed apart and left out of the total: a few bytes each.

torch.utils.checkpoint(use_reentrant=False) in 1.13 pushes its own hooks inside the checkpointed
region (they pack placeholders, not tensors), so the outer hooks do not see that region; what the
checkpoint keeps alive is its arguments, held by the closure of its unpack hook. The measurer
wraps torch.utils.checkpoint to record those arguments as saved tensors ("checkpoint.args").

Each saved tensor is named by the autograd node that saved it and the attribute (e.g.
MmBackward0._saved_self), found by walking the graph from the loss and reading each node's
_saved_* attributes through the unpack hook; nodes inside checkpointed regions are passed over
without reading (reading them would trigger recomputation).
"""
import collections

import torch
from torch.utils.checkpoint import checkpoint

DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16",
               torch.int64: "int64", torch.int32: "int32", torch.bool: "bool", torch.float64: "fp64",
               torch.uint8: "uint8"}


# Saves that torch 1.13 makes and current PyTorch does not: 1.13's mean.dim backward keeps its
# input (derivatives.yaml of 1.13 uses self for the element count); current derivatives.yaml
# (pytorch/pytorch@d327a787782618826890c323f8d7e51f3d28ec13) has mean_backward(grad,
# self.sym_sizes(), dim, self.sym_numel(), keepdim): sizes and a count, no tensor.
TORCH113_ONLY = {"MeanBackward1._saved_self"}


def storage_key(t):
    st = t.storage()
    return (st.data_ptr(), st.nbytes())


class Handle:
    __slots__ = ("index", "tensor")

    def __init__(self, index, tensor):
        self.index, self.tensor = index, tensor


class Measurer:
    def __init__(self, model):
        self.model = model
        self.entries = []          # one per pack call (and per checkpoint argument)
        self.module_stack = []
        self.recording = False
        self.unpacked = []
        self.ckpt_regions = []     # (output grad_fns, input grad_fns)
        self.param_keys = {storage_key(p) for p in model.parameters()}
        self.buffer_keys = {storage_key(b) for b in model.buffers()}
        self._hooks = []
        for name, mod in model.named_modules():
            self._hooks.append(mod.register_forward_pre_hook(self._pre(name)))
            self._hooks.append(mod.register_forward_hook(self._post()))
        model.checkpoint_fn = self._checkpoint

    # -- module path bookkeeping (forward only)
    def _pre(self, name):
        def hook(mod, inp):
            if self.recording:
                self.module_stack.append(name)
        return hook

    def _post(self):
        def hook(mod, inp, out):
            if self.recording and self.module_stack:
                self.module_stack.pop()
        return hook

    def _module(self):
        return self.module_stack[-1] if self.module_stack else ""

    # -- saved-tensor hooks
    def _classify(self, t):
        key = storage_key(t)
        if t.dim() == 0:
            return key, "scalar"
        if key in self.param_keys:
            return key, "parameter"
        if key in self.buffer_keys:
            return key, "buffer"
        return key, "activation"

    def _add(self, t, op, module):
        key, cls = self._classify(t)
        e = {"index": len(self.entries), "op": op, "module": module, "shape": list(t.shape),
             "dtype": DTYPE_NAMES.get(t.dtype, str(t.dtype)), "storage": key, "class": cls,
             "storage_bytes": key[1], "tensor": t}
        self.entries.append(e)
        return e

    def _pack(self, t):
        e = self._add(t, None, self._module())
        return Handle(e["index"], t)

    def _unpack(self, h):
        self.unpacked.append(h.index)
        return h.tensor

    def _checkpoint(self, fn, *args):
        module = self._module()
        tensors = []

        def collect(x):
            if isinstance(x, torch.Tensor):
                tensors.append(x)
            elif isinstance(x, (tuple, list)):
                for y in x:
                    collect(y)
        collect(args)
        out = checkpoint(fn, *args, use_reentrant=False)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        # The arguments stay alive only while some node of the region holds a packed placeholder:
        # a region whose output needs no gradient (a frozen layer below every adapter) built no
        # graph, and its arguments are freed.
        if any(isinstance(o, torch.Tensor) and o.requires_grad for o in outs):
            for t in tensors:
                self._add(t, "checkpoint.args", module)
        out_fns = {o.grad_fn for o in outs if isinstance(o, torch.Tensor) and o.grad_fn is not None}
        in_fns = {t.grad_fn for t in tensors if t.grad_fn is not None}
        self.ckpt_regions.append((out_fns, in_fns))
        return out

    # -- the run
    def forward_loss(self, inputs):
        self.recording = True
        with torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack):
            loss = self.model(*inputs)
        self.model.kept_output = None  # a loop's kept output is not a saved tensor
        self.recording = False
        self._name_ops(loss)
        return loss

    def _name_ops(self, loss):
        region_of = {}
        for out_fns, in_fns in self.ckpt_regions:
            for fn in out_fns:
                region_of[fn] = in_fns
        seen, stack = set(), [loss.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            if fn in region_of:
                # a checkpointed region: pass over it without touching saved attributes
                inputs, inner, inner_seen = region_of[fn], [fn], set()
                while inner:
                    g = inner.pop()
                    if g is None or g in inner_seen:
                        continue
                    inner_seen.add(g)
                    if g in inputs and g is not fn:
                        stack.append(g)
                        continue
                    inner.extend(nf for nf, _ in g.next_functions)
                continue
            for attr in dir(fn):
                if not attr.startswith("_saved_"):
                    continue
                self.unpacked.clear()
                try:
                    getattr(fn, attr)
                except RuntimeError:
                    continue
                for i in self.unpacked:
                    e = self.entries[i]
                    if e["op"] is None:
                        e["op"] = f"{type(fn).__name__}.{attr}"
            stack.extend(nf for nf, _ in fn.next_functions)
        self.unpacked.clear()

    def saved(self):
        """Entries with the bytes each adds: a storage counts once, at its first saver. A storage
        whose every saver is a torch-1.13-only save (TORCH113_ONLY) is class "torch113_only"."""
        savers = collections.defaultdict(list)
        for e in self.entries:
            savers[e["storage"]].append(e["op"] or "unnamed")
        first_of = {}
        out = []
        for e in self.entries:
            first = e["storage"] not in first_of
            first_of.setdefault(e["storage"], e["index"])
            r = {k: v for k, v in e.items() if k not in ("tensor", "storage")}
            r["op"] = r["op"] or "unnamed"
            if r["class"] == "activation" and all(op in TORCH113_ONLY for op in savers[e["storage"]]):
                r["class"] = "torch113_only"
            r["bytes"] = e["storage_bytes"] if (first and r["class"] in ("activation", "torch113_only")) else 0
            if not first:
                r["alias_of"] = first_of[e["storage"]]
            out.append(r)
        return out

    def close(self):
        for h in self._hooks:
            h.remove()


def unique_bytes(tensors):
    seen, total = set(), 0
    for t in tensors:
        k = storage_key(t)
        if k not in seen:
            seen.add(k)
            total += k[1]
    return total


def measure(model, inputs):
    """Forward + loss under the hooks, backward, one AdamW step. Returns the byte classes and the
    per-tensor list."""
    m = Measurer(model)
    loss = m.forward_loss(inputs)
    saved = m.saved()
    act = [e for e in saved if e["class"] == "activation"]
    saved_bytes = sum(e["bytes"] for e in act)
    t113 = sum(e["bytes"] for e in saved if e["class"] == "torch113_only")
    loss.backward()
    m.close()
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    weights = unique_bytes(params)
    grads = unique_bytes([p.grad for p in trainable if p.grad is not None])
    opt = torch.optim.AdamW(trainable, lr=1e-3, foreach=False)
    opt.step()
    moments, steps = [], []
    for st in opt.state.values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                (steps if k == "step" else moments).append(v)
    result = {
        "weights": weights,
        "trainable_weights": unique_bytes(trainable),
        "gradients": grads,
        "optimizer_states": unique_bytes(moments),
        "optimizer_step_counters": unique_bytes(steps),
        "saved_activations": saved_bytes,
        "saved_activations_torch113": saved_bytes + t113,
        "buffers": unique_bytes(list(model.buffers())),
        "parameter_count": sum(p.numel() for p in {id(p): p for p in params}.values()),
        "trainable_parameter_count": sum(p.numel() for p in trainable),
    }
    scalars = [e for e in saved if e["class"] == "scalar"]
    result["scalar_saves"] = {"count": len(scalars), "bytes": sum(e["storage_bytes"] for e in scalars)}
    by_op = collections.Counter()
    for e in act:
        by_op[e["op"]] += e["bytes"]
    return result, saved, dict(by_op)
