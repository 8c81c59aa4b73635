#!/usr/bin/python3
"""The trace oracle's driver: draws small random training configs (seeded), builds each reference
model (models.py), measures what autograd keeps and the model-state bytes (measure.py), checks the
derived formulas (formulas.py) against the measurement, and writes one JSON line per config.

Run with Debian's torch:  /usr/bin/python3 tests/oracle/oracle.py [--n 24] [--seed 13] [--out FILE]
                          [--no-tensors]

Each line: {"id", "kind", "config" (the oracle's own description), "trainmem_config" (trainmem's
field names: a ddp fp32 or pure-bf16 run on one device), "measured" (bytes per class),
"formula" (what formulas.py gives, and whether it matches), "saved_tensors" (one row per tensor
autograd saved: op, module, shape, dtype, bytes added, alias), "by_op" (bytes per saving node)}.
"""
import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep tests/oracle free of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import formulas  # noqa: E402
import measure  # noqa: E402
import models  # noqa: E402

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# The first ISSUE_CONFIGS draws are the case issue 13 item 11 describes: the eager Hugging Face
# Llama in fp32, dense, no dropout. The rest rotate through the other kinds.
ISSUE_CONFIGS = 8
KINDS = ["dense-mha", "dense-gqa", "moe", "lora", "checkpoint", "chunked-loss", "lora-checkpoint", "bf16"]


def shape(rng):
    head_dim = rng.choice([16, 32, 64])
    hidden = rng.choice([h for h in (64, 96, 128, 160, 192, 224, 256) if h % head_dim == 0])
    heads = hidden // head_dim
    return hidden, heads, head_dim


def draw(rng, i, seed):
    hidden, heads, head_dim = shape(rng)
    issue = i < ISSUE_CONFIGS
    kind = "hf-dense-fp32" if issue else KINDS[(i - ISSUE_CONFIGS) % len(KINDS)]
    gqa_divs = [g for g in range(1, heads) if heads % g == 0]
    if kind == "dense-mha" or not gqa_divs:
        kv = heads
    elif kind in ("dense-gqa",) or rng.random() < 0.5:
        kv = rng.choice(gqa_divs)
    else:
        kv = heads
    cfg = {
        "seed": seed * 1000 + i,
        "impl": "hf-transformers" if issue or kind == "moe" else rng.choice(["hf-transformers", "torchtune"]),
        "hidden": hidden, "heads": heads, "kv_heads": kv, "head_dim": head_dim,
        "ffn": 8 * round(rng.uniform(1.5 * hidden, 4 * hidden) / 8),
        "vocab": rng.randint(100, 1000), "layers": rng.randint(1, 4),
        "seq": rng.randint(16, 128), "batch": rng.randint(1, 3),
        "attention_dropout": 0.0 if issue else rng.choice([0.0, 0.0, 0.1]),
        "checkpoint": kind in ("checkpoint", "lora-checkpoint"),
        "peft": "lora" if kind in ("lora", "lora-checkpoint") else "none",
        "dtype": "bf16" if kind == "bf16" else "fp32",
        "ce_chunks": 1, "experts": 0,
    }
    if kind == "chunked-loss":
        cfg["impl"] = "torchtune"
        cfg["ce_chunks"] = rng.choice([2, 4, 8])
    if kind == "moe":
        cfg["experts"] = rng.choice([4, 8])
        cfg["top_k"] = rng.choice([1, 2])
        cfg["expert_ffn"] = 8 * round(rng.uniform(0.5 * hidden, 2 * hidden) / 8)
        cfg["ffn"] = cfg["expert_ffn"]
    if cfg["peft"] == "lora":
        k = rng.randint(1, len(LORA_TARGETS))
        cfg["lora_targets"] = sorted(rng.sample(LORA_TARGETS, k), key=LORA_TARGETS.index)
        if rng.random() < 0.2:
            cfg["lora_targets"].append("lm_head")
        cfg["lora_rank"] = rng.choice([2, 4, 8, 16])
        cfg["lora_dropout"] = rng.choice([0.0, 0.05])
        if cfg["impl"] == "hf-transformers":
            # PEFT's modules_to_save, drawn from a generator of its own so that the other draws
            # (and so every other config) stay as they were.
            save = random.Random(cfg["seed"]).choice([[], ["lm_head"], ["embed_tokens"], ["embed_tokens", "lm_head"]])
            save = [m for m in save if not (m == "lm_head" and "lm_head" in cfg["lora_targets"])]
            if save:
                cfg["modules_to_save"] = save
    if cfg["impl"] == "hf-transformers" and not issue:
        # transformers' three losses (transformers_loss) in turn, and a loop that keeps the model's
        # output half the time, from a generator of its own so that every other draw stays as it
        # was (the issue's configs keep the current loss and the Trainer's loop).
        own = random.Random(f"shifted-{cfg['seed']}")
        form = ["pad-labels", "shift-logits", "upcast-in-model"][i % 3]  # in turn: every form is drawn
        if form != "pad-labels":
            cfg["transformers_loss"] = form
        if own.random() < 0.5:
            cfg["model_output_kept"] = True
    if cfg["impl"] == "hf-transformers" and cfg["checkpoint"] and not issue:
        # transformers' own checkpoint mode (checkpoint_reentrant): gradient_checkpointing_enable
        # without kwargs is reentrant in every 4.x release, so half the checkpointed transformers
        # draws run it; a generator of its own, so that every other draw stays as it was.
        if random.Random(f"reentrant-{cfg['seed']}").random() < 0.5:
            cfg["checkpoint_reentrant"] = True
    return kind, cfg


def trainmem_config(cfg):
    """The run in trainmem's field names (docs/fields.md): framework ddp on one device is plain
    single-device PyTorch; fp32 everywhere, or pure bf16 (weights, gradients and AdamW moments in
    bf16, no master copy). Fields added by issue 13 (model_implementation, peft, lora_*,
    cross_entropy_chunks) are written when they say something."""
    bf16 = cfg["dtype"] == "bf16"
    t = {
        "profile": "trainmem", "framework": "ddp", "data_parallel_size": 1,
        "model_implementation": cfg["impl"],
        "num_layers": cfg["layers"], "hidden_size": cfg["hidden"],
        "num_attention_heads": cfg["heads"], "num_query_groups": cfg["kv_heads"],
        "kv_channels": cfg["head_dim"], "ffn_hidden_size": cfg["ffn"],
        "vocab_size": cfg["vocab"], "make_vocab_size_divisible_by": 1,
        "share_embeddings_and_output_weights": False,
        "gated_linear_unit": True, "activation_func": "silu", "normalization": "RMSNorm",
        "add_bias_linear": False,
        "seq_length": cfg["seq"], "micro_batch_size": cfg["batch"],
        "params_dtype": "bf16" if bf16 else "fp32", "compute_dtype": "bf16" if bf16 else "fp32",
        "optimizer": "adamw", "optimizer_implementation": "for-loop",
        "attention_backend": "unfused",
        "attention_dropout": cfg["attention_dropout"], "hidden_dropout": 0,
        "recompute_granularity": "full" if cfg["checkpoint"] else "none",
    }
    if bf16:
        t.update({"master_weights": False, "main_grads_dtype": "bf16",
                  "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"})
    if cfg["checkpoint"]:
        t.update({"recompute_method": "uniform", "recompute_num_layers": 1})
    if cfg["experts"]:
        t.update({"num_moe_experts": cfg["experts"], "moe_router_topk": cfg["top_k"],
                  "moe_ffn_hidden_size": cfg["expert_ffn"], "moe_layer_freq": 1})
    if cfg["peft"] == "lora":
        t.update({"peft": "lora", "lora_rank": cfg["lora_rank"],
                  "lora_target_modules": cfg["lora_targets"], "lora_dropout": cfg["lora_dropout"]})
        if cfg.get("modules_to_save"):
            t["lora_modules_to_save"] = cfg["modules_to_save"]
    if cfg["ce_chunks"] > 1:
        t["cross_entropy_chunks"] = cfg["ce_chunks"]
    if cfg.get("transformers_loss"):
        t["transformers_loss"] = cfg["transformers_loss"]
    if cfg.get("model_output_kept"):
        t["model_output_kept"] = True
    if cfg["checkpoint"]:
        t["checkpoint_reentrant"] = bool(cfg.get("checkpoint_reentrant"))
    return t


def run_one(kind, cfg, with_tensors):
    model = models.build(cfg)
    result, saved, by_op = measure.measure(model, models.make_inputs(cfg))
    f_modern, f_113, rows = formulas.saved_tensors(cfg)
    line = {
        "kind": kind,
        "config": cfg,
        "trainmem_config": trainmem_config(cfg),
        "measured": result,
        "formula": {"saved_activations": f_modern, "saved_activations_torch113": f_113,
                    "matches": f_modern == result["saved_activations"]
                    and f_113 == result["saved_activations_torch113"]},
        "by_op": by_op,
    }
    if with_tensors:
        line["saved_tensors"] = [
            {k: e[k] for k in ("index", "module", "op", "shape", "dtype", "class", "bytes")}
            | ({"alias_of": e["alias_of"]} if "alias_of" in e else {})
            for e in saved if e["class"] != "parameter"]
        line["formula_tensors"] = rows
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", default="-")
    ap.add_argument("--no-tensors", action="store_true", help="leave out the per-tensor lists")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    t0 = time.time()
    bad = 0
    for i in range(args.n):
        kind, cfg = draw(rng, i, args.seed)
        line = {"id": f"c{i:02d}"} | run_one(kind, cfg, not args.no_tensors)
        bad += not line["formula"]["matches"]
        out.write(json.dumps(line) + "\n")
        out.flush()
    print(f"oracle: {args.n} configs in {time.time() - t0:.1f} s; formulas.py "
          f"{'matches every one' if not bad else f'DIFFERS on {bad}'}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
