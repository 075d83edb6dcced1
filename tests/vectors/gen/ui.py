"""Reference numbers for the web page's tests (tests/ui/), computed with
gguf-py, safetensors, PyTorch and NumPy from the shared fixtures, written to
tests/vectors/ui.json.

- "stats": per tensor, min / max / mean / std (population) / zeros / NaN /
  Inf and a 64-bin histogram (numpy.histogram over [min, max]) of the
  tensor's values as float32, for a few tensors of stories260K.gguf,
  llama-2-tiny-random.gguf (F16) and julia's model.safetensors (BF16, F8,
  F32).
- "quant": for synthetic-llama-f32.gguf, per tensor RMSE, cosine and max
  abs error of each llama-quantize --pure output (dequantized by gguf-py)
  against the F32 source, plus the tensor data bytes of that output; and the
  same measures for casts done by PyTorch (F16, BF16, F8_E4M3, F8_E5M2) and
  for symmetric per-row I8 (scale = max|row| / 127 as float32, codes
  rint(x / scale) clipped to +-127) written out in NumPy.

Run: /work/refpy/bin/python tests/vectors/gen/ui.py (a venv with gguf-py 0.19,
safetensors 0.8, PyTorch 2.13, NumPy 2.4; Debian's python3 lacks gguf-py).
"""

import json
import os

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors import safe_open

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
FIX = os.path.normpath(os.path.join(ROOT, "..", "shared", "fixtures"))
OUT = os.path.join(ROOT, "tests", "vectors", "ui.json")
BINS = 64


def gguf_values(reader, name):
    t = next(x for x in reader.tensors if x.name == name)
    v = dequantize(np.asarray(t.data), t.tensor_type)
    return np.asarray(v, dtype=np.float32).reshape(-1)


def stats(v):
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    finite = v[np.isfinite(v)]
    d = finite.astype(np.float64)
    lo, hi = float(d.min()), float(d.max())
    mean = float(d.mean())
    std = float(np.sqrt(np.mean((d - mean) ** 2)))
    counts, _ = np.histogram(d, bins=BINS, range=(lo, hi))
    return {
        "count": int(v.size),
        "min": lo,
        "max": hi,
        "mean": mean,
        "std": std,
        "zeros": int(np.sum(v == 0)),
        "nan": int(np.sum(np.isnan(v))),
        "inf": int(np.sum(np.isinf(v))),
        "histogram": [int(c) for c in counts],
    }


def errors(ref, approx):
    a = ref.astype(np.float64)
    b = np.asarray(approx, dtype=np.float32).astype(np.float64)
    d = np.abs(a - b)
    return {
        "rmse": float(np.sqrt(np.mean(d * d))),
        "cosine": float(np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b))),
        "max": float(d.max()),
    }


def i8_rows(x, shape):
    rows = shape[0] if len(shape) >= 2 else 1
    m = x.reshape(rows, -1)
    amax = np.max(np.abs(m), axis=1)
    scale = np.where(amax == 0, 1, amax / 127).astype(np.float32)
    q = np.clip(np.rint(m.astype(np.float64) / scale[:, None].astype(np.float64)), -127, 127)
    return (q * scale[:, None]).astype(np.float32).reshape(-1)


def main():
    out = {"generator": "tests/vectors/gen/ui.py", "bins": BINS, "stats": {}, "quant": {}}

    stories = GGUFReader(os.path.join(FIX, "gguf", "stories260K.gguf"))
    tiny = GGUFReader(os.path.join(FIX, "gguf", "llama-2-tiny-random.gguf"))
    out["stats"]["gguf/stories260K.gguf"] = {
        n: stats(gguf_values(stories, n))
        for n in ["token_embd.weight", "blk.0.attn_q.weight", "blk.4.ffn_down.weight", "output_norm.weight"]
    }
    out["stats"]["gguf/llama-2-tiny-random.gguf"] = {
        n: stats(gguf_values(tiny, n)) for n in ["blk.0.attn_q.weight", "token_embd.weight"]
    }
    jl = "safetensors/julia/non_sharded/model.safetensors"
    with safe_open(os.path.join(FIX, jl), "pt") as f:
        out["stats"][jl] = {
            n: stats(f.get_tensor(n).to(torch.float32).numpy())
            for n in ["bfloat16_357", "float32_357", "float8_e4m3fn_357", "float16_35"]
        }

    src_path = os.path.join(FIX, "reference", "quant", "synthetic-llama-f32.gguf")
    src = GGUFReader(src_path)
    names = [t.name for t in src.tensors]
    values = {n: gguf_values(src, n) for n in names}
    shapes = {t.name: [int(x) for x in reversed(t.shape.tolist())] for t in src.tensors}
    quant = {}
    for ftype, qtype in [("Q8_0", "Q8_0"), ("Q4_0", "Q4_0"), ("Q4_1", "Q4_1"), ("Q5_0", "Q5_0"),
                         ("Q5_1", "Q5_1"), ("Q2_K", "Q2_K"), ("Q3_K_M", "Q3_K"), ("Q4_K_M", "Q4_K"),
                         ("Q5_K_M", "Q5_K"), ("Q6_K", "Q6_K")]:
        r = GGUFReader(os.path.join(FIX, "reference", "quant", f"synthetic-llama-{ftype}.gguf"))
        per = {}
        data_bytes = 0
        for t in r.tensors:
            data_bytes += int(t.n_bytes)
            per[t.name] = {"type": t.tensor_type.name, **errors(values[t.name], gguf_values(r, t.name))}
        quant[qtype] = {"source": f"llama-quantize --pure {ftype}", "tensor_bytes": data_bytes, "tensors": per}
    casts = {"F16": torch.float16, "BF16": torch.bfloat16, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}
    for name, dt in casts.items():
        per = {}
        for n in names:
            back = torch.from_numpy(values[n].copy()).to(dt).to(torch.float32).numpy()
            per[n] = errors(values[n], back)
        quant[name] = {"source": f"torch cast to {dt}", "tensors": per}
    quant["I8"] = {
        "source": "numpy symmetric per-row int8",
        "tensors": {n: errors(values[n], i8_rows(values[n], shapes[n])) for n in names},
    }
    out["quant"] = {"file": "reference/quant/synthetic-llama-f32.gguf", "types": quant}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
