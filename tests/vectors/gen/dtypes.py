#!/usr/bin/python3
"""Writes tests/vectors/dtypes.json: reference conversions for the dtype tests.

Run with the reference Python (NumPy 1.24):

    /usr/bin/python3 tests/vectors/gen/dtypes.py

Every number is written as bits (F32 inputs as uint32, outputs as codes) so
that NaN, -0 and exact ties survive JSON.

- f16: NumPy's own F32 -> float16 cast (`astype(np.float16)`), round to
  nearest even.
- bf16: no NumPy type exists; the reference picks, in float64, the nearer of
  the two BF16 neighbours of each input (truncated and truncated + 1 ulp),
  ties to the even code, and treats 2^128 as the step past the largest finite
  value (so the IEEE overflow to Inf comes out).
- f8_e4m3 / f8_e5m2 / f4: the value of every code from the format's formula,
  then for each input a brute-force nearest search over all codes (ties to the
  code with an even mantissa), with the overflow rule of each format:
  E4M3FN (PyTorch 2.x): past 448 after rounding -> NaN, +-Inf -> NaN;
  E5M2: past 57344 after rounding -> Inf; F4 E2M1: saturate to +-6, NaN -> code 8.
"""

import json
import os

import numpy as np

SEED = 20240611
rng = np.random.default_rng(SEED)


def f32_from_bits(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits_from_f32(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


# ---------------------------------------------------------------- F16 / BF16

def f16_inputs():
    parts = []
    specials = np.array(
        [0.0, -0.0, 1.0, -1.0, 65504.0, -65504.0, 65519.0, 65520.0, 65536.0,
         1e9, -1e9, np.inf, -np.inf, np.nan, 2.0 ** -24, 2.0 ** -25,
         2.0 ** -25 * 1.0000001, 2.0 ** -26, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25,
         1e-45, -1e-45, 3.4028235e38, 1.17549435e-38, 0.1, 1 / 3],
        dtype=np.float32)
    parts.append(bits_from_f32(specials))
    # NaNs with payloads and both signs.
    parts.append(np.array([0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000,
                           0xffffffff, 0x7fc02000], dtype=np.uint32))
    # Midpoints between consecutive finite F16 values (exact ties), and one
    # F32 ulp either side, for a spread of codes including subnormals.
    codes = np.concatenate([np.arange(0, 64), np.arange(0x3b00, 0x3c40),
                            np.arange(0x7bc0, 0x7bff),
                            rng.integers(0, 0x7bff, 400)]).astype(np.uint16)
    lo = codes.view(np.float16).astype(np.float64)
    hi = (codes + 1).astype(np.uint16).view(np.float16).astype(np.float64)
    mid = ((lo + hi) / 2).astype(np.float32)
    mb = bits_from_f32(mid)
    parts += [mb, mb + 1, mb - 1, mb | 0x80000000]
    # Random F32 bit patterns with exponents around the F16 range.
    exp = rng.integers(127 - 30, 127 + 18, 1500).astype(np.uint32)
    man = rng.integers(0, 1 << 23, 1500).astype(np.uint32)
    sign = rng.integers(0, 2, 1500).astype(np.uint32)
    parts.append((sign << 31) | (exp << 23) | man)
    # Gaussian weights.
    parts.append(bits_from_f32(rng.normal(0, 0.02, 500).astype(np.float32)))
    return np.concatenate(parts).astype(np.uint32)


def bf16_reference(bits):
    out = []
    for b in bits.tolist():
        sign = b & 0x80000000
        a = b & 0x7fffffff
        if a > 0x7f800000:
            out.append(None)  # NaN: the test checks NaN-ness and sign
            continue
        if a == 0x7f800000:
            out.append((sign | a) >> 16)
            continue
        x = float(f32_from_bits([a])[0])
        lo = a & 0xffff0000
        hi = lo + 0x10000
        lo_v = float(f32_from_bits([lo])[0])
        hi_v = 2.0 ** 128 if hi == 0x7f800000 else float(f32_from_bits([hi])[0])
        dl, dh = x - lo_v, hi_v - x
        if dl < dh or (dl == dh and ((lo >> 16) & 1) == 0):
            pick = lo
        else:
            pick = hi
        out.append((sign | pick) >> 16)
    return out


# ---------------------------------------------------------------- minifloats

FORMATS = {
    # mantissa bits, bias, sign bit, NaN magnitude codes, infinity magnitude code
    "F8_E4M3": dict(m=3, bias=7, sign=0x80, nan={0x7f}, inf=None),
    "F8_E5M2": dict(m=2, bias=15, sign=0x80, nan={0x7d, 0x7e, 0x7f}, inf=0x7c),
    "F4": dict(m=1, bias=1, sign=0x8, nan=set(), inf=None),
}


def code_value(f, mag):
    """The real value of a magnitude code, from the format's formula."""
    e = mag >> f["m"]
    man = mag & ((1 << f["m"]) - 1)
    if e == 0:
        return man * 2.0 ** (1 - f["bias"] - f["m"])
    return (1 + man / 2.0 ** f["m"]) * 2.0 ** (e - f["bias"])


def decode_table(f):
    out = []
    for code in range(2 * f["sign"]):
        neg = bool(code & f["sign"])
        mag = code & (f["sign"] - 1)
        if mag in f["nan"]:
            out.append(None)
        elif mag == f["inf"]:
            out.append(int(bits_from_f32([-np.inf if neg else np.inf])[0]))
        else:
            v = code_value(f, mag)
            out.append(int(bits_from_f32([-v if neg else v])[0]))
    return out


def encode_reference(name, f, bits):
    finite = [mag for mag in range(f["sign"])
              if mag not in f["nan"] and mag != f["inf"]]
    vals = np.array([code_value(f, mag) for mag in finite])
    top = vals.max()
    # The step past the largest finite value, as if the exponent went on:
    # rounding onto it means overflow.
    m = f["m"]
    step = 2.0 ** (np.floor(np.log2(top)) - m)
    beyond = top + step
    beyond_even = name == "F8_E5M2"  # 65536 = 1.00 x 2^16 is even; 480 = 1.111 x 2^8 odd
    out = []
    for b in bits.tolist():
        neg = (b >> 31) & 1
        sign = f["sign"] if neg else 0
        a = b & 0x7fffffff
        if a > 0x7f800000:  # NaN
            out.append({"F8_E4M3": 0x7f | sign, "F8_E5M2": 0x7f | sign, "F4": 0x8}[name])
            continue
        if a == 0x7f800000:
            out.append({"F8_E4M3": 0x7f, "F8_E5M2": 0x7c, "F4": 0x7}[name] | sign)
            continue
        x = float(f32_from_bits([a])[0])
        d = np.abs(vals - x)
        best = d.min()
        ties = [finite[i] for i in np.nonzero(d == best)[0]]
        pick = ties[0] if len(ties) == 1 else [t for t in ties if t % 2 == 0][0]
        if x > top:
            db = beyond - x
            dt = x - top
            if db < dt or (db == dt and beyond_even):
                pick = {"F8_E4M3": 0x7f, "F8_E5M2": 0x7c, "F4": 0x7}[name]
            else:
                pick = finite[int(np.argmax(vals))]
        out.append(pick | sign)
    return out


def minifloat_inputs(name, f):
    finite = [mag for mag in range(f["sign"])
              if mag not in f["nan"] and mag != f["inf"]]
    vals = sorted(code_value(f, mag) for mag in finite)
    parts = []
    # Every code value, the midpoints between neighbours, one F32 ulp either side.
    v = np.array(vals, dtype=np.float64)
    mids = ((v[:-1] + v[1:]) / 2).astype(np.float32)
    mb = bits_from_f32(mids)
    parts += [bits_from_f32(v.astype(np.float32)), mb, mb + 1, mb - 1]
    # Around and past the top: the overflow midpoint, far beyond, +-Inf, NaN.
    top = v.max()
    m = f["m"]
    beyond = top + 2.0 ** (np.floor(np.log2(top)) - m)
    ov = np.array([(top + beyond) / 2, beyond, beyond * 2, 1e30, np.inf, np.nan,
                   top * 1.01, 1e-40, 2.0 ** -30], dtype=np.float32)
    ob = bits_from_f32(ov)
    parts += [ob, ob + 1, ob - 1]
    parts.append(np.array([0x7fa00000, 0xffc00000, 0xff800000], dtype=np.uint32))
    # Random values, log-uniform over the range and a bit beyond.
    lo_exp = np.log2(vals[1]) - 3
    hi_exp = np.log2(top) + 2
    r = (2.0 ** rng.uniform(lo_exp, hi_exp, 1500)).astype(np.float32)
    parts.append(bits_from_f32(r))
    allb = np.concatenate(parts).astype(np.uint32)
    negs = allb | np.uint32(0x80000000)
    return np.concatenate([allb, negs])


def main():
    f16_in = f16_inputs()
    with np.errstate(over="ignore"):  # overflow to Inf is part of the reference
        f16_out = f32_from_bits(f16_in).astype(np.float16).view(np.uint16)
    f16_nan = np.isnan(f32_from_bits(f16_in))
    vectors = {
        "about": "Generated by tests/vectors/gen/dtypes.py (NumPy %s, seed %d); "
                 "F32 inputs and all outputs are bit patterns; null = NaN." % (np.__version__, SEED),
        "f16": {
            "input": f16_in.tolist(),
            "expected": [None if n else int(o) for o, n in zip(f16_out.tolist(), f16_nan)],
        },
        "bf16": {"input": f16_in.tolist(), "expected": bf16_reference(f16_in)},
    }
    for name, f in FORMATS.items():
        ins = minifloat_inputs(name, f)
        vectors[name] = {
            "decode": decode_table(f),
            "input": ins.tolist(),
            "expected": encode_reference(name, f, ins),
        }
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dtypes.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(vectors, fh, separators=(",", ":"))
        fh.write("\n")
    print("wrote", out, {k: len(v["input"]) for k, v in vectors.items() if k != "about"})


if __name__ == "__main__":
    main()
