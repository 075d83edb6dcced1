#!/usr/bin/env python3
"""Reference SafeTensors files with modelhost's checksums, computed in Python.

The files are written by the `safetensors` package (numpy API); the checksum
keys are computed here with hashlib and json alone, from the rule in
docs/formats/safetensors.md, with no modelhost code:

- `modelhost.sha256`: JSON {tensor: SHA-256 of its stored bytes}
- `modelhost.header_sha256`: SHA-256 of the compact JSON
  {"quant": <the modelhost.quant text or null>,
   "tensors": [[name, dtype, shape, byte sha256], ...]}
  with tensors sorted by name in UTF-16 code unit order.

Run from the repository root:
    /work/refpy/bin/python tests/vectors/gen/safetensors_checksum.py
It writes tests/vectors/safetensors_checksum.json.
"""
import base64
import hashlib
import json
import os

import numpy as np
import safetensors
from safetensors.numpy import save

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DTYPE = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("int8"): "I8",
         np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL", np.dtype("int32"): "I32"}


def header_digest_text(tensors, quant):
    rows = [[n, DTYPE[a.dtype], list(a.shape), hashlib.sha256(a.tobytes()).hexdigest()]
            for n, a in sorted(tensors.items(), key=lambda kv: kv[0].encode("utf-16-be"))]
    return json.dumps({"quant": quant, "tensors": rows}, separators=(",", ":"), ensure_ascii=False)


def make(name, tensors, quant=None, header_key=True, extra=None):
    meta = {"format": "pt"}
    if extra:
        meta.update(extra)
    if quant is not None:
        meta["modelhost.quant"] = json.dumps(quant, separators=(",", ":"))
    byte_map = {n: hashlib.sha256(a.tobytes()).hexdigest() for n, a in tensors.items()}
    meta["modelhost.sha256"] = json.dumps(byte_map, sort_keys=True)
    text = header_digest_text(tensors, meta.get("modelhost.quant"))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if header_key:
        meta["modelhost.header_sha256"] = digest
    data = save(tensors, metadata=meta)
    return {"name": name, "header_sha256": digest, "digest_text": text,
            "has_header_key": header_key, "tensors": sorted(tensors),
            "bytes": base64.b64encode(data).decode("ascii")}


def main():
    rng = np.random.default_rng(18)
    w = rng.integers(-127, 128, size=(2, 4), dtype=np.int8)
    files = [
        make("i8_quant", {
            "w": w,
            "mask": np.array([1, 0, 1, 1], dtype=np.uint8),
            "b": rng.standard_normal(3).astype(np.float32),
        }, quant={"w": {"scale": [0.5, 0.25]}}),
        make("float_unicode", {
            "enc.ß": rng.standard_normal((2, 3)).astype(np.float16),
            "enc.a": rng.standard_normal((3, 2)).astype(np.float32),
            "ids": np.arange(6, dtype=np.int32),
            "flags": np.array([True, False, True, True], dtype=np.bool_),
        }, extra={"note": "line\nbreak \u00e9"}),
        make("bytes_only", {
            "w": w,
            "b": rng.standard_normal(3).astype(np.float32),
        }, quant={"w": {"scale": [0.5, 0.25]}}, header_key=False),
    ]
    out = {"generator": "tests/vectors/gen/safetensors_checksum.py",
           "safetensors": safetensors.__version__, "numpy": np.__version__, "files": files}
    path = os.path.join(ROOT, "tests", "vectors", "safetensors_checksum.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
