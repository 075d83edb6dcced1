#!/usr/bin/python3
"""Reference vectors for the fast kernels' `_ref` twins, computed with NumPy.

Run from the repository root:
    /usr/bin/python3 tests/vectors/gen/fast_kernels.py

Writes tests/vectors/fast_kernels.json. The block decoders below follow the
ggml block layouts (ggml-common.h / ggml-quants.c) written independently in
NumPy; everything else is the textbook formula in float64.
"""

import base64
import json
import os

import numpy as np

rng = np.random.RandomState(20240611)
OUT = os.path.join(os.path.dirname(__file__), "..", "fast_kernels.json")


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


# --- llama.cpp's activation quantization (x86 SIMD rules) and quantized dots.
# All scale arithmetic in float32, as ggml does; integer dot products; the
# scaled blocks summed in float64 (the exact value of the rule).
def quant_act(x, rule):
    block = 32 if rule == "q8_0" else 256
    xb = np.asarray(x, dtype=np.float32).reshape(-1, block)
    amax = np.abs(xb).max(axis=1)
    safe = np.where(amax > 0, amax, np.float32(1)).astype(np.float32)
    inv = np.where(amax > 0, np.float32(127) / safe, np.float32(0)).astype(np.float32)
    if rule == "q8_0":
        # d = f16(amax / 127); codes from 127 / amax (ggml's quantize_row_q8_0, AVX2)
        d = (amax / np.float32(127)).astype(np.float32).astype(np.float16).astype(np.float32)
    else:
        # iscale = 127 / amax, d = 1 / iscale (quantize_row_q8_K_ref, sign aside)
        d = np.where(amax > 0, np.float32(1) / np.where(inv > 0, inv, np.float32(1)), np.float32(0)).astype(np.float32)
    prod = (xb * inv[:, None]).astype(np.float32)
    q = np.minimum(np.rint(prod), 127).astype(np.int64)
    return q.reshape(-1), d


def int_parts_32(raw, kind):
    """Q8_0 / Q4_0: per-element integer weights and per-block f16 scales."""
    d = half(raw, 0)
    if kind == "Q8_0":
        w = raw[:, 2:34].view(np.int8).astype(np.int64)
    else:
        qs = raw[:, 2:18].astype(np.int64)
        w = np.concatenate([qs & 0x0F, qs >> 4], axis=1) - 8
    return w, d


def qdot_32(raw, kind, xq, xd, out_f, n_in):
    w, dw = int_parts_32(raw, kind)
    nb = n_in // 32
    w = w.reshape(out_f, nb, 32)
    dw = dw.reshape(out_f, nb)
    rows = xq.size // n_in
    xq = xq.reshape(rows, nb, 32)
    xd = xd.reshape(rows, nb).astype(np.float64)
    out = np.zeros((rows, out_f))
    for r in range(rows):
        dots = (w * xq[r][None, :, :]).sum(axis=2)  # exact integers
        out[r] = (dw * xd[r][None, :] * dots).sum(axis=1)
    return out


def qdot_q4_k(raw, xq, xd, out_f, n_in):
    nsb = n_in // 256
    raw = raw.reshape(out_f, nsb, 144)
    rows = xq.size // n_in
    xq = xq.reshape(rows, nsb, 256)
    xd = xd.reshape(rows, nsb)
    out = np.zeros((rows, out_f))
    for o in range(out_f):
        blk = raw[o]
        d = half(blk, 0).astype(np.float32)
        dmin = half(blk, 2).astype(np.float32)
        s = blk[:, 4:16].astype(np.int64)
        qs = blk[:, 16:144].astype(np.int64)
        for r in range(rows):
            total = 0.0
            for b in range(nsb):
                isum = imin = 0
                for j in range(8):
                    if j < 4:
                        sc, m = s[b, j] & 63, s[b, j + 4] & 63
                    else:
                        sc = (s[b, j + 4] & 0x0F) | ((s[b, j - 4] >> 6) << 4)
                        m = (s[b, j + 4] >> 4) | ((s[b, j] >> 6) << 4)
                    chunk = qs[b, (j // 2) * 32:(j // 2) * 32 + 32]
                    q = (chunk >> 4) if j % 2 else (chunk & 0x0F)
                    xs = xq[r, b, 32 * j:32 * j + 32]
                    isum += int(sc) * int((q * xs).sum())
                    imin += int(m) * int(xs.sum())
                big_d = np.float64(np.float32(xd[r, b] * d[b]))
                big_m = np.float64(np.float32(xd[r, b] * dmin[b]))
                total += big_d * isum - big_m * imin
            out[r, o] = total
    return out


def qdot_q6_k(raw, xq, xd, out_f, n_in):
    nsb = n_in // 256
    raw = raw.reshape(out_f, nsb, 210)
    rows = xq.size // n_in
    xq = xq.reshape(rows, nsb, 256)
    xd = xd.reshape(rows, nsb)
    out = np.zeros((rows, out_f))
    for o in range(out_f):
        blk = raw[o]
        d = half(blk, 208).astype(np.float32)
        ql = blk[:, 0:128].astype(np.int64)
        qh = blk[:, 128:192].astype(np.int64)
        sc = blk[:, 192:208].view(np.int8).astype(np.int64)
        for b in range(nsb):
            q = np.zeros(256, dtype=np.int64)
            for h in range(2):
                for l in range(32):
                    a, bb, c = ql[b, 64 * h + l], ql[b, 64 * h + l + 32], qh[b, 32 * h + l]
                    q[128 * h + l] = (a & 0x0F) | ((c & 3) << 4)
                    q[128 * h + 32 + l] = (bb & 0x0F) | (((c >> 2) & 3) << 4)
                    q[128 * h + 64 + l] = (a >> 4) | (((c >> 4) & 3) << 4)
                    q[128 * h + 96 + l] = (bb >> 4) | (((c >> 6) & 3) << 4)
            q -= 32
            for r in range(rows):
                isum = sum(int(sc[b, g]) * int((q[16 * g:16 * g + 16] * xq[r, b, 16 * g:16 * g + 16]).sum()) for g in range(16))
                out[r, o] += np.float64(np.float32(xd[r, b] * d[b])) * isum
    return out


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

# the quantized weights as llama.cpp multiplies them: activations quantized
# (Q8_0 blocks for Q8_0/Q4_0, Q8_K for Q4_K/Q6_K), integer dots per block
vectors["linear_quantized"] = {}
xq0, xd0 = quant_act(x, "q8_0")
xqk, xdk = quant_act(x, "q8_k")
for name in ["Q8_0", "Q4_0", "Q4_K", "Q6_K"]:
    raw = np.frombuffer(base64.b64decode(vectors["blocks"][name]["bytes"]), dtype=np.uint8)
    if name in ("Q8_0", "Q4_0"):
        y = qdot_32(raw.reshape(-1, 34 if name == "Q8_0" else 18), name, xq0, xd0, OUT_F, IN)
    elif name == "Q4_K":
        y = qdot_q4_k(raw, xqk, xdk, OUT_F, IN)
    else:
        y = qdot_q6_k(raw, xqk, xdk, OUT_F, IN)
    vectors["linear_quantized"][name] = floats(y + bias.astype(np.float64))

# F16 weights with activations rounded to F16 first (ggml's F16 matmul;
# the kernels' roundF16Activations option)
x16 = x.astype(np.float16).astype(np.float64).reshape(ROWS, IN)
vectors["linear_f16_activations"] = floats(x16 @ weights["F16"][1].reshape(OUT_F, IN).T + bias.astype(np.float64))

# --- activation quantization on edge cases: 3 blocks of 256 (12 of 32):
# cosines, an all-zero 256-block, tiny values (f16-subnormal Q8_0 scales),
# exact half-integer products (ties to even), a lone maximum per block
ax = np.zeros(768, dtype=np.float32)
ax[0:256] = cosines(256, 0.25, 3.0)
ax[256:288] = np.float32(1e-4) * cosines(32, 1.0)
ax[288:320] = np.array([127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 126.5, -126.5] + [0] * 22, dtype=np.float32)
ax[320:352] = np.array([-254] + [1] * 31, dtype=np.float32)  # id = 0.5: x·id = 0.5 → 0
ax[352:384] = (np.arange(32) - 15.5).astype(np.float32) * np.float32(0.3)
ax[384:512] = cosines(128, 2.0, 0.01)
# ax[512:768] stays zero: a Q8_K block with amax = 0
vectors["activations"] = {"x": floats(ax)}
for rule in ["q8_0", "q8_k"]:
    q, d = quant_act(ax, rule)
    vectors["activations"][rule] = {"codes": [int(v) for v in q], "scales": floats(d)}

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
