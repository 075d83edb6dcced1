"""Writes the NumPy fixtures of the npy example plugin and, in expected.json,
NumPy's own reading of each array: dtype, shape and the C-order
little-endian bytes as hex (an independent reference for our reader).

Run with the system Python that has NumPy 1.24:
    /usr/bin/python3 examples/plugins/npy/testdata/gen_fixtures.py
"""

import io
import json
import os
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def values(dtype, shape):
    """Deterministic values with the edge cases of each type."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return (np.arange(n) % 3 == 0).reshape(shape)
    if dt.kind == "f":
        base = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-3]
        info = np.finfo(dt)
        base += [float(info.max), float(info.tiny), float(info.tiny) / 4]
        v = [base[i] if i < len(base) else 0.1 + 2 * np.cos(i) for i in range(n)]
        return np.array(v, dtype=dt).reshape(shape)
    info = np.iinfo(dt)
    base = [0, 1, int(info.max), int(info.min), int(info.max) - 1, 7]
    v = [base[i] if i < len(base) else (i * 37) % 100 for i in range(n)]
    return np.array(v, dtype=dt).reshape(shape)


def reference(arr):
    le = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    return {
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "hex": np.ascontiguousarray(le).tobytes(order="C").hex(),
    }


expected = {}

DTYPES = ["<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8",
          "|u1", "<u2", "<u4", "<u8", "|b1"]
for d in DTYPES:
    name = "dtype_" + d.replace("<", "").replace("|", "") + ".npy"
    arr = values(d, (3, 4))
    np.save(os.path.join(HERE, name), arr)
    expected[name] = {"arrays": {"arr_0": reference(arr)}}

# Big-endian arrays, Fortran order, a scalar, an empty array, forced v2/v3 headers.
special = {
    "big_endian_f4.npy": values(">f4", (2, 3)),
    "big_endian_i8.npy": values(">i8", (2, 3)),
    "big_endian_f2.npy": values(">f2", (5,)),
    "fortran_i4.npy": np.asfortranarray(np.arange(24, dtype="<i4").reshape(2, 3, 4)),
    "fortran_f8.npy": np.asfortranarray(values("<f8", (3, 5))),
    "scalar_f8.npy": np.array(3.25, dtype="<f8"),
    "empty_f4.npy": np.zeros((0, 3), dtype="<f4"),
}
for name, arr in special.items():
    np.save(os.path.join(HERE, name), arr)
    expected[name] = {"arrays": {"arr_0": reference(arr)}}

for version in [(2, 0), (3, 0)]:
    name = "version_%d_%d.npy" % version
    arr = values("<i2", (2, 5))
    with open(os.path.join(HERE, name), "wb") as f:
        np.lib.format.write_array(f, arr, version=version)
    expected[name] = {"arrays": {"arr_0": reference(arr)}}

# Types NumPy has and modelhost does not: refused by the reader.
unsupported = {
    "unsupported_c8.npy": np.array([1 + 2j, 3 - 1j], dtype="<c8"),
    "unsupported_U3.npy": np.array(["ab", "cde"], dtype="<U3"),
    "unsupported_struct.npy": np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]),
}
for name, arr in unsupported.items():
    np.save(os.path.join(HERE, name), arr)
    expected[name] = {"refused": arr.dtype.str if arr.dtype.names is None else "structured"}

# Archives: stored (np.savez) and deflated (np.savez_compressed).
arrays = {
    "layers.0.weight": values("<f4", (4, 3)),
    "layers.0.bias": values("<f2", (4,)),
    "ids": values("<i8", (2, 2)),
    "mask": values("|b1", (6,)),
    "big": (0.1 + 2 * np.cos(np.arange(600))).astype("<f4").reshape(20, 30),
}
ref = {k: reference(v) for k, v in arrays.items()}
np.savez(os.path.join(HERE, "savez.npz"), **arrays)
expected["savez.npz"] = {"arrays": ref}
np.savez_compressed(os.path.join(HERE, "savez_compressed.npz"), **arrays)
expected["savez_compressed.npz"] = {"arrays": ref}
positional = [values("<u2", (3,)), values("<f8", (2, 2))]
np.savez(os.path.join(HERE, "positional.npz"), *positional)
expected["positional.npz"] = {
    "arrays": {"arr_%d" % i: reference(a) for i, a in enumerate(positional)}
}

# A genuine zip64 archive (zipfile's limit lowered so it writes zip64
# records for a small file): refused by our reader.
saved = zipfile.ZIP64_LIMIT
zipfile.ZIP64_LIMIT = 16
try:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        b = io.BytesIO()
        np.save(b, values("<f4", (4,)))
        z.writestr("a.npy", b.getvalue())
    with open(os.path.join(HERE, "zip64.npz"), "wb") as f:
        f.write(buf.getvalue())
finally:
    zipfile.ZIP64_LIMIT = saved
expected["zip64.npz"] = {"refused": "zip64"}

with open(os.path.join(HERE, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
