#!/usr/bin/python3
"""Writes tests/vectors/bundle.json: independent references for the bundle tests.

Run with the reference Python (NumPy 1.24, PyTorch 1.13):

    /usr/bin/python3 tests/vectors/gen/bundle.py

What it holds:
- f32_bits: 64 F32 inputs (as uint32 bits); f32_sha256 / f32_base64: Python's
  hashlib and base64 of their little-endian bytes.
- f16_bits (NumPy astype(float16)) and bf16_bits (PyTorch .to(bfloat16)): the
  codes a writer must store for those inputs.
- python_bundle: a two-model bundle written here, by Python's json module in
  the canonical form the format specifies (type and version first, every other
  object with sorted keys, no whitespace). Tensors in F16, BF16, I8 with scale
  and zero point, F4 with per-block scales, F32 and F64; SHA-256 per tensor.
  F4 codes come from a nearest search over the E2M1 values.
- encoder_input / encoder_output: the "encoder" network's forward pass,
  computed with NumPy in float64 from the dequantized weights.
"""

import base64
import hashlib
import json
import os

import numpy as np
import torch

rng = np.random.default_rng(20240612)

i = np.arange(64, dtype=np.float64)
f32 = (0.1 + 2 * np.cos(i) * np.exp(-i / 40)).astype(np.float32)
f32[5] = np.float32(1e-5)  # F16 subnormal range
f32[6] = np.float32(65504.0)
f32[7] = np.float32(-0.0)

out = {
    "f32_bits": f32.view(np.uint32).tolist(),
    "f32_sha256": hashlib.sha256(f32.tobytes()).hexdigest(),
    "f32_base64": base64.b64encode(f32.tobytes()).decode(),
    "f16_bits": f32.astype(np.float16).view(np.uint16).tolist(),
    "bf16_bits": torch.from_numpy(f32.copy()).to(torch.bfloat16).view(torch.int16)
    .numpy().view(np.uint16).tolist(),
}

# ---- F4 E2M1: code -> value, nearest search with ties to the even code.
F4_MAG = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def f4_code(x):
    best = None
    for code in range(16):
        mag = F4_MAG[code & 7]
        v = -mag if code & 8 else mag
        d = abs(v - x)
        key = (d, code & 1)  # ties to an even mantissa bit
        if best is None or key < best[0]:
            best = (key, code)
    return best[1]


def f4_value(code):
    mag = F4_MAG[code & 7]
    return -mag if code & 8 else mag


def entry(dtype, shape, raw, extra=None):
    e = {
        "data": base64.b64encode(raw).decode(),
        "dtype": dtype,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "shape": list(shape),
    }
    if extra:
        e.update(extra)
    return e


def f32_array_entry(values):
    a = np.asarray(values, dtype=np.float32)
    return {
        "data": base64.b64encode(a.tobytes()).decode(),
        "dtype": "F32",
        "shape": [int(a.size)],
    }


# ---- encoder: 6 -> 4 relu -> 4 sigmoid -> 2 linear
w0 = rng.normal(0, 0.5, (4, 6)).astype(np.float32)
b0 = rng.normal(0, 0.1, 4).astype(np.float32)
w1 = rng.normal(0, 0.5, (4, 4)).astype(np.float32)
b1 = rng.normal(0, 0.1, 4).astype(np.float32)
w2 = rng.normal(0, 0.5, (2, 4)).astype(np.float32)
b2 = rng.normal(0, 0.1, 2)  # float64 storage

w0_16 = w0.astype(np.float16)
b0_bf = torch.from_numpy(b0.copy()).to(torch.bfloat16)
b0_bf_bits = b0_bf.view(torch.int16).numpy().view(np.uint16)

# I8 affine: codes and parameters chosen here; the reader only applies them.
scale1 = np.float32((w1.max() - w1.min()) / 255.0)
zp1 = int(np.round(-128 - w1.min() / scale1))
codes1 = np.clip(np.round(w1 / scale1) + zp1, -128, 127).astype(np.int8)
deq1 = ((codes1.astype(np.float32) - np.float32(zp1)) * scale1).astype(np.float32)

# F4 with one scale per block of 4 values.
flat2 = w2.reshape(-1)
scales2 = np.array(
    [np.abs(flat2[k:k + 4]).max() / 6.0 for k in range(0, flat2.size, 4)],
    dtype=np.float32,
)
codes2 = [f4_code(float(flat2[k] / scales2[k // 4])) for k in range(flat2.size)]
packed2 = bytes(codes2[k] | (codes2[k + 1] << 4) for k in range(0, len(codes2), 2))
deq2 = np.array(
    [np.float32(f4_value(c)) * scales2[k // 4] for k, c in enumerate(codes2)],
    dtype=np.float32,
).reshape(2, 4)

encoder = {
    "cfg": {
        "input_size": 6,
        "layers": [
            {"activation": "relu", "output_size": 4, "type": "dense"},
            {"activation": "sigmoid", "output_size": 4, "type": "dense"},
            {"activation": "linear", "output_size": 2, "type": "dense"},
        ],
    },
    "id": "encoder",
    "metadata": {
        "producer": "modelhost",
        "provenance": {"dataset_hash": "sha256:abc123", "git_commit": "0123abcd", "seed": 7},
        "task": "unit test",
    },
    "weights": {
        "encoding": "base64",
        "tensors": {
            "layers.0.bias": entry("BF16", [4], b0_bf_bits.tobytes()),
            "layers.0.weight": entry("F16", [4, 6], w0_16.tobytes()),
            "layers.1.bias": entry("F32", [4], b1.tobytes()),
            "layers.1.weight": entry(
                "I8", [4, 4], codes1.tobytes(),
                {"scale": float(scale1), "zero_point": zp1},
            ),
            "layers.2.bias": entry("F64", [2], b2.tobytes()),
            "layers.2.weight": entry(
                "F4", [2, 4], packed2,
                {"block_size": 4, "scale": f32_array_entry(scales2)},
            ),
        },
    },
}

decoder_w = rng.normal(0, 1, (3, 2)).astype(np.float32)
decoder = {
    "cfg": {"input_size": 2, "layers": [{"activation": "tanh", "output_size": 3, "type": "dense"}]},
    "id": "decoder",
    "metadata": {"producer": "modelhost"},
    "weights": {
        "encoding": "base64",
        "tensors": {
            "layers.0.bias": entry("F32", [3], np.zeros(3, np.float32).tobytes()),
            "layers.0.weight": entry("F32", [3, 2], decoder_w.tobytes()),
        },
    },
}


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


# weights.sha256: SHA-256 of the canonical JSON of every entry without its
# "data" (dtype, shape, quantization fields, the entry's byte sha256).
for model in (encoder, decoder):
    described = {
        name: {k: v for k, v in e.items() if k != "data"}
        for name, e in model["weights"]["tensors"].items()
    }
    model["weights"]["sha256"] = hashlib.sha256(canonical(described).encode()).hexdigest()


out["python_bundle"] = (
    '{"type":"modelhost/bundle","version":1,"models":['
    + canonical(encoder) + "," + canonical(decoder) + "]}\n"
)

# ---- forward of the encoder in float64 from the dequantized weights.
x = rng.normal(0, 1, (3, 6)).astype(np.float32)
W0 = w0_16.astype(np.float64)
B0 = b0_bf.to(torch.float32).numpy().astype(np.float64)
h = np.maximum(x.astype(np.float64) @ W0.T + B0, 0)
h = 1 / (1 + np.exp(-(h @ deq1.astype(np.float64).T + b1.astype(np.float64))))
# b2 is stored as F64 and widened to F32 for compute.
y = h @ deq2.astype(np.float64).T + b2.astype(np.float32).astype(np.float64)
out["encoder_input"] = x.reshape(-1).tolist()
out["encoder_output"] = y.reshape(-1).tolist()

path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bundle.json")
with open(path, "w") as f:
    json.dump(out, f)
    f.write("\n")
print("wrote", path)
