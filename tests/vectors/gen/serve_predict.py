#!/usr/bin/python3
"""Reference predictions for the server tests, computed with NumPy in float64
on float32 weights and inputs (independent of the TypeScript forward pass).

Run from the repository root with the Debian Python that has numpy:

    /usr/bin/python3 tests/vectors/gen/serve_predict.py > tests/vectors/serve_predict.json

The network: dense 6 -> 16 (tanh), dense 16 -> 4 (softmax). Weights are
`0.1 + 0.5 * cos(k)`-style deterministic patterns stored as float32; seven
input rows.
"""

import json

import numpy as np


def pattern(shape, phase, scale):
    n = int(np.prod(shape))
    k = np.arange(n, dtype=np.float64)
    return (scale * np.cos(0.37 * k + phase) + 0.05 * np.sin(1.3 * k)).astype(np.float32).reshape(shape)


w0 = pattern((16, 6), 0.1, 0.6)
b0 = pattern((16,), 0.7, 0.2)
w1 = pattern((4, 16), 1.9, 0.5)
b1 = pattern((4,), 2.3, 0.1)
x = pattern((7, 6), 0.4, 1.5)

h = np.tanh(x.astype(np.float64) @ w0.astype(np.float64).T + b0.astype(np.float64))
z = h @ w1.astype(np.float64).T + b1.astype(np.float64)
z = z - z.max(axis=1, keepdims=True)
y = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def floats(a):
    return [float(v) for v in a.reshape(-1)]


print(json.dumps({
    "config": {
        "input_size": 6,
        "layers": [
            {"type": "dense", "output_size": 16, "activation": "tanh"},
            {"type": "dense", "output_size": 4, "activation": "softmax"},
        ],
    },
    "weights": {
        "layers.0.weight": {"shape": [16, 6], "data": floats(w0)},
        "layers.0.bias": {"shape": [16], "data": floats(b0)},
        "layers.1.weight": {"shape": [4, 16], "data": floats(w1)},
        "layers.1.bias": {"shape": [4], "data": floats(b1)},
    },
    "inputs": x.astype(np.float64).tolist(),
    "outputs": y.tolist(),
}))
