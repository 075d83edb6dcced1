"""GELU with erf, x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt 2)), in double
precision from Python's math.erf, on float32 inputs: the reference for
kernels/gelu.ts (tests/kernels/gelu_test.ts).

Usage: /usr/bin/python3 tests/vectors/gen/gelu_erf.py  (standard library only)
Writes tests/vectors/gelu_erf.json.
"""

import json
import math
import os
import random
import struct


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    rng = random.Random(22)
    xs = [0.0, -0.0, 1e-30, -1e-30, 1e-4, -1e-4, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0,
          5.5, -5.5, 9.0, -9.0, 14.0, -14.0, 40.0, -40.0, 100.0, -100.0]
    # a length that is not a multiple of 4 or of the kernels' split units
    xs += [f32(rng.gauss(0, 2.5)) for _ in range(1201 - len(xs))]
    xs = [f32(x) for x in xs]
    ys = [0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs]
    out = os.path.join(os.path.dirname(__file__), "..", "gelu_erf.json")
    with open(out, "w") as f:
        json.dump({"generator": "tests/vectors/gen/gelu_erf.py (math.erf, float64)",
                   "x": xs, "y": ys}, f)
        f.write("\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
