#!/usr/bin/python3
"""Reference vectors for the fast kernels' `_ref` twins, computed with NumPy.

Run from the repository root:
    /usr/bin/python3 tests/kernels/fast/gen_vectors.py

Writes tests/vectors/fast_kernels.json. The block decoders below follow the
ggml block layouts (ggml-common.h / ggml-quants.c) written independently in
NumPy; everything else is the textbook formula in float64.
"""

import base64
import json
import os

import numpy as np

rng = np.random.RandomState(20240611)
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "vectors", "fast_kernels.json")


def f16_bytes(values):
    return np.asarray(values, dtype="<f2").view(np.uint8)


def random_blocks(n_blocks, block_bytes, scale_fields):
    """Random block bytes with the f16 scale fields set to sane values."""
    raw = rng.randint(0, 256, size=(n_blocks, block_bytes)).astype(np.uint8)
    for offset, lo, hi in scale_fields:
        scales = rng.uniform(lo, hi, size=n_blocks).astype("<f2")
        raw[:, offset:offset + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
    return raw


def half(raw, offset):
    return raw[:, offset:offset + 2].copy().view("<f2").astype(np.float64)[:, 0]


def deq_q8_0(raw):
    d = half(raw, 0)
    q = raw[:, 2:34].view(np.int8).astype(np.float64)
    return (d[:, None] * q).reshape(-1)


def deq_q4_0(raw):
    d = half(raw, 0)
    qs = raw[:, 2:18]
    lo = (qs & 0x0F).astype(np.float64) - 8
    hi = (qs >> 4).astype(np.float64) - 8
    return (d[:, None] * np.concatenate([lo, hi], axis=1)).reshape(-1)


def deq_q4_k(raw):
    d = half(raw, 0)
    dmin = half(raw, 2)
    s = raw[:, 4:16].astype(np.int64)
    qs = raw[:, 16:144]
    out = np.zeros((raw.shape[0], 256))
    for j in range(8):
        if j < 4:
            sc = s[:, j] & 63
            m = s[:, j + 4] & 63
        else:
            sc = (s[:, j + 4] & 0x0F) | ((s[:, j - 4] >> 6) << 4)
            m = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
        chunk = qs[:, (j // 2) * 32:(j // 2) * 32 + 32]
        q = (chunk >> 4) if j % 2 else (chunk & 0x0F)
        out[:, j * 32:(j + 1) * 32] = (d * sc)[:, None] * q - (dmin * m)[:, None]
    return out.reshape(-1)


def deq_q6_k(raw):
    ql = raw[:, 0:128].astype(np.int64)
    qh = raw[:, 128:192].astype(np.int64)
    sc = raw[:, 192:208].view(np.int8).astype(np.float64)
    d = half(raw, 208)
    out = np.zeros((raw.shape[0], 256))
    for h in range(2):
        for l in range(32):
            a = ql[:, 64 * h + l]
            b = ql[:, 64 * h + l + 32]
            c = qh[:, 32 * h + l]
            q = [
                (a & 0x0F) | ((c & 3) << 4),
                (b & 0x0F) | (((c >> 2) & 3) << 4),
                (a >> 4) | (((c >> 4) & 3) << 4),
                (b >> 4) | (((c >> 6) & 3) << 4),
            ]
            for i in range(4):
                e = 128 * h + 32 * i + l
                out[:, e] = d * sc[:, e // 16] * (q[i] - 32)
    return out.reshape(-1)


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def floats(a):
    return [float(f"{v:.9g}") for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def cosines(n, shift=0.0, amp=2.0):
    return 0.1 + amp * np.cos(np.arange(n) + shift)


vectors = {"blocks": {}, "linear": {}}

# --- weight decoding and linear: 3 rows of 256 inputs -> 5 outputs
ROWS, IN, OUT_F = 3, 256, 5
x = cosines(ROWS * IN).astype(np.float32)
bias = (0.25 * np.arange(OUT_F) - 0.5).astype(np.float32)
vectors["linear"]["x"] = floats(x)
vectors["linear"]["bias"] = floats(bias)
vectors["linear"]["shape"] = [ROWS, IN, OUT_F]

weights = {}
w_f32 = (np.sin(np.arange(OUT_F * IN) * 0.37) * 0.5).astype(np.float32)
weights["F32"] = (w_f32.view(np.uint8), w_f32.astype(np.float64))
w_f16 = w_f32.astype("<f2")
weights["F16"] = (w_f16.view(np.uint8), w_f16.astype(np.float64))
bf = (w_f32.view(np.uint32) >> 16).astype("<u2")
weights["BF16"] = (bf.view(np.uint8), (bf.astype(np.uint32) << 16).view(np.float32).astype(np.float64))
n32 = OUT_F * IN // 32
n256 = OUT_F * IN // 256
raw = random_blocks(n32, 34, [(0, 0.001, 0.02)])
weights["Q8_0"] = (raw.reshape(-1), deq_q8_0(raw))
raw = random_blocks(n32, 18, [(0, 0.01, 0.1)])
weights["Q4_0"] = (raw.reshape(-1), deq_q4_0(raw))
raw = random_blocks(n256, 144, [(0, 0.001, 0.01), (2, 0.001, 0.01)])
weights["Q4_K"] = (raw.reshape(-1), deq_q4_k(raw))
raw = random_blocks(n256, 210, [(208, 0.0005, 0.002)])
weights["Q6_K"] = (raw.reshape(-1), deq_q6_k(raw))

xm = x.astype(np.float64).reshape(ROWS, IN)
for name, (data, values) in weights.items():
    w = values.reshape(OUT_F, IN)
    vectors["blocks"][name] = {"bytes": b64(data), "values": floats(values)}
    vectors["linear"][name] = floats(xm @ w.T + bias.astype(np.float64))

# --- softmax, RMSNorm, SwiGLU on 3 rows of 13
N = 13
sx = (cosines(3 * N) * 4).astype(np.float32)
r = sx.astype(np.float64).reshape(3, N)
e = np.exp(r - r.max(axis=1, keepdims=True))
vectors["softmax"] = {"n": N, "x": floats(sx), "y": floats(e / e.sum(axis=1, keepdims=True))}
rw = cosines(N, 3.0, 1.0).astype(np.float32)
eps = 1e-5
y = r / np.sqrt((r * r).mean(axis=1, keepdims=True) + eps) * rw.astype(np.float64)
vectors["rmsnorm"] = {"n": N, "eps": eps, "x": floats(sx), "w": floats(rw), "y": floats(y)}
g = sx.astype(np.float64)
u = cosines(3 * N, 7.0).astype(np.float32).astype(np.float64)
vectors["swiglu"] = {"gate": floats(sx), "up": floats(u), "y": floats(g / (1 + np.exp(-g)) * u)}


# --- RoPE: 4 positions from 5, 2 heads of 8, rotary 8 (neox) and 4 (interleaved)
def rope(xr, heads, hd, rot, start, base, style):
    out = xr.copy()
    half_ = rot // 2
    inv = base ** (-(2 * np.arange(half_)) / rot)
    for s in range(xr.shape[0]):
        ang = (start + s) * inv
        c, sn = np.cos(ang), np.sin(ang)
        for h in range(heads):
            b = h * hd
            if style == "neox":
                i1 = b + np.arange(half_)
                i2 = i1 + half_
            else:
                i1 = b + 2 * np.arange(half_)
                i2 = i1 + 1
            x1, x2 = xr[s, i1], xr[s, i2]
            out[s, i1] = x1 * c - x2 * sn
            out[s, i2] = x2 * c + x1 * sn
    return out


rx = cosines(4 * 2 * 8, 1.0).astype(np.float32)
rr = rx.astype(np.float64).reshape(4, 16)
vectors["rope"] = {
    "x": floats(rx),
    "neox": floats(rope(rr, 2, 8, 8, 5, 10000.0, "neox")),
    "interleaved": floats(rope(rr, 2, 8, 4, 5, 500.0, "interleaved")),
}

# --- attention: 4 query heads over 2 KV heads of 8; prefill 3 then decode 1
H, KVH, HD = 4, 2, 8
q1 = cosines(3 * H * HD, 0.5, 1.0).astype(np.float32)
k1 = cosines(3 * KVH * HD, 1.5, 1.0).astype(np.float32)
v1 = cosines(3 * KVH * HD, 2.5, 1.0).astype(np.float32)
q2 = cosines(1 * H * HD, 3.5, 1.0).astype(np.float32)
k2 = cosines(1 * KVH * HD, 4.5, 1.0).astype(np.float32)
v2 = cosines(1 * KVH * HD, 5.5, 1.0).astype(np.float32)
K = np.concatenate([k1, k2]).astype(np.float64).reshape(4, KVH, HD)
V = np.concatenate([v1, v2]).astype(np.float64).reshape(4, KVH, HD)


def attend(q, start, causal):
    qs = q.astype(np.float64).reshape(-1, H, HD)
    out = np.zeros_like(qs)
    total = start + qs.shape[0]
    for i in range(qs.shape[0]):
        length = start + i + 1 if causal else total
        for h in range(H):
            kv = h // (H // KVH)
            s = K[:length, kv, :] @ qs[i, h] / np.sqrt(HD)
            p = np.exp(s - s.max())
            out[i, h] = (p / p.sum()) @ V[:length, kv, :]
    return out


vectors["attention"] = {
    "heads": H,
    "kvHeads": KVH,
    "headDim": HD,
    "prefill": {"q": floats(q1), "k": floats(k1), "v": floats(v1), "y": floats(attend(q1, 0, True))},
    "decode": {"q": floats(q2), "k": floats(k2), "v": floats(v2), "y": floats(attend(q2, 3, True))},
}

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as f:
    json.dump(vectors, f, separators=(",", ":"))
print("wrote", os.path.normpath(OUT))
