"""Reference vectors for attention with a key-padding mask
(tests/vectors/attention_mask.json), for tests/layers/attention_mask_test.ts
(and a bidirectional sliding window, as ModernBERT's local layers use).

Computed in float64 with PyTorch's own attention
(torch.nn.functional.scaled_dot_product_attention with a boolean mask,
True = may attend), not from modelhost's code: q/k/v projections with
biases, RoPE in Hugging Face's rotate_half ("neox") form, grouped-query
heads by repeat_interleave, then the output projection. The mask hides the
padded keys of each row (and, for causal cases, later keys). A query that
sees no key at all (left padding under a causal mask) comes out of PyTorch
as NaN; the vectors hold zeros there, which is what modelhost defines.

Weights and inputs are drawn as float32 and written with the shortest
decimal that parses back to the same float32.

Run: /work/refpy/bin/python tests/vectors/gen/attention_mask.py
(or /usr/bin/python3; writes tests/vectors/attention_mask.json)
"""

import json
import os

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(20261127)

D_MODEL, HEADS, KV_HEADS, THETA = 16, 4, 2, 10000.0
HEAD_DIM = D_MODEL // HEADS


def f32(shape, scale=0.5):
    return rng.uniform(-scale, scale, size=shape).astype(np.float32)


def short(a):
    return [float(np.format_float_positional(x, unique=True))
            for x in np.asarray(a, np.float32).ravel()]


def arr(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": short(a)}


def rope(x):
    # x [batch, heads, seq, dim]; positions 0 … seq−1 in every row
    seq = x.shape[2]
    inv = 1.0 / THETA ** (torch.arange(0, HEAD_DIM, 2) / HEAD_DIM)
    ang = torch.arange(seq)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    half = HEAD_DIM // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * torch.cos(ang) + rot * torch.sin(ang)


def case(name, causal, mask, bias, window=None):
    mask = np.array(mask, dtype=np.int64)
    batch, seq = mask.shape
    w = {}
    for p, (o, i) in {"q_proj": (HEADS * HEAD_DIM, D_MODEL),
                      "k_proj": (KV_HEADS * HEAD_DIM, D_MODEL),
                      "v_proj": (KV_HEADS * HEAD_DIM, D_MODEL),
                      "o_proj": (D_MODEL, HEADS * HEAD_DIM)}.items():
        w[f"{p}.weight"] = f32((o, i))
        if bias:
            w[f"{p}.bias"] = f32((o,))
    x = f32((batch, seq, D_MODEL), 1.0)
    t = {k: torch.tensor(v.astype(np.float64)) for k, v in w.items()}
    xt = torch.tensor(x.astype(np.float64))

    def lin(p, h):
        y = h @ t[f"{p}.weight"].T
        return y + t[f"{p}.bias"] if bias else y

    q = lin("q_proj", xt).view(batch, seq, HEADS, HEAD_DIM).transpose(1, 2)
    k = lin("k_proj", xt).view(batch, seq, KV_HEADS, HEAD_DIM).transpose(1, 2)
    v = lin("v_proj", xt).view(batch, seq, KV_HEADS, HEAD_DIM).transpose(1, 2)
    q, k = rope(q), rope(k)
    g = HEADS // KV_HEADS
    k = k.repeat_interleave(g, dim=1)
    v = v.repeat_interleave(g, dim=1)
    allowed = torch.tensor(mask != 0)[:, None, None, :].expand(batch, 1, seq, seq)
    if causal:
        allowed = allowed & torch.ones(seq, seq, dtype=torch.bool).tril()
    if window is not None:
        # not causal: key j visible to query i when |i − j| < window
        # (ModernBERT's local layers, distance ≤ local_attention / 2)
        i = torch.arange(seq)
        allowed = allowed & ((i[:, None] - i[None, :]).abs() < window)
    ctx = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed)
    ctx = torch.nan_to_num(ctx, nan=0.0)
    y = lin("o_proj", ctx.transpose(1, 2).reshape(batch, seq, HEADS * HEAD_DIM))
    config = {"type": "multi_head_attention", "d_model": D_MODEL,
              "num_heads": HEADS, "num_kv_heads": KV_HEADS, "causal": causal,
              "use_rope": True, "rope_theta": THETA, "rope_style": "neox",
              "bias": bias}
    if window is not None:
        config["sliding_window"] = window
    return {"name": name, "config": config,
            "weights": {k: arr(v) for k, v in w.items()},
            "input": arr(x), "mask": mask.ravel().tolist(),
            "output": {"shape": list(y.shape),
                       "data": [float(z) for z in y.numpy().ravel()]}}


cases = [
    # right and left padding, no causal mask (an encoder's batch)
    case("bidirectional", False,
         [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 0, 0, 0]],
         True),
    # right padding under a causal mask (a decoder's batch), and one left
    # padded row whose first queries see no key (zeros)
    case("causal", True,
         [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 1, 1, 1]],
         False),
    # a window on both sides (distance < 3) over right and left padding
    case("bidirectional window", False,
         [[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1, 1]],
         False, window=3),
]
out = os.path.join(os.path.dirname(__file__), "..", "attention_mask.json")
with open(out, "w") as f:
    json.dump({"generator": "tests/vectors/gen/attention_mask.py",
               "torch": torch.__version__, "cases": cases}, f)
    f.write("\n")
print(f"wrote {len(cases)} cases")
