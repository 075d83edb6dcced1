#!/usr/bin/python3
"""Reference outputs for every built-in layer, computed independently of the
TypeScript code with PyTorch (float64) and NumPy.

Run from the repository root with the Debian Python that has torch and numpy:

    /usr/bin/python3 tests/vectors/gen/layers.py > tests/vectors/layers.json

Each case holds a network config, its weights (float32 values), an input and
the expected output. Inputs and weights are float32 numbers; the reference
math runs in float64 on those exact values. Sparsemax and entmax are computed
here by bisection on the threshold (the TypeScript kernels sort instead), so
the two sides share no algorithm. Gumbel noise comes from a Python
re-implementation of the library's seeded generator (xoshiro128** seeded by
splitmix32), drawing one uniform (u32 + 0.5) / 2^32 per value, row-major.
"""

import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
RS = np.random.RandomState(20240611)

M32 = 0xFFFFFFFF


# ---------------------------------------------------------------- helpers

def f32(shape, scale=1.0):
    return (RS.standard_normal(shape) * scale).astype(np.float32)


def t(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


def enc(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


CASES = []


def case(name, layer, config, weights, x, y):
    CASES.append({
        "name": name,
        "layer": layer,
        "config": config,
        "weights": {k: enc(v) for k, v in weights.items()},
        "input": enc(x),
        "output": enc(np.asarray(y, dtype=np.float64)),
    })


def act(name, z, slope=0.01):
    z = t(z)
    if name == "linear":
        r = z
    elif name == "relu":
        r = F.relu(z)
    elif name == "leaky_relu":
        r = F.leaky_relu(z, slope)
    elif name == "sigmoid":
        r = torch.sigmoid(z)
    elif name == "tanh":
        r = torch.tanh(z)
    elif name == "softplus":
        r = torch.logaddexp(torch.zeros_like(z), z)
    elif name == "gelu":
        r = F.gelu(z)
    elif name == "gelu_tanh":
        r = F.gelu(z, approximate="tanh")
    elif name == "silu":
        r = F.silu(z)
    elif name == "softmax":
        r = torch.softmax(z, dim=-1)
    else:
        raise ValueError(name)
    return r.numpy()


def dense_ref(x, w, b, activation="linear", slope=0.01):
    z = F.linear(t(x), t(w), None if b is None else t(b)).numpy()
    return act(activation, z, slope)


# Threshold-based projections, solved by bisection in float64.

def bisect_threshold(z, alpha, iters=200):
    """p_i = [(a-1) z_i - tau]_+^(1/(a-1)), sum p = 1; returns p (1-D)."""
    z = np.asarray(z, dtype=np.float64)
    am1 = alpha - 1.0
    s = am1 * z
    lo, hi = s.max() - 1.0, s.max()
    for _ in range(iters):
        mid = (lo + hi) / 2
        p = np.clip(s - mid, 0, None) ** (1.0 / am1)
        if p.sum() >= 1:
            lo = mid
        else:
            hi = mid
    p = np.clip(s - lo, 0, None) ** (1.0 / am1)
    return p / p.sum()


def rows_apply(fn, x):
    x = np.asarray(x, dtype=np.float64)
    flat = x.reshape(-1, x.shape[-1])
    return np.stack([fn(r) for r in flat]).reshape(x.shape)


def sparsemax_ref(x, temperature=1.0):
    return rows_apply(lambda r: bisect_threshold(r / temperature, 2.0), x)


def entmax_ref(x, alpha, temperature=1.0):
    return rows_apply(lambda r: bisect_threshold(r / temperature, alpha), x)


def softmax_ref(x, temperature=1.0):
    return torch.softmax(t(x) / temperature, dim=-1).numpy()


class Rng:
    """xoshiro128** seeded through splitmix32 (same stream as core/rng.ts)."""

    def __init__(self, seed):
        self.sm = seed & M32
        self.s = [self._splitmix() for _ in range(4)]
        if not any(self.s):
            self.s[0] = 1

    def _splitmix(self):
        self.sm = (self.sm + 0x9E3779B9) & M32
        z = self.sm
        z = ((z ^ (z >> 16)) * 0x85EBCA6B) & M32
        z = ((z ^ (z >> 13)) * 0xC2B2AE35) & M32
        return (z ^ (z >> 16)) & M32

    @staticmethod
    def _rotl(x, k):
        return ((x << k) | (x >> (32 - k))) & M32

    def u32(self):
        s0, s1, s2, s3 = self.s
        r = (self._rotl((s1 * 5) & M32, 7) * 9) & M32
        tt = (s1 << 9) & M32
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= tt
        s3 = self._rotl(s3, 11)
        self.s = [s0, s1, s2, s3]
        return r


def gumbel_ref(x, seed, temperature=1.0):
    x = np.asarray(x, dtype=np.float64)
    rng = Rng(seed)
    u = np.array([(rng.u32() + 0.5) / 4294967296.0 for _ in range(x.size)])
    g = -np.log(-np.log(u)).reshape(x.shape)
    return softmax_ref(x + g, temperature)


def layer_norm_ref(x, w, b, eps):
    return F.layer_norm(t(x), (x.shape[-1],), t(w), None if b is None else t(b), eps).numpy()


def rms_norm_ref(x, w, eps):
    x = np.asarray(x, dtype=np.float64)
    ms = (x * x).mean(axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * np.asarray(w, dtype=np.float64)


def swiglu_ref(x, wg, wu, wd, bg=None, bu=None, bd=None):
    g = F.linear(t(x), t(wg), None if bg is None else t(bg))
    u = F.linear(t(x), t(wu), None if bu is None else t(bu))
    return F.linear(F.silu(g) * u, t(wd), None if bd is None else t(bd)).numpy()


def kmeans_dist(x, c, metric):
    x = np.asarray(x, dtype=np.float64)[..., None, :]
    c = np.asarray(c, dtype=np.float64)
    if metric == "euclidean":
        return np.sqrt(((x - c) ** 2).sum(-1))
    if metric == "manhattan":
        return np.abs(x - c).sum(-1)
    dot = (x * c).sum(-1)
    return 1 - dot / (np.linalg.norm(x, axis=-1) * np.linalg.norm(c, axis=-1))


def kmeans_ref(x, c, mode="probabilities", temperature=1.0, metric="euclidean"):
    d = kmeans_dist(x, c, metric)
    c = np.asarray(c, dtype=np.float64)
    if mode == "reconstruction":
        return c[np.argmin(d, axis=-1)]
    p = softmax_ref(-(d ** 2), temperature)
    if mode == "probabilities":
        return p
    return p @ c


def topk_renorm(w, k):
    out = np.zeros_like(w)
    for r in range(w.shape[0]):
        # largest first, lower index first on ties
        idx = sorted(range(w.shape[1]), key=lambda j: (-w[r, j], j))[:k]
        out[r, idx] = w[r, idx] / w[r, idx].sum()
    return out


def net(layers, input_size=None, **grid):
    cfg = dict(grid)
    if input_size is not None:
        cfg["input_size"] = input_size
    cfg["layers"] = layers
    return cfg


# ---------------------------------------------------------------- dense

ACTS = ["linear", "relu", "leaky_relu", "sigmoid", "tanh", "softplus", "gelu",
        "gelu_tanh", "silu", "softmax"]
for a in ACTS:
    for shape, (din, dout) in (([4], (6, 5)), ([2, 3], (3, 7))):
        x = f32(shape + [din], 2.0)
        w, b = f32((dout, din)), f32((dout,))
        layer = {"type": "dense", "output_size": dout, "activation": a}
        slope = 0.01
        if a == "leaky_relu" and shape == [2, 3]:
            layer["negative_slope"] = 0.2
            slope = 0.2
        case(f"dense/{a}/{'x'.join(map(str, shape))}", "dense",
             net([layer], din), {"layers.0.weight": w, "layers.0.bias": b}, x,
             dense_ref(x, w, b, a, slope))
x = f32((5, 8))
w = f32((3, 8))
case("dense/no_bias", "dense",
     net([{"type": "dense", "output_size": 3, "bias": False}], 8),
     {"layers.0.weight": w}, x, dense_ref(x, w, None))

# ---------------------------------------------------------------- softmax

for shape in ([3, 5], [2, 3, 4]):
    s = "x".join(map(str, shape))
    x = f32(shape, 2.0)
    n = shape[-1]
    case(f"softmax/standard/{s}", "softmax",
         net([{"type": "softmax"}], n), {}, x, softmax_ref(x))
    case(f"softmax/temperature/{s}", "softmax",
         net([{"type": "softmax", "softmax_variant": "temperature", "temperature": 0.5}], n),
         {}, x, softmax_ref(x, 0.5))
    mask = [bool(i % 3 != 1) for i in range(n)]
    xm = np.asarray(x, dtype=np.float64)
    ym = softmax_ref(np.where(mask, xm, -np.inf), 1.5)
    case(f"softmax/masked/{s}", "softmax",
         net([{"type": "softmax", "softmax_variant": "masked", "mask": mask, "temperature": 1.5}], n),
         {}, x, ym)
    case(f"softmax/sparsemax/{s}", "softmax",
         net([{"type": "softmax", "softmax_variant": "sparsemax"}], n), {}, x,
         sparsemax_ref(x))
    case(f"softmax/sparsemax_t2/{s}", "softmax",
         net([{"type": "softmax", "softmax_variant": "sparse", "temperature": 2}], n), {}, x,
         sparsemax_ref(x, 2.0))
    case(f"softmax/entmax15/{s}", "softmax",
         net([{"type": "softmax", "softmax_variant": "entmax"}], n), {}, x,
         entmax_ref(x, 1.5))
    case(f"softmax/entmax13/{s}", "softmax",
         net([{"type": "softmax", "softmax_variant": "entmax", "entmax_alpha": 1.3}], n), {}, x,
         entmax_ref(x, 1.3))
    case(f"softmax/gumbel/{s}", "softmax",
         net([{"type": "softmax", "softmax_variant": "gumbel", "seed": 7, "temperature": 0.7}], n),
         {}, x, gumbel_ref(x, 7, 0.7))
# sparsemax / entmax with ties and a wide spread
xt = np.array([[1, 0, 0, 0], [0.5, 0.5, 0.5, -3], [3, 2.9, -1, 0]], dtype=np.float32)
case("softmax/sparsemax/ties", "softmax",
     net([{"type": "softmax", "softmax_variant": "sparsemax"}], 4), {}, xt, sparsemax_ref(xt))
case("softmax/entmax15/ties", "softmax",
     net([{"type": "softmax", "softmax_variant": "entmax"}], 4), {}, xt, entmax_ref(xt, 1.5))
# grid: softmax per row of a rows x cols view of the features
for shape, (gr, gc) in (([2], (2, 3)), ([2, 2], (3, 2))):
    x = f32(shape + [gr * gc], 2.0)
    y = softmax_ref(x.reshape(shape + [gr, gc])).reshape(x.shape)
    case(f"softmax/grid/{'x'.join(map(str, shape))}", "softmax",
         net([{"type": "softmax", "softmax_variant": "grid", "softmax_rows": gr, "softmax_cols": gc}], gr * gc),
         {}, x, y)

# ---------------------------------------------------------------- norms

for shape, eps in (([3, 8], 1e-5), ([2, 2, 5], 1e-3)):
    s = "x".join(map(str, shape))
    d = shape[-1]
    x = f32(shape, 3.0) + 0.5
    w, b = f32((d,)), f32((d,))
    case(f"layer_norm/{s}", "layer_norm",
         net([{"type": "layer_norm", "epsilon": eps}], d),
         {"layers.0.weight": w, "layers.0.bias": b}, x, layer_norm_ref(x, w, b, eps))
    case(f"layer_norm/no_bias/{s}", "layer_norm",
         net([{"type": "layer_norm", "epsilon": eps, "bias": False}], d),
         {"layers.0.weight": w}, x, layer_norm_ref(x, w, None, eps))
    case(f"rms_norm/{s}", "rms_norm",
         net([{"type": "rms_norm", "epsilon": eps}], d),
         {"layers.0.weight": w}, x, rms_norm_ref(x, w, eps))

# ---------------------------------------------------------------- embedding

emb = f32((10, 4))
for ids in (np.array([[1, 0, 9], [3, 3, 7]]), np.array([5, 2, 8, 0])):
    y = F.embedding(torch.from_numpy(ids), t(emb)).numpy()
    case(f"embedding/{'x'.join(map(str, ids.shape))}", "embedding",
         net([{"type": "embedding", "vocab_size": 10, "embedding_dim": 4}]),
         {"layers.0.weight": emb}, ids.astype(np.float32), y)

# ---------------------------------------------------------------- swiglu

for shape, (d, h), bias in (([3], (6, 10), False), ([2, 3], (4, 7), True)):
    x = f32(shape + [d])
    wg, wu, wd = f32((h, d)), f32((h, d)), f32((d, h))
    wts = {"layers.0.gate_proj.weight": wg, "layers.0.up_proj.weight": wu,
           "layers.0.down_proj.weight": wd}
    bs = [None, None, None]
    if bias:
        bs = [f32((h,)), f32((h,)), f32((d,))]
        wts.update({"layers.0.gate_proj.bias": bs[0], "layers.0.up_proj.bias": bs[1],
                    "layers.0.down_proj.bias": bs[2]})
    case(f"swiglu/{'x'.join(map(str, shape))}", "swiglu",
         net([{"type": "swiglu", "intermediate_size": h, "bias": bias}], d),
         wts, x, swiglu_ref(x, wg, wu, wd, *bs))

# ---------------------------------------------------------------- residual

for shape in ([4], [2, 3]):
    s = "x".join(map(str, shape))
    x = f32(shape + [5])
    w, b = f32((5, 5)), f32((5,))
    y = np.asarray(x, np.float64) + dense_ref(x, w, b, "tanh")
    case(f"residual/wrapped/{s}", "residual",
         net([{"type": "residual", "layers": [{"type": "dense", "output_size": 5, "activation": "tanh"}]}], 5),
         {"layers.0.layers.0.weight": w, "layers.0.layers.0.bias": b}, x, y)
    case(f"residual/previous_layer/{s}", "residual",
         net([{"type": "dense", "output_size": 5, "activation": "tanh"}, {"type": "residual"}], 5),
         {"layers.0.weight": w, "layers.0.bias": b}, x, y)
    # residual after a size-changing layer adds that layer's input: dense 5->5 after dense 5->5
    w2, b2 = f32((5, 5)), f32((5,))
    h = dense_ref(x, w, b, "relu")
    y2 = h + dense_ref(h, w2, b2, "sigmoid")
    case(f"residual/previous_layer_deep/{s}", "residual",
         net([{"type": "dense", "output_size": 5, "activation": "relu"},
              {"type": "dense", "output_size": 5, "activation": "sigmoid"},
              {"type": "residual"}], 5),
         {"layers.0.weight": w, "layers.0.bias": b, "layers.1.weight": w2, "layers.1.bias": b2},
         x, y2)

# ---------------------------------------------------------------- sequential

for shape in ([3], [2, 2]):
    x = f32(shape + [6])
    w0, b0, w1 = f32((8, 6)), f32((8,)), f32((4, 8))
    g, bb = f32((4,)), f32((4,))
    y = layer_norm_ref(dense_ref(dense_ref(x, w0, b0, "gelu"), w1, None), g, bb, 1e-5)
    case(f"sequential/{'x'.join(map(str, shape))}", "sequential",
         net([{"type": "sequential", "layers": [
             {"type": "dense", "output_size": 8, "activation": "gelu"},
             {"type": "dense", "output_size": 4, "bias": False},
             {"type": "layer_norm"}]}], 6),
         {"layers.0.layers.0.weight": w0, "layers.0.layers.0.bias": b0,
          "layers.0.layers.1.weight": w1, "layers.0.layers.2.weight": g,
          "layers.0.layers.2.bias": bb}, x, y)

# ---------------------------------------------------------------- kmeans

for mode in ("probabilities", "features", "reconstruction"):
    for metric in ("euclidean", "cosine", "manhattan"):
        for shape in ([5], [2, 3]):
            x = f32(shape + [4])
            c = f32((3, 4))
            temp = 0.8 if metric == "euclidean" else 0.3
            layer = {"type": "kmeans", "num_clusters": 3, "kmeans_output_mode": mode,
                     "kmeans_temperature": temp, "distance_metric": metric}
            case(f"kmeans/{mode}/{metric}/{'x'.join(map(str, shape))}", "kmeans",
                 net([layer], 4), {"layers.0.centroids": c}, x,
                 kmeans_ref(x, c, mode, temp, metric))
for shape in ([4], [3, 2]):
    x = f32(shape + [6])
    w, b = f32((5, 6)), f32((5,))
    c = f32((4, 5)) * 0.5
    feats = dense_ref(x, w, b, "tanh")
    case(f"kmeans/attached/{'x'.join(map(str, shape))}", "kmeans",
         net([{"type": "kmeans", "num_clusters": 4, "kmeans_output_mode": "features",
               "attached_layer": {"type": "dense", "output_size": 5, "activation": "tanh"}}], 6),
         {"layers.0.centroids": c, "layers.0.attached.weight": w, "layers.0.attached.bias": b},
         x, kmeans_ref(feats, c, "features"))

# Lloyd iterations from given centroids (the TS fit is compared with this)
def lloyd_ref(data, init, max_iter=100):
    data = np.asarray(data, np.float64)
    c = np.asarray(init, np.float64).copy()
    assign = None
    for it in range(max_iter):
        d = np.sqrt(((data[:, None, :] - c[None]) ** 2).sum(-1))
        a = np.argmin(d, axis=1)
        if assign is not None and (a == assign).all():
            return c, a, it
        assign = a
        for k in range(c.shape[0]):
            if (a == k).any():
                c[k] = data[a == k].mean(axis=0)
    return c, assign, max_iter


centers = np.array([[0, 0, 0], [4, 4, 0], [0, 4, 4]], dtype=np.float64)
data = np.concatenate([centers[k] + RS.standard_normal((12, 3)) * 0.7 for k in range(3)]).astype(np.float32)
init = data[[0, 1, 2]]  # three points of the first cluster: Lloyd has work to do
c_fit, a_fit, it_fit = lloyd_ref(data, init)
FIT = {"data": enc(data), "init": enc(init), "centroids": enc(c_fit),
       "assignments": [int(v) for v in a_fit], "iterations": int(it_fit)}

# ---------------------------------------------------------------- parallel

def parallel_cases(shape):
    s = "x".join(map(str, shape))
    d = 6
    x = f32(shape + [d])
    w0, b0 = f32((4, d)), f32((4,))
    w1, b1 = f32((4, d)), f32((4,))
    w2 = f32((3, d))
    c3 = f32((2, d))
    o0 = dense_ref(x, w0, b0, "relu")
    o1 = dense_ref(x, w1, b1, "tanh")
    o2 = dense_ref(x, w2, None)
    o3 = kmeans_ref(x, c3)
    br = [{"type": "dense", "output_size": 4, "activation": "relu"},
          {"type": "dense", "output_size": 4, "activation": "tanh"},
          {"type": "dense", "output_size": 3, "bias": False},
          {"type": "kmeans", "num_clusters": 2}]
    wts = {"layers.0.branches.0.weight": w0, "layers.0.branches.0.bias": b0,
           "layers.0.branches.1.weight": w1, "layers.0.branches.1.bias": b1,
           "layers.0.branches.2.weight": w2, "layers.0.branches.3.centroids": c3}
    case(f"parallel/concat/{s}", "parallel",
         net([{"type": "parallel", "branches": br}], d), wts, x,
         np.concatenate([o0, o1, o2, o3], axis=-1))
    two = {k: v for k, v in wts.items() if ".branches.0." in k or ".branches.1." in k}
    case(f"parallel/add/{s}", "parallel",
         net([{"type": "parallel", "combine_mode": "add", "branches": br[:2]}], d), two, x, o0 + o1)
    case(f"parallel/avg/{s}", "parallel",
         net([{"type": "parallel", "combine_mode": "average", "branches": br[:2]}], d), two, x,
         (o0 + o1) / 2)
    # grid_scatter: 2x2x1 grid, branch 0 -> (1,1), 1 -> (0,0), 2 -> (1,0), 3 -> (0,1)
    pos = [{"branch_index": 0, "target_row": 1, "target_col": 1, "target_layer": 0},
           {"branch_index": 1, "target_row": 0, "target_col": 0, "target_layer": 0},
           {"branch_index": 2, "target_row": 1, "target_col": 0, "target_layer": 0},
           {"branch_index": 3, "target_row": 0, "target_col": 1, "target_layer": 0}]
    case(f"parallel/grid_scatter/{s}", "parallel",
         net([{"type": "parallel", "combine_mode": "grid_scatter", "grid_output_rows": 2,
               "grid_output_cols": 2, "grid_output_layers": 1, "grid_positions": pos,
               "branches": br}], d), wts, x,
         np.concatenate([o1, o3, o2, o0], axis=-1))
    # filter: gate dense d->4, outputs padded to 4
    wg, bg = f32((4, d)), f32((4,))
    gw = dict(wts, **{"layers.0.gate.weight": wg, "layers.0.gate.bias": bg})
    logits = dense_ref(x, wg, bg).reshape(-1, 4)
    outs = [o.reshape(-1, o.shape[-1]) for o in (o0, o1, o2, o3)]

    def mix(weights):
        y = np.zeros((weights.shape[0], 4))
        for j, o in enumerate(outs):
            y[:, :o.shape[1]] += weights[:, j:j + 1] * o
        return y.reshape(shape + [4])

    for variant, fn in (("standard", lambda z: softmax_ref(z, 0.7)),
                        ("sparsemax", lambda z: sparsemax_ref(z, 0.7)),
                        ("entmax", lambda z: entmax_ref(z, 1.5, 0.7))):
        case(f"parallel/filter/{variant}/{s}", "parallel",
             net([{"type": "parallel", "combine_mode": "filter", "filter_softmax": variant,
                   "filter_temperature": 0.7, "filter_gate": {"type": "dense"},
                   "branches": br}], d), gw, x, mix(fn(logits)))
    for k in (1, 2):
        case(f"parallel/filter/top{k}/{s}", "parallel",
             net([{"type": "parallel", "combine_mode": "filter", "top_k": k,
                   "filter_gate": {"type": "dense", "output_size": 4}, "branches": br}], d),
             gw, x, mix(topk_renorm(softmax_ref(logits), k)))
    case(f"parallel/filter/no_gate/{s}", "parallel",
         net([{"type": "parallel", "combine_mode": "filter", "branches": br}], d), wts, x,
         mix(np.full((logits.shape[0], 4), 0.25)))
    # nested: a parallel branch holding a sequential and another parallel
    ws, bs2 = f32((5, d)), f32((5,))
    wn = f32((5, 5))
    nested = [{"type": "sequential", "layers": [
                  {"type": "dense", "output_size": 5, "activation": "silu"},
                  {"type": "dense", "output_size": 5, "bias": False}]},
              {"type": "parallel", "combine_mode": "add", "branches": [
                  {"type": "dense", "output_size": 5, "activation": "sigmoid"},
                  {"type": "dense", "output_size": 5, "activation": "softplus"}]}]
    wa, ba, wb, bb2 = f32((5, d)), f32((5,)), f32((5, d)), f32((5,))
    nw = {"layers.0.branches.0.layers.0.weight": ws, "layers.0.branches.0.layers.0.bias": bs2,
          "layers.0.branches.0.layers.1.weight": wn,
          "layers.0.branches.1.branches.0.weight": wa, "layers.0.branches.1.branches.0.bias": ba,
          "layers.0.branches.1.branches.1.weight": wb, "layers.0.branches.1.branches.1.bias": bb2}
    y0 = dense_ref(dense_ref(x, ws, bs2, "silu"), wn, None)
    y1 = dense_ref(x, wa, ba, "sigmoid") + dense_ref(x, wb, bb2, "softplus")
    case(f"parallel/nested/{s}", "parallel",
         net([{"type": "parallel", "combine_mode": "avg", "branches": nested}], d), nw, x,
         (y0 + y1) / 2)


parallel_cases([5])
parallel_cases([2, 3])

# ---------------------------------------------------------------- seed examples (Loom docs)

with open("examples/configs/loom_kmeans.json") as fh:
    km = json.load(fh)
with open("examples/configs/loom_parallel_filter.json") as fh:
    pf = json.load(fh)
x = f32((3, 16))
w, b = f32((16, 16)) * 0.25, f32((16,))
c = f32((8, 16)) * 0.3
case("seed/loom_kmeans", "kmeans", km,
     {"layers.0.centroids": c, "layers.0.attached.weight": w, "layers.0.attached.bias": b},
     x, kmeans_ref(dense_ref(x, w, b, "tanh"), c))
wg, bg = f32((2, 16)), f32((2,))
w0, b0 = f32((8, 16)), f32((8,))
c1 = f32((4, 16))
gate = softmax_ref(dense_ref(x, wg, bg))
y = gate[:, :1] * dense_ref(x, w0, b0)
y[:, :4] += gate[:, 1:2] * kmeans_ref(x, c1)
case("seed/loom_parallel_filter", "parallel", pf,
     {"layers.0.gate.weight": wg, "layers.0.gate.bias": bg,
      "layers.0.branches.0.weight": w0, "layers.0.branches.0.bias": b0,
      "layers.0.branches.1.centroids": c1}, x, y)

# ---------------------------------------------------------------- grid network

# 2 rows x 2 cols x 1 layer: four dense layers run in row-major order
ws = [f32((4, 4)) for _ in range(4)]
bs = [f32((4,)) for _ in range(4)]
acts = ["relu", "tanh", "sigmoid", "linear"]
for shape in ([3], [2, 2]):
    x = f32(shape + [4])
    h = x
    for i in range(4):
        h = dense_ref(h, ws[i], bs[i], acts[i])
    wts = {}
    for i in range(4):
        wts[f"layers.{i}.weight"] = ws[i]
        wts[f"layers.{i}.bias"] = bs[i]
    case(f"network/grid2x2/{'x'.join(map(str, shape))}", "network",
         net([{"type": "dense", "output_size": 4, "activation": a} for a in acts], 4,
             grid_rows=2, grid_cols=2, layers_per_cell=1), wts, x, h)

# ---------------------------------------------------------------- erf (kernel precision)

ERF_X = [i / 8 for i in range(-64, 65)] + [1e-8, -3e-5, 2.999, 3.001, 5.5, -6.25, 9.0, 26.0]
ERF = {
    "x": ERF_X,
    "erf": [math.erf(v) for v in ERF_X],
    "erfc": [math.erfc(v) for v in ERF_X],
    # GELU far into the negative tail, where x·Φ(x) is tiny but not zero
    "gelu_x": [-4.0, -6.0, -8.0, -10.0, -12.0],
    "gelu": [0.5 * v * math.erfc(-v / math.sqrt(2)) for v in [-4.0, -6.0, -8.0, -10.0, -12.0]],
}

json.dump({
    "generator": "tests/vectors/gen/layers.py",
    "torch": torch.__version__,
    "numpy": np.__version__,
    "cases": CASES,
    "kmeans_fit": FIT,
    "erf": ERF,
}, sys.stdout, separators=(",", ":"))
sys.stdout.write("\n")
