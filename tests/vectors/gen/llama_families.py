#!/usr/bin/python3
"""Reference logits for tiny Llama-family checkpoints (tests/vectors/llama_families.json).

A float64 NumPy forward pass written from the Hugging Face modeling code's
math (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM), not from
modelhost's code:
  * embedding lookup; per block: RMSNorm (x / sqrt(mean(x^2) + eps) * w),
    q/k/v projections (+ biases where the family has them), RoPE in the
    rotate_half form (pairs i and i + d/2), grouped-query attention by
    repeating each key/value head, causal mask (and Mistral's sliding
    window: token i sees j when i - j < window), softmax, o projection,
    residual; RMSNorm, SwiGLU (down(silu(gate(x)) * up(x))), residual;
  * final RMSNorm and lm_head (the embedding matrix when tied);
  * rope frequencies theta^(-2i/d), with Hugging Face's linear and llama3
    rules (_compute_linear_scaling / _compute_llama3_parameters).

Weights are not random draws but a formula both sides can evaluate:
tensor t (in the listed order), element i (row-major):
    scale * sin(0.0137 i^2 + 0.731 i + 1.31 t)   (+ 1 for norm weights)
rounded to float32. The TypeScript test rebuilds them from the same formula.

Run: /usr/bin/python3 tests/vectors/gen/llama_families.py
"""

import json
import math
import os

import numpy as np

VOCAB, D, FF, LAYERS = 48, 32, 64, 2
PROMPT = [1, 5, 9, 13, 2, 7, 30, 47, 11, 3]

CASES = [
    {
        "name": "llama-gqa",
        "config": {"model_type": "llama", "num_attention_heads": 4, "num_key_value_heads": 2,
                   "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False},
    },
    {
        "name": "llama3-scaled-tied-headdim",
        "config": {"model_type": "llama", "num_attention_heads": 4, "num_key_value_heads": 1,
                   "head_dim": 16, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
                   "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                   "tie_word_embeddings": True},
    },
    {
        "name": "llama-biases-linear",
        "config": {"model_type": "llama", "num_attention_heads": 2, "num_key_value_heads": 2,
                   "attention_bias": True, "mlp_bias": True, "rms_norm_eps": 1e-6,
                   "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.0},
                   "tie_word_embeddings": False},
    },
    {
        "name": "mistral-window",
        "config": {"model_type": "mistral", "num_attention_heads": 4, "num_key_value_heads": 2,
                   "sliding_window": 3, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                   "tie_word_embeddings": False},
    },
    {
        "name": "qwen2-bias-tied",
        "config": {"model_type": "qwen2", "num_attention_heads": 4, "num_key_value_heads": 2,
                   "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
                   "use_sliding_window": False, "sliding_window": 4096},
    },
]


def full_config(c):
    out = {"vocab_size": VOCAB, "hidden_size": D, "intermediate_size": FF,
           "num_hidden_layers": LAYERS, "hidden_act": "silu", "max_position_embeddings": 256}
    out.update(c)
    return out


def tensor_list(cfg):
    """Names and shapes, in the order the weight formula numbers them."""
    hd = cfg.get("head_dim") or D // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    fam = cfg["model_type"]
    attn_bias = fam == "qwen2" or cfg.get("attention_bias", False)
    mlp_bias = cfg.get("mlp_bias", False)
    out = [("model.embed_tokens.weight", [VOCAB, D])]
    for n in range(LAYERS):
        p = f"model.layers.{n}."
        out.append((p + "input_layernorm.weight", [D]))
        for name, rows, cols in [("q", q, D), ("k", kv, D), ("v", kv, D), ("o", D, q)]:
            out.append((p + f"self_attn.{name}_proj.weight", [rows, cols]))
            if attn_bias and (name != "o" or fam != "qwen2"):
                out.append((p + f"self_attn.{name}_proj.bias", [rows]))
        out.append((p + "post_attention_layernorm.weight", [D]))
        for name, rows, cols in [("gate", FF, D), ("up", FF, D), ("down", D, FF)]:
            out.append((p + f"mlp.{name}_proj.weight", [rows, cols]))
            if mlp_bias:
                out.append((p + f"mlp.{name}_proj.bias", [rows]))
    out.append(("model.norm.weight", [D]))
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", [VOCAB, D]))
    return out


def weight(t, name, shape):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.float64)
    v = np.sin(0.0137 * i * i + 0.731 * i + 1.31 * t)
    if name.endswith("norm.weight"):
        v = 1.0 + 0.1 * v
    elif name.endswith(".bias"):
        v = 0.1 * v
    elif "embed_tokens" in name:
        v = 1.0 * v
    else:
        v = 0.25 * v
    return v.astype(np.float32).astype(np.float64).reshape(shape)


def inv_freq(cfg, hd):
    theta = cfg["rope_theta"]
    inv = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    s = cfg.get("rope_scaling")
    if s is None:
        return inv
    kind = s.get("rope_type", s.get("type"))
    if kind == "linear":
        return inv / s["factor"]
    assert kind == "llama3"
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    low_wl, high_wl = old / low, old / high
    wavelen = 2 * math.pi / inv
    llama = np.where(wavelen > low_wl, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * llama / factor + smooth * llama
    medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
    return np.where(medium, smoothed, llama)


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def forward(cfg, W, ids):
    T = len(ids)
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or D // H
    eps = cfg["rms_norm_eps"]
    window = cfg.get("sliding_window") if cfg["model_type"] == "mistral" else None
    freq = inv_freq(cfg, hd)
    ang = np.outer(np.arange(T, dtype=np.float64), freq)
    emb = np.concatenate([ang, ang], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    x = W["model.embed_tokens.weight"][ids]
    lin = lambda v, p: v @ W[p + ".weight"].T + (W[p + ".bias"] if p + ".bias" in W else 0)
    i_idx = np.arange(T)[:, None]
    j_idx = np.arange(T)[None, :]
    allowed = j_idx <= i_idx
    if window is not None:
        allowed &= (i_idx - j_idx) < window
    for n in range(LAYERS):
        p = f"model.layers.{n}."
        h = rms(x, W[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").reshape(T, H, hd).transpose(1, 0, 2)
        k = lin(h, p + "self_attn.k_proj").reshape(T, KV, hd).transpose(1, 0, 2)
        v = lin(h, p + "self_attn.v_proj").reshape(T, KV, hd).transpose(1, 0, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, H // KV, axis=0)
        v = np.repeat(v, H // KV, axis=0)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.where(allowed[None], s, -np.inf)
        s = s - s.max(-1, keepdims=True)
        a = np.exp(s)
        a = a / a.sum(-1, keepdims=True)
        o = (a @ v).transpose(1, 0, 2).reshape(T, H * hd)
        x = x + lin(o, p + "self_attn.o_proj")
        h = rms(x, W[p + "post_attention_layernorm.weight"], eps)
        g = lin(h, p + "mlp.gate_proj")
        u = lin(h, p + "mlp.up_proj")
        x = x + lin(g / (1 + np.exp(-g)) * u, p + "mlp.down_proj")
    x = rms(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return x @ head.T


def main():
    out = {"about": __doc__.strip().splitlines()[0], "prompt": PROMPT, "cases": []}
    for c in CASES:
        cfg = full_config(c["config"])
        tensors = tensor_list(cfg)
        W = {name: weight(t, name, shape) for t, (name, shape) in enumerate(tensors)}
        logits = forward(cfg, W, PROMPT)
        out["cases"].append({
            "name": c["name"],
            "config": cfg,
            "tensors": [{"name": n, "shape": s} for n, s in tensors],
            "logits": [[float("%.10g" % v) for v in row] for row in logits],
        })
    path = os.path.join(os.path.dirname(__file__), "..", "llama_families.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
