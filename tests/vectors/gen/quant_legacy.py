# Writes tests/vectors/quant_legacy.json: inputs and the expected bytes and
# dequantized values of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, computed with NumPy in
# float32 following ggml's reference quantizers (quantize_row_*_ref) and
# dequantizers (dequantize_row_*). An implementation independent of
# modelhost's (vectorized NumPy, whole blocks at a time).
# Run: /usr/bin/python3 tests/vectors/gen/quant_legacy.py
import json, os
import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/vectors
f32 = np.float32

def inputs():
    i = np.arange(32 * 12, dtype=np.float64)
    base = (0.1 + 2.0 * np.cos(i)).astype(f32)
    blocks = [base]
    blocks.append(np.zeros(32, f32))                                  # all zero (d = -0 for Q4_0/Q5_0)
    blocks.append(np.where(np.arange(32) == 7, f32(-3), f32(0)))     # one negative spike
    blocks.append((np.arange(32, dtype=f32) - f32(15.5)) * f32(0.5))  # ramp with halves
    blocks.append(np.full(32, f32(1.0)))                              # constant
    blocks.append(np.array([1e-30 * (k - 16) for k in range(32)], f32))  # tiny (subnormal f16 scales)
    blocks.append(np.array([6e4 * np.sin(k) for k in range(32)], f32))   # large
    blocks.append(np.array([(k % 5) - 2.5 for k in range(32)], f32))     # many ties after scaling
    return np.concatenate(blocks)

def halfbits(v):
    return np.asarray(v, f32).astype(np.float16).view(np.uint16)

def half(v):
    return np.asarray(v, f32).astype(np.float16).astype(f32)

def roundf(x):  # C roundf: halves away from zero (exact in float64 for float32 inputs)
    a = np.abs(x).astype(np.float64)
    return (np.sign(x) * np.floor(a + 0.5)).astype(f32)

def signed_absmax(b):
    idx = np.argmax(np.abs(b), axis=1)  # first of equal magnitudes, as ggml's strict <
    return b[np.arange(len(b)), idx]

def q8_0(x):
    b = x.reshape(-1, 32)
    amax = np.abs(b).max(axis=1)
    d = (amax / f32(127)).astype(f32)
    idv = np.where(d != 0, f32(1) / np.where(d != 0, d, f32(1)), f32(0)).astype(f32)
    qs = roundf((b * idv[:, None]).astype(f32)).astype(np.int8)
    raw = np.concatenate([halfbits(d).view(np.uint8).reshape(-1, 2), qs.view(np.uint8)], axis=1)
    deq = (qs.astype(f32) * half(d)[:, None]).astype(f32)
    return raw, deq

def q4_0_like(x, nmax, with_high):
    b = x.reshape(-1, 32)
    mx = signed_absmax(b)
    d = (mx / f32(-nmax)).astype(f32)
    idv = np.where(d != 0, f32(1) / np.where(d != 0, d, f32(1)), f32(0)).astype(f32)
    v = ((b * idv[:, None]).astype(f32) + f32(nmax + 0.5)).astype(f32)
    q = np.minimum(2 * nmax - 1, np.trunc(v).astype(np.int32)).astype(np.uint8)
    qs = (q[:, :16] & 15) | ((q[:, 16:] & 15) << 4)
    parts = [halfbits(d).view(np.uint8).reshape(-1, 2)]
    if with_high:
        qh = np.zeros(len(b), np.uint32)
        for j in range(32):
            qh |= ((q[:, j].astype(np.uint32) >> 4) & 1) << j
        parts.append(qh.view(np.uint8).reshape(-1, 4))
    parts.append(qs.astype(np.uint8))
    deq = ((q.astype(np.int32) - nmax).astype(f32) * half(d)[:, None]).astype(f32)
    return np.concatenate(parts, axis=1), deq

def q4_1_like(x, nmax, with_high):
    b = x.reshape(-1, 32)
    mn = b.min(axis=1)
    mx = b.max(axis=1)
    d = ((mx - mn).astype(f32) / f32(nmax)).astype(f32)
    idv = np.where(d != 0, f32(1) / np.where(d != 0, d, f32(1)), f32(0)).astype(f32)
    v = (((b - mn[:, None]).astype(f32) * idv[:, None]).astype(f32) + f32(0.5)).astype(f32)
    t = np.trunc(v).astype(np.int32)
    q = (np.minimum(nmax, t) if not with_high else t).astype(np.uint8)
    qs = (q[:, :16] & 15) | ((q[:, 16:] & 15) << 4)
    parts = [halfbits(d).view(np.uint8).reshape(-1, 2), halfbits(mn).view(np.uint8).reshape(-1, 2)]
    if with_high:
        qh = np.zeros(len(b), np.uint32)
        for j in range(32):
            qh |= ((q[:, j].astype(np.uint32) >> 4) & 1) << j
        parts.append(qh.view(np.uint8).reshape(-1, 4))
    parts.append(qs.astype(np.uint8))
    qq = (q & 31) if with_high else (q & 15)
    deq = ((qq.astype(f32) * half(d)[:, None]).astype(f32) + half(mn)[:, None]).astype(f32)
    return np.concatenate(parts, axis=1), deq

x = inputs()
out = {'input_f32_hex': x.astype('<f4').tobytes().hex(), 'types': {}}
for name, fn in [('Q8_0', q8_0),
                 ('Q4_0', lambda v: q4_0_like(v, 8, False)),
                 ('Q5_0', lambda v: q4_0_like(v, 16, True)),
                 ('Q4_1', lambda v: q4_1_like(v, 15, False)),
                 ('Q5_1', lambda v: q4_1_like(v, 31, True))]:
    with np.errstate(over='ignore', divide='ignore', invalid='ignore'):
        raw, deq = fn(x)
    out['types'][name] = {
        'bytes_hex': raw.astype(np.uint8).tobytes().hex(),
        'dequant_f32_hex': deq.astype('<f4').tobytes().hex(),
    }
with open(os.path.join(HERE, 'quant_legacy.json'), 'w') as f:
    json.dump(out, f, indent=1)
print('wrote', len(x), 'values x', len(out['types']), 'types')
