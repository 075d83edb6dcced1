#!/usr/bin/python3
"""Reference facts about the real SafeTensors fixtures, computed in Python.

An independent reader (struct + json + hashlib + NumPy, no modelhost code)
records, for every readable fixture file: the header length, the metadata,
and per tensor the dtype, shape, data offsets, SHA-256 of its bytes and, for
tensors of at most 128 elements, the values decoded by NumPy (BF16 by a
16-bit shift, F8 by the OFP8 formulas written out below).

Run from the repository root:
    /usr/bin/python3 tests/vectors/gen/safetensors_fixtures.py
It writes tests/vectors/safetensors_fixtures.json.
"""
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIXTURES = os.environ.get("MODELHOST_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures"))
BASE = os.path.join(FIXTURES, "safetensors")

FILES = [
    "hf-samples/B.safetensors", "hf-samples/H.safetensors", "hf-samples/I.safetensors",
    "hf-samples/b.safetensors", "hf-samples/h.safetensors", "hf-samples/i.safetensors",
    "hf-samples/e.safetensors", "hf-samples/f.safetensors", "hf-samples/d.safetensors",
    "hf-samples/overall.safetensors",
    "julia/non_sharded/model.numpy.safetensors",
    "julia/non_sharded/model.safetensors",
    "julia/non_sharded/model.with_metadata.safetensors",
    "julia/sharded/model-00001-of-00006.safetensors",
    "julia/sharded/model-00002-of-00006.safetensors",
    "julia/sharded/model-00003-of-00006.safetensors",
    "julia/sharded/model-00004-of-00006.safetensors",
    "julia/sharded/model-00005-of-00006.safetensors",
    "julia/sharded/model-00006-of-00006.safetensors",
    "candle/jfk-codes.safetensors",
    "candle/voices.safetensors",
    "syoyo-gen-model.safetensors",
    "synthetic/safetensors-two-tensors.bin",
    "synthetic/safetensors-header-only.bin",
]

NUMPY = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
    "F16": np.float16, "F32": np.float32, "F64": np.float64,
}


def f8(code, exp_bits, man_bits, bias, fn):
    """OFP8 decode: E4M3 is 'fn' (no infinities, S.1111.111 is NaN)."""
    s = -1.0 if code & 0x80 else 1.0
    e = (code >> man_bits) & ((1 << exp_bits) - 1)
    m = code & ((1 << man_bits) - 1)
    top = (1 << exp_bits) - 1
    if fn and e == top and m == (1 << man_bits) - 1:
        return math.nan
    if not fn and e == top:
        return s * math.inf if m == 0 else math.nan
    if e == 0:
        return s * m * 2.0 ** (1 - bias - man_bits)
    return s * (1 + m / 2 ** man_bits) * 2.0 ** (e - bias)


def decode(dtype, raw):
    if dtype in NUMPY:
        return [float(x) for x in np.frombuffer(raw, dtype=NUMPY[dtype])]
    if dtype == "BF16":
        u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
        return [float(x) for x in u.view(np.float32)]
    if dtype == "F8_E4M3":
        return [f8(b, 4, 3, 7, True) for b in raw]
    if dtype == "F8_E5M2":
        return [f8(b, 5, 2, 15, False) for b in raw]
    return None


def jsonable(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return int(v) if v == int(v) and abs(v) < 2 ** 53 else v


def describe(rel):
    data = open(os.path.join(BASE, rel), "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    start = 8 + n
    out = {"file": rel, "size": len(data), "header_length": n,
           "file_sha256": hashlib.sha256(data).hexdigest(),
           "metadata": header.pop("__metadata__", None), "tensors": []}
    for name, info in header.items():
        b, e = info["data_offsets"]
        raw = data[start + b:start + e]
        t = {"name": name, "dtype": info["dtype"], "shape": info["shape"],
             "data_offsets": [b, e], "sha256": hashlib.sha256(raw).hexdigest()}
        count = int(np.prod(info["shape"], dtype=np.int64))
        if count <= 128:
            vals = decode(info["dtype"], raw)
            if vals is not None:
                t["values"] = [jsonable(v) for v in vals]
        out["tensors"].append(t)
    return out


def main():
    files = [describe(rel) for rel in FILES]
    index = json.load(open(os.path.join(BASE, "julia/sharded/model.safetensors.index.json")))
    result = {
        "generator": "tests/vectors/gen/safetensors_fixtures.py",
        "numpy": np.__version__,
        "files": files,
        "julia_sharded_index": index,
    }
    path = os.path.join(ROOT, "tests", "vectors", "safetensors_fixtures.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(files)} files", file=sys.stderr)


if __name__ == "__main__":
    main()
