#!/usr/bin/python3
"""Reference vectors for the attention kernels and layers (tests/vectors/attention.json).

Computed in float64 with PyTorch (1.13), written from the math, not from
modelhost's code:
  * RoPE "neox": Hugging Face's rotate_half form, x*cos + rotate_half(x)*sin
    with cos/sin of the angles repeated over both halves.
  * RoPE "interleaved": Meta/llama2.c's complex form, consecutive pairs viewed
    as complex numbers and multiplied by exp(i*angle).
  * Frequencies theta^(-2i/D), optionally Llama 3 scaled (Hugging Face's rule)
    or linearly scaled.
  * Attention: dense score matrix, boolean mask (causal, sliding window),
    torch.softmax, grouped-query heads by repeat_interleave.
  * Llama block: RMSNorm -> attention -> residual -> RMSNorm -> SwiGLU -> residual.

Weights and inputs are drawn as float32 (so both sides use identical values)
and written with the shortest decimal that parses back to the same float32.

Run: /usr/bin/python3 tests/vectors/gen/attention.py  (writes tests/vectors/attention.json)
"""

import json
import math
import os

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(20240607)


def f32(shape, std=1.0, mean=0.0):
    return (mean + std * rng.standard_normal(shape)).astype(np.float32)


def dump32(a):
    out = []
    for v in np.asarray(a, dtype=np.float32).ravel():
        s = repr(float(v)) if v == 0 else str(v)  # numpy: shortest float32 repr
        x = float(s)
        assert np.float32(x) == v, (s, v)
        out.append(x)
    return out


def dump64(t):
    return [float("%.12g" % v) for v in t.detach().numpy().ravel()]


def T(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


# ---------------------------------------------------------------- RoPE

def frequencies(D, theta, scaling):
    inv = 1.0 / theta ** (torch.arange(0, D, 2) / D)
    if scaling is None:
        return inv
    if scaling.get("rope_type", scaling.get("type")) == "linear":
        return inv / scaling["factor"]
    factor = scaling["factor"]
    lo, hi = scaling["low_freq_factor"], scaling["high_freq_factor"]
    ctx = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > ctx / lo, inv / factor, inv)
    smooth = (ctx / wavelen - lo) / (hi - lo)
    blended = (1 - smooth) * inv / factor + smooth * inv
    medium = (wavelen >= ctx / hi) & (wavelen <= ctx / lo)
    return torch.where(medium, blended, scaled)


def rope(x, positions, theta, style, scaling):
    """x: [..., T, D] with positions of length T."""
    D = x.shape[-1]
    ang = torch.outer(torch.as_tensor(positions, dtype=torch.float64),
                      frequencies(D, theta, scaling))  # [T, D/2]
    if style == "neox":
        emb = torch.cat([ang, ang], dim=-1)
        half = D // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * emb.cos() + rot * emb.sin()
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], D // 2, 2).contiguous())
    cis = torch.polar(torch.ones_like(ang), ang)
    return torch.view_as_real(xc * cis).flatten(-2)


# ---------------------------------------------------------------- layers

def attention(x, w, cfg, prefix=""):
    B, Tn, d = x.shape
    H, Hkv = cfg["num_heads"], cfg.get("num_kv_heads", cfg["num_heads"])
    D = cfg.get("head_dim", d // H)

    def proj(name, inp):
        y = inp @ T(w[prefix + name + ".weight"]).T
        if prefix + name + ".bias" in w:
            y = y + T(w[prefix + name + ".bias"])
        return y

    q = proj("q_proj", x).view(B, Tn, H, D).transpose(1, 2)
    k = proj("k_proj", x).view(B, Tn, Hkv, D).transpose(1, 2)
    v = proj("v_proj", x).view(B, Tn, Hkv, D).transpose(1, 2)
    if cfg.get("use_rope", True):
        pos = list(range(Tn))
        args = (cfg.get("rope_theta", 10000.0), cfg.get("rope_style", "neox"),
                cfg.get("rope_scaling"))
        q = rope(q, pos, *args)
        k = rope(k, pos, *args)
    k = k.repeat_interleave(H // Hkv, dim=1)
    v = v.repeat_interleave(H // Hkv, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    i = torch.arange(Tn)[:, None]
    j = torch.arange(Tn)[None, :]
    allowed = torch.ones(Tn, Tn, dtype=torch.bool)
    if cfg.get("causal", True):
        allowed &= j <= i
    if cfg.get("sliding_window"):
        allowed &= (i - j) < cfg["sliding_window"]
    scores = scores.masked_fill(~allowed, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v  # [B, H, T, D]
    out = out.transpose(1, 2).reshape(B, Tn, H * D)
    return proj("o_proj", out)


def rms_norm(x, weight, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def block(x, w, cfg):
    eps = cfg.get("rms_norm_eps", 1e-6)

    def lin(name, inp):
        y = inp @ T(w[name + ".weight"]).T
        return y + T(w[name + ".bias"]) if name + ".bias" in w else y

    h = x + attention(rms_norm(x, T(w["input_layernorm.weight"]), eps), w, cfg,
                      "self_attn.")
    n = rms_norm(h, T(w["post_attention_layernorm.weight"]), eps)
    g = lin("mlp.gate_proj", n)
    m = torch.nn.functional.silu(g) * lin("mlp.up_proj", n)
    return h + lin("mlp.down_proj", m)


# ---------------------------------------------------------------- weights

def attention_weights(cfg, prefix=""):
    d, H = cfg["d_model"], cfg["num_heads"]
    Hkv = cfg.get("num_kv_heads", H)
    D = cfg.get("head_dim", d // H)
    bias = cfg.get("bias", False)
    w = {}
    for name, out_f, in_f in [("q_proj", H * D, d), ("k_proj", Hkv * D, d),
                              ("v_proj", Hkv * D, d), ("o_proj", d, H * D)]:
        w[prefix + name + ".weight"] = f32((out_f, in_f), 1 / math.sqrt(in_f))
        if cfg.get(name[0] + "_bias", bias):
            w[prefix + name + ".bias"] = f32((out_f,), 0.5)
    return w


def block_weights(cfg):
    d, f = cfg["d_model"], cfg["intermediate_size"]
    w = {"input_layernorm.weight": f32((d,), 0.2, 1.0)}
    w.update(attention_weights(cfg, "self_attn."))
    w["post_attention_layernorm.weight"] = f32((d,), 0.2, 1.0)
    for name, out_f, in_f in [("gate_proj", f, d), ("up_proj", f, d),
                              ("down_proj", d, f)]:
        w["mlp." + name + ".weight"] = f32((out_f, in_f), 1 / math.sqrt(in_f))
        if cfg.get("mlp_bias"):
            w["mlp." + name + ".bias"] = f32((out_f,), 0.3)
    return w


def case(name, cfg, batch, seq, kind):
    w = block_weights(cfg) if kind == "block" else attention_weights(cfg)
    x = f32((batch, seq, cfg["d_model"]))
    y = (block if kind == "block" else attention)(T(x), w, cfg)
    return {
        "name": name,
        "config": cfg,
        "weights": {k: {"shape": list(v.shape), "data": dump32(v)}
                    for k, v in w.items()},
        "input": {"shape": list(x.shape), "data": dump32(x)},
        "output": {"shape": list(y.shape), "data": dump64(y)},
    }


LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}

attention_cases = [
    case("gqa_neox", {"type": "multi_head_attention", "d_model": 16,
                      "num_heads": 4, "num_kv_heads": 2}, 2, 5, "attn"),
    case("mqa_interleaved_qkv_bias_head_dim", {
        "type": "mha", "d_model": 12, "num_heads": 4, "num_kv_heads": 1,
        "head_dim": 6, "rope_style": "interleaved", "rope_theta": 1000000.0,
        "q_bias": True, "k_bias": True, "v_bias": True}, 3, 4, "attn"),
    case("llama3_scaling", {"type": "multi_head_attention", "d_model": 32,
                            "num_heads": 2, "head_dim": 16,
                            "rope_scaling": LLAMA3}, 2, 6, "attn"),
    case("sliding_window_all_bias", {
        "type": "multi_head_attention", "d_model": 16, "num_heads": 4,
        "sliding_window": 3, "bias": True}, 2, 7, "attn"),
    case("bidirectional_no_rope", {
        "type": "multi_head_attention", "d_model": 16, "num_heads": 2,
        "causal": False, "use_rope": False}, 2, 5, "attn"),
    case("linear_scaling_interleaved", {
        "type": "multi_head_attention", "d_model": 16, "num_heads": 4,
        "num_kv_heads": 2, "rope_style": "interleaved",
        "rope_scaling": {"type": "linear", "factor": 2.0}}, 2, 5, "attn"),
]

block_cases = [
    case("llama", {"type": "transformer_block", "d_model": 16, "num_heads": 4,
                   "num_kv_heads": 2, "intermediate_size": 40,
                   "rms_norm_eps": 1e-5}, 2, 5, "block"),
    case("qwen2_like", {"type": "transformer_block", "d_model": 24,
                        "num_heads": 4, "num_kv_heads": 2, "head_dim": 8,
                        "intermediate_size": 56, "rope_theta": 1000000.0,
                        "rope_style": "interleaved", "q_bias": True,
                        "k_bias": True, "v_bias": True}, 3, 4, "block"),
    case("mistral_like", {"type": "transformer_block", "d_model": 16,
                          "num_heads": 2, "num_kv_heads": 1,
                          "intermediate_size": 32, "sliding_window": 2,
                          "mlp_bias": True, "rope_scaling": LLAMA3,
                          "rms_norm_eps": 1e-5}, 2, 6, "block"),
]

rope_positions = [0, 1, 5, 100, 1000, 4097]
rope_x = f32((2, len(rope_positions), 16))  # [heads, positions, D]
rope_cases = []
for style in ("neox", "interleaved"):
    for scaling in (None, {"rope_type": "linear", "factor": 4.0}, LLAMA3):
        theta = 10000.0 if scaling is not LLAMA3 else 500000.0
        y = rope(T(rope_x), rope_positions, theta, style, scaling)
        rope_cases.append({
            "style": style, "theta": theta, "scaling": scaling,
            "frequencies": dump64(frequencies(16, theta, scaling)),
            "output": dump64(y),
        })

out = {
    "generator": "tests/vectors/gen/attention.py (PyTorch %s, float64)" % torch.__version__,
    "rope": {"head_dim": 16, "heads": 2, "positions": rope_positions,
             "input": dump32(rope_x), "cases": rope_cases},
    "attention": attention_cases,
    "block": block_cases,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "attention.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
print("wrote", os.path.normpath(path), os.path.getsize(path), "bytes")
