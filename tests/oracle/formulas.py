"""Saved-tensor formulas derived from the oracle's measurements, written as a symbolic walk of
each implementation's op sequence (models.py) with PyTorch's autograd save rules. The driver
checks, config by config, that these formulas give exactly the bytes the oracle measures: this
file is the specification a C++ model can follow (README.md states the same lists in closed form).

Autograd save rules used (tools/autograd/derivatives.yaml; a save happens only when the gradient
that needs it is required):
  mm / bmm (linear, matmul)  a @ b saves a if b requires grad, b if a requires grad
  mul (tensor * tensor)      saves other if self requires grad, self if other requires grad
  pow(x, 2), silu(x)         save x
  rsqrt, softmax, log_softmax save their result
  mean(dim)                  torch 1.13 only: saves its input (current PyTorch keeps sizes only)
  nll_loss                   saves target (int64) and a 0-dim total_weight
  embedding                  saves the int64 indices (when the table is trainable)
  native_dropout             saves the bool mask
  index (advanced indexing)  saves the int64 index tensors
  topk                       saves the int64 indices
  div_ (in place)            saves a copy of self and the divisor
  index_add_                 saves index and source
  cat, neg, add, views, reshape/clone copies, scalar mul: save no tensor (scalar mul saves a
  0-dim wrapped number, left out)
A tensor saved by several nodes (or through views) counts once.
"""
import itertools

_ids = itertools.count()


class T:
    """A symbolic tensor: element count, bytes per element, whether it requires grad."""

    def __init__(self, name, numel, bpe, rg, dtype):
        self.id = next(_ids)
        self.name, self.numel, self.bpe, self.rg, self.dtype = name, numel, bpe, rg, dtype
        self.width = None  # row width, for tensors fed to a linear layer

    @property
    def bytes(self):
        return self.numel * self.bpe


class Ledger:
    def __init__(self):
        self.saved = {}     # id -> (tensor, op, kind)

    def save(self, t, op, kind="activation"):
        if t is not None and t.id not in self.saved:
            self.saved[t.id] = (t, op, kind)

    def total(self, kind="activation"):
        return sum(t.bytes for t, _, k in self.saved.values() if k == kind)

    def rows(self):
        return [{"name": t.name, "op": op, "class": k, "dtype": t.dtype, "numel": t.numel, "bytes": t.bytes}
                for t, op, k in self.saved.values()]


class Walk:
    """The symbolic forward of one config. cfg as drawn by oracle.py."""

    def __init__(self, cfg):
        self.c = cfg
        self.L = Ledger()
        self.e = 4 if cfg["dtype"] == "fp32" else 2
        self.dt = cfg["dtype"]
        self.T = cfg["batch"] * cfg["seq"]
        self.lora = cfg["peft"] == "lora"
        self.targets = set(cfg.get("lora_targets") or [])
        self.saves = set(cfg.get("modules_to_save") or [])  # PEFT modules_to_save: trained copies
        self.shared = {}

    # -- helpers
    def new(self, name, numel, rg, bpe=None, dtype=None):
        return T(name, numel, bpe or self.e, rg, dtype or self.dt)

    def trainable(self, target=None):
        """Is a base weight trainable? Full fine-tuning: yes; LoRA: every base weight is frozen."""
        return not self.lora

    def linear(self, x, out_features, target, name):
        """nn.Linear (or a LoRA-wrapped one) on x of x.numel / T rows."""
        rows = x.numel // x.width
        w_rg = self.trainable() or target in self.saves
        if w_rg:
            self.L.save(x, f"{name}: MmBackward0.self (input)")
        out = self.new(f"{name}.out", rows * out_features, x.rg or w_rg)
        out.width = out_features
        if self.lora and target in self.targets:
            p, r = self.c["lora_dropout"], self.c["lora_rank"]
            xd = x
            if p > 0:
                if x.rg:
                    self.L.save(self.new(f"{name}.lora_dropout.mask", x.numel, True, 1, "bool"),
                                f"{name}.lora_dropout: NativeDropoutBackward0.result1 (mask)")
                xd = self.new(f"{name}.lora_dropout.out", x.numel, x.rg)
            self.L.save(xd, f"{name}.lora_A: MmBackward0.self (input)")
            a = self.new(f"{name}.lora_A.out", rows * r, True)
            self.L.save(a, f"{name}.lora_B: MmBackward0.self (r-wide input)")
            out.rg = True
        return out

    def rmsnorm(self, x, name, hf):
        """HF LlamaRMSNorm / torchtune RMSNorm (same saves, different op order)."""
        w_rg = self.trainable()
        rows = x.numel // x.width
        x32 = x if self.dt == "fp32" else self.new(f"{name}.input_fp32", x.numel, x.rg, 4, "fp32")
        if x32.rg:
            self.L.save(x32, f"{name}: PowBackward0.self (fp32 input)")
            self.L.save(self.new(f"{name}.x_squared", x.numel, True, 4, "fp32"),
                        f"{name}: MeanBackward1.self (x², torch 1.13 only)", "torch113_only")
            self.L.save(self.new(f"{name}.rstd", rows, True, 4, "fp32"), f"{name}: RsqrtBackward0.result (rstd)")
        normed = self.new(f"{name}.normed", x.numel, x32.rg)  # after the cast back to the input dtype
        if w_rg:
            self.L.save(normed, f"{name}: MulBackward0 (normalised input, before the weight)")
        out = self.new(f"{name}.out", x.numel, x.rg or w_rg)
        out.width = x.width
        return out

    # -- attention
    def hf_attention(self, x, rope):
        c, T_ = self.c, self.T
        a, g, k, s, b = c["heads"], c["kv_heads"], c["head_dim"], c["seq"], c["batch"]
        q = self.linear(x, a * k, "q_proj", "q_proj")
        kk = self.linear(x, g * k, "k_proj", "k_proj")
        v = self.linear(x, g * k, "v_proj", "v_proj")
        # rope: q * cos + rotate_half(q) * sin saves cos and sin (one [1, s, k] pair per model)
        for t in (q, kk):
            if t.rg:
                self.L.save(rope[0], "rope: MulBackward0.other (cos, shared by all layers)")
                self.L.save(rope[1], "rope: MulBackward0.other (sin, shared by all layers)")
        q_rg, k_rg, v_rg = q.rg, kk.rg, v.rg
        # bmm(q, k^T): the operands as bmm sees them: K and V expanded to a heads (repeat_kv's
        # reshape copies, or matmul's reshape to [b·a, s, k] copies). Exception: with one KV head
        # and b = 1 both reshapes are views (stride 0 over the heads), and bmm keeps the 1-head
        # tensors themselves.
        kv_heads_saved = 1 if (g == 1 and b == 1) else a
        if q_rg:
            self.L.save(self.new("attn.key_for_bmm", T_ * kv_heads_saved * k, k_rg), "attn: BmmBackward0.mat2 (k, a heads)")
        if k_rg:
            self.L.save(self.new("attn.query_for_bmm", T_ * a * k, q_rg), "attn: BmmBackward0.self (q after rope)")
        p_rg = q_rg or k_rg
        scores = b * a * s * s
        probs32 = self.new("attn.softmax_fp32", scores, p_rg, 4, "fp32")
        if p_rg:
            self.L.save(probs32, "attn: SoftmaxBackward0.result (fp32)")
        probs = probs32 if self.dt == "fp32" else self.new("attn.probs_cast", scores, p_rg)
        probs = self.attn_dropout(probs, p_rg)
        if p_rg:
            self.L.save(self.new("attn.value_for_bmm", T_ * kv_heads_saved * k, v_rg), "attn: BmmBackward0.mat2 (v, a heads)")
        if v_rg:
            self.L.save(probs, "attn: BmmBackward0.self (probabilities)")
        o_in = self.new("attn.context", T_ * a * k, p_rg or v_rg)
        o_in.width = a * k
        return self.linear(o_in, c["hidden"], "o_proj", "o_proj")

    def attn_dropout(self, probs, rg):
        p = self.c["attention_dropout"]
        if p <= 0:
            return probs
        if rg:
            self.L.save(self.new("attn.dropout_mask", probs.numel, True, 1, "bool"),
                        "attn: NativeDropoutBackward0.result1 (mask)")
        return self.new("attn.probs_dropped", probs.numel, rg)

    def tt_attention(self, x):
        c, T_ = self.c, self.T
        a, g, k, s, b = c["heads"], c["kv_heads"], c["head_dim"], c["seq"], c["batch"]
        q = self.linear(x, a * k, "q_proj", "q_proj")
        kk = self.linear(x, g * k, "k_proj", "k_proj")
        v = self.linear(x, g * k, "v_proj", "v_proj")
        # rope saves only views of its cache buffer; SDPA math: q * sqrt(scale), k^T * sqrt(scale)
        q_rg, k_rg, v_rg = q.rg, kk.rg, v.rg
        if q_rg:
            self.L.save(self.new("sdpa.key_scaled", T_ * a * k, k_rg), "sdpa_math: BmmBackward0.mat2 (k·√scale, a heads)")
        if k_rg:
            self.L.save(self.new("sdpa.query_scaled", T_ * a * k, q_rg), "sdpa_math: BmmBackward0.self (q·√scale)")
        p_rg = q_rg or k_rg
        probs = self.new("sdpa.softmax", b * a * s * s, p_rg)
        if p_rg:
            self.L.save(probs, "sdpa_math: SoftmaxBackward0.result")
        probs = self.attn_dropout(probs, p_rg)
        if p_rg:
            # expand(...).flatten(1, 2) and matmul's reshape are views when g = 1 and b = 1
            v_heads_saved = 1 if (g == 1 and b == 1) else a
            self.L.save(self.new("sdpa.value", T_ * v_heads_saved * k, v_rg), "sdpa_math: BmmBackward0.mat2 (v, a heads)")
        if v_rg:
            self.L.save(probs, "sdpa_math: BmmBackward0.self (probabilities)")
        o_in = self.new("attn.context", T_ * a * k, p_rg or v_rg)
        o_in.width = a * k
        return self.linear(o_in, c["hidden"], "o_proj", "output_proj")

    # -- MLP / MoE
    def swiglu(self, x, f, names=("gate_proj", "up_proj", "down_proj"), prefix="mlp"):
        gt = self.linear(x, f, "gate_proj", f"{prefix}.{names[0]}")
        if gt.rg:
            self.L.save(gt, f"{prefix}: SiluBackward0.self (gate output)")
        act = self.new(f"{prefix}.silu", gt.numel, gt.rg)
        up = self.linear(x, f, "up_proj", f"{prefix}.{names[1]}")
        if act.rg:
            self.L.save(up, f"{prefix}: MulBackward0.other (up output)")
        if up.rg:
            self.L.save(act, f"{prefix}: MulBackward0.self (silu output)")
        prod = self.new(f"{prefix}.product", gt.numel, act.rg or up.rg)
        prod.width = f
        return self.linear(prod, self.c["hidden"], "down_proj", f"{prefix}.{names[2]}")

    def moe(self, x):
        c, T_ = self.c, self.T
        E, K, fe, h = c["experts"], c["top_k"], c["expert_ffn"], c["hidden"]
        logits = self.linear(x, E, None, "moe.gate")
        rg = logits.rg
        if rg:
            self.L.save(self.new("moe.router_probs", T_ * E, True, 4, "fp32"), "moe: SoftmaxBackward0.result (fp32 router probs)")
            self.L.save(self.new("moe.topk_indices", T_ * K, True, 8, "int64"), "moe: TopkBackward0.indices")
            self.L.save(self.new("moe.topk_values", T_ * K, True, 4, "fp32"), "moe: DivBackward0.self (top-k probs before renormalising)")
            self.L.save(self.new("moe.topk_sum", T_, True, 4, "fp32"), "moe: DivBackward0.other (their sum)")
        # per expert: torch.where gives idx, top_x as two views of one int64 [n_e, 2] storage
        N = T_ * K
        self.L.save(self.new("moe.where_indices", N * 2, True, 8, "int64"), "moe: IndexBackward0 / IndexAddBackward0 indices (torch.where)")
        xin = self.new("moe.expert_input", N * h, x.rg)
        xin.width = h
        out = self.swiglu(xin, fe, ("w1", "w3", "w2"), "moe.expert")
        w = self.new("moe.routing_weight", N, rg)
        if out.rg:
            self.L.save(w, "moe: MulBackward0.other (routing weight per pair)")
        if w.rg:
            self.L.save(out, "moe: MulBackward0.self (expert output)")
        weighted = self.new("moe.weighted_output", N * h, out.rg or w.rg)
        if weighted.rg:
            self.L.save(weighted, "moe: IndexAddBackward0.source (weighted expert output)")
        res = self.new("moe.out", T_ * h, weighted.rg)
        res.width = h
        return res

    # -- the model
    def run(self):
        c, T_ = self.c, self.T
        h = c["hidden"]
        hf = c["impl"] == "hf-transformers"
        emb_rg = self.trainable() or "embed_tokens" in self.saves
        if emb_rg:
            self.L.save(self.new("input_ids", T_, True, 8, "int64"), "embedding: EmbeddingBackward0.indices")
        x = self.new("embeddings", T_ * h, emb_rg)
        x.width = h
        rope = None
        if hf:
            rope = (self.new("rope.cos", c["seq"] * c["head_dim"], False),
                    self.new("rope.sin", c["seq"] * c["head_dim"], False))
        ckpt_shared = None
        for i in range(c["layers"]):
            if c["checkpoint"]:
                inner = Walk(c)  # the layer's own graph: does its output need a gradient?
                inner.shared = self.shared
                out = inner.layer(x, rope, hf)
                if out.rg:
                    self.L.save(x, f"layers.{i}: checkpoint args (layer input)")
                    if hf:
                        if ckpt_shared is None:
                            ckpt_shared = (
                                self.new("causal_mask", c["batch"] * c["seq"] * c["seq"], False),
                                self.new("position_ids", c["seq"], False, 8, "int64"))
                        self.L.save(ckpt_shared[0], "checkpoint args: 4-D causal mask [b,1,s,s] (shared)")
                        self.L.save(ckpt_shared[1], "checkpoint args: position_ids / cache_position (shared)")
                        self.L.save(rope[0], "checkpoint args: cos (shared)")
                        self.L.save(rope[1], "checkpoint args: sin (shared)")
                x = out
            else:
                x = self.layer(x, rope, hf)
        x = self.rmsnorm(x, "norm", hf)
        return self.head(x, hf)

    def layer(self, x, rope, hf):
        c = self.c
        xn = self.rmsnorm(x, "input_norm", hf)
        att = self.hf_attention(xn, rope) if hf else self.tt_attention(xn)
        x1 = self.new("residual", x.numel, x.rg or att.rg)
        x1.width = x.width
        xn2 = self.rmsnorm(x1, "post_attention_norm", hf)
        m = self.moe(xn2) if c.get("experts", 0) > 0 else self.swiglu(xn2, c["ffn"])
        out = self.new("residual", x.numel, x1.rg or m.rg)
        out.width = x.width
        return out

    def head(self, x, hf):
        c, T_ = self.c, self.T
        V = c["vocab"]
        chunks = c.get("ce_chunks", 1)
        if chunks > 1 and not hf:
            return self.chunked_head(x, chunks)
        logits = self.linear(x, V, "lm_head", "lm_head")
        # logits.float() (a copy in bf16), log_softmax saves its fp32 result; nll_loss the targets
        if logits.rg and hf and c.get("transformers_loss") in ("shift-logits", "upcast-in-model"):
            # transformers 4.46-4.48: log_softmax of the b·(s-1) shifted rows; labels[..., 1:] is
            # contiguous when b = 1 (a view of the batch's [1, s] labels), a [b, s-1] copy otherwise
            rows = c["batch"] * (c["seq"] - 1)
            self.L.save(self.new("loss.log_softmax", rows * V, True, 4, "fp32"), "loss: LogSoftmaxBackward0.result (fp32)")
            n_labels = c["seq"] if c["batch"] == 1 else rows
            self.L.save(self.new("loss.labels", n_labels, False, 8, "int64"), "loss: NllLossBackward0.target (shifted labels)")
        elif logits.rg:
            self.L.save(self.new("loss.log_softmax", T_ * V, True, 4, "fp32"), "loss: LogSoftmaxBackward0.result (fp32)")
            # HF: pad(labels, (0, 1))[..., 1:].contiguous() is a view of the padded [b, s+1]
            # storage when b = 1, a [b, s] copy otherwise; torchtune: hstack makes [b, s]
            n_labels = c["seq"] + 1 if (hf and c["batch"] == 1) else T_
            self.L.save(self.new("loss.labels", n_labels, False, 8, "int64"), "loss: NllLossBackward0.target (shifted labels)")
        return self.L

    def chunked_head(self, x, n):
        """torchtune chunked_output + CEWithChunkedOutputLoss: h.chunk(n, dim=1) gives
        m = ceil(s / ceil(s / n)) chunks. A chunk [b, l, h] reshaped to [b·l, h] (F.linear's fold,
        and labels' reshape(-1)) is a view when b = 1 or l = 1 (or m = 1): its saver then keeps the
        whole storage, once; otherwise it is a copy of b·l rows."""
        c, T_ = self.c, self.T
        b, s, V, h = c["batch"], c["seq"], c["vocab"], c["hidden"]
        w_rg = self.trainable()
        size = -(-s // n)
        lengths = [size] * (s // size) + ([s % size] if s % size else [])
        whole_labels = self.new("loss.labels", T_, False, 8, "int64")
        for i, l in enumerate(lengths):
            view = b == 1 or l == 1 or len(lengths) == 1
            if w_rg:
                self.L.save(x if view else self.new(f"output.chunk{i}_input", b * l * h, x.rg),
                            "output (chunk): MmBackward0.self (input rows)")
            self.L.save(self.new(f"loss.log_softmax{i}", b * l * V, True, 4, "fp32"),
                        "loss (chunk): LogSoftmaxBackward0.result (fp32)")
            self.L.save(whole_labels if view else self.new(f"loss.labels{i}", b * l, False, 8, "int64"),
                        "loss (chunk): NllLossBackward0.target")
        return self.L


def saved_tensors(cfg):
    """(modern bytes, torch-1.13 bytes, rows) for one config."""
    w = Walk(cfg)
    L = w.run()
    return L.total("activation"), L.total("activation") + L.total("torch113_only"), L.rows()
