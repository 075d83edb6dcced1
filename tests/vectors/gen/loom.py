#!/usr/bin/python3
"""Writes tests/vectors/loom.json: Loom bundles and what they compute.

Run with the reference Python (NumPy 1.24):

    /usr/bin/python3 tests/vectors/gen/loom.py

The bundles are written here the way Loom's Go serializer lays them out
(indented JSON; `{"type", "version", "models": [{"id", "cfg", "weights":
{"fmt", "data"}}]}`; `jsonModelB64` blobs with float32 arrays printed in their
shortest form; `multiPrecisionB64` blobs of base64 little-endian arrays;
dense / attention / SwiGLU matrices laid out [in][out]). Layer definitions
carry Loom's own field names (`input_height`, `output_height`, `norm_size`,
`branches`, `branch_weights`, `cluster_centers`, ...), and dense entries carry
the `width`/`height` fields its saver adds.

Expected outputs are computed with NumPy in float64 from the float32 weights,
with each layer doing what its name means (the mapping the README documents):
relu = max(0, x) (and 1.1 max(0, x) for the scaled-ReLU option), leaky_relu
slope 0.1, gelu = tanh approximation, "" = relu, layer_norm eps 1e-5 by
default, kmeans logits -d^2 / (2 T^2), a filter mixture without gate = equal
weights with zero padding, residual = input + the previous layer's input,
attention causal with half-split (GPT-NeoX) rotary embeddings.

multiPrecision: for each Loom dtype, a dense layer's kernel and bias encoded
with Loom's encoders, and the values Loom's decoder gives back (computed here
from its formulas: int8 code/scale, uint8 code/127.5 - 1, float4
(q/7.5 - 1)*scale high nibble first, ...).
"""

import base64
import json
import math
import os

import numpy as np

rng = np.random.default_rng(20240613)
f32 = np.float32


def w(*shape, s=0.5):
    return rng.normal(0, s, shape).astype(np.float32)


# ---------------------------------------------------------------- JSON out


def f32_text(v):
    """Shortest text that reads back as the same float32 (as Go writes it)."""
    v = f32(v)
    if v == 0:
        return "0"
    for p in range(1, 10):
        t = np.format_float_positional(v, precision=p, unique=False, trim="-") \
            if abs(v) >= 1e-4 else np.format_float_scientific(v, precision=p - 1, unique=False, trim="-")
        if f32(float(t)) == v:
            return t
    return repr(float(v))


def dumps_blob(obj):
    """JSON with numpy float32 arrays as float lists in shortest float32 form."""
    if isinstance(obj, np.ndarray):
        return "[" + ",".join(f32_text(x) for x in obj.reshape(-1)) + "]"
    if isinstance(obj, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dumps_blob(v) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(dumps_blob(v) for v in obj) + "]"
    return json.dumps(obj)


def bundle(models, version=1):
    return json.dumps({"type": "modelhost/bundle", "version": version, "models": models}, indent=2)


def json_model(mid, cfg, layer_weights):
    blob = {"type": "float32", "dtype": "", "layers": layer_weights}
    data = base64.b64encode(dumps_blob(blob).encode()).decode()
    return {"id": mid, "cfg": cfg, "weights": {"fmt": "jsonModelB64", "data": data}}


def cfg_of(mid, layers, rows=1, cols=1, per=None):
    return {
        "id": mid,
        "batch_size": 1,
        "grid_rows": rows,
        "grid_cols": cols,
        "layers_per_cell": per if per is not None else len(layers),
        "layers": layers,
    }


# ---------------------------------------------------------------- semantics

ACT = {
    "relu": lambda x: np.maximum(x, 0),
    "": lambda x: np.maximum(x, 0),
    "leaky_relu": lambda x: np.where(x < 0, 0.1 * x, x),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softplus": lambda x: np.log1p(np.exp(x)),
    "linear": lambda x: x,
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
}


def dense(x, k, b, act, scaled=False):
    z = x @ k.astype(np.float64) + b.astype(np.float64)
    y = ACT[act](z)
    if scaled and act in ("relu", ""):
        y = 1.1 * y
    return y


class Dense:
    def __init__(self, n_in, n_out, act):
        self.n_in, self.n_out, self.act = n_in, n_out, act
        self.k = w(n_in, n_out)  # Loom layout [in][out]
        self.b = w(n_out, s=0.1)

    def d(self):
        return {"type": "dense", "activation": self.act, "width": 1, "height": 1,
                "input_height": self.n_in, "output_height": self.n_out}

    def weights(self):
        return {"kernel": self.k, "biases": self.b}

    def run(self, x, scaled=False):
        return dense(x, self.k, self.b, self.act, scaled)


def layer_norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def rms_norm(x, g, eps):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * g


def softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def silu(x):
    return x / (1 + np.exp(-x))


out = {}

# ---------------------------------------------------------------- A: Loom's own example
# The config of Loom's tests, verbatim as data (the reference doc quotes it).
ex_cfg = json.loads(
    '{"dtype":"float32","batch_size":1,"grid_rows":1,"grid_cols":1,"layers_per_cell":2,'
    '"layers":[{"type":"dense","activation":"leaky_relu","input_height":8,"output_height":16},'
    '{"type":"dense","activation":"sigmoid","input_height":16,"output_height":4}]}'
)
a0, a1 = Dense(8, 16, "leaky_relu"), Dense(16, 4, "sigmoid")
x = w(3, 8, s=1.0)
out["example"] = {
    "bundle": bundle([json_model("example", ex_cfg, [a0.weights(), a1.weights()])]),
    "input": x.reshape(-1).tolist(),
    "input_shape": [3, 8],
    "output": a1.run(a0.run(x)).reshape(-1).tolist(),
    "kernel0": a0.k.reshape(-1).tolist(),  # [in][out], for the transpose check
}

# ---------------------------------------------------------------- B: activations
acts = ["relu", "tanh", "softplus", "linear", "gelu", ""]
sizes = [5, 6, 6, 6, 6, 6, 3]
ds = [Dense(sizes[i], sizes[i + 1], a) for i, a in enumerate(acts)]
x = w(4, 5, s=1.5)
y = x.astype(np.float64)
ys = x.astype(np.float64)
for d in ds:
    y = d.run(y)
    ys = d.run(ys, scaled=True)
out["activations"] = {
    "bundle": bundle([json_model("acts", cfg_of("acts", [d.d() for d in ds], rows=2, cols=1, per=3),
                                 [d.weights() for d in ds])]),
    "input": x.reshape(-1).tolist(),
    "input_shape": [4, 5],
    "output": y.reshape(-1).tolist(),
    "output_scaled_relu": ys.reshape(-1).tolist(),
}

# ---------------------------------------------------------------- C: norms, residual, swiglu, softmax
d0 = Dense(6, 8, "tanh")
ln_g, ln_b = w(8, s=1.0), w(8, s=0.1)
sg_g, sg_u, sg_d = w(8, 12), w(8, 12), w(12, 8)  # [in][out]
sg_gb, sg_ub, sg_db = w(12, s=0.1), w(12, s=0.1), w(8, s=0.1)
rms_g = w(8, s=1.0)
norm_layers = [
    d0.d(),
    {"type": "layer_norm", "activation": "relu", "norm_size": 8},
    {"type": "residual", "activation": "relu"},
    {"type": "swiglu", "activation": "relu", "input_height": 8, "output_height": 12},
    {"type": "rms_norm", "activation": "relu", "norm_size": 8, "epsilon": 1e-5},
    {"type": "softmax", "activation": "relu", "softmax_variant": "temperature", "temperature": 2.0},
]
norm_weights = [
    d0.weights(),
    {"gamma": ln_g, "beta": ln_b},
    {},
    {"gate_weights": sg_g, "up_weights": sg_u, "down_weights": sg_d,
     "gate_bias": sg_gb, "up_bias": sg_ub, "down_bias": sg_db},
    {"gamma": rms_g},
    {},
]
x = w(3, 6, s=1.0)
h0 = d0.run(x)
h1 = layer_norm(h0, ln_g, ln_b, 1e-5)
h2 = h1 + h0
G = h2 @ sg_g.astype(np.float64) + sg_gb
U = h2 @ sg_u.astype(np.float64) + sg_ub
h3 = (silu(G) * U) @ sg_d.astype(np.float64) + sg_db
h4 = rms_norm(h3, rms_g, 1e-5)
h5 = softmax(h4 / 2.0)
out["norms"] = {
    "bundle": bundle([json_model("norms", cfg_of("norms", norm_layers), norm_weights)]),
    "input": x.reshape(-1).tolist(),
    "input_shape": [3, 6],
    "output": h5.reshape(-1).tolist(),
}

# ---------------------------------------------------------------- D: parallel, sequential, kmeans
p0a = Dense(6, 3, "sigmoid")
p0b1, p0b2 = Dense(6, 4, "relu"), Dense(4, 2, "linear")
p1a, p1b = Dense(5, 5, "tanh"), Dense(5, 3, "linear")
km_att = Dense(5, 3, "linear")
km_c = w(4, 3, s=1.0)
g0, g1 = Dense(4, 2, "tanh"), Dense(4, 3, "sigmoid")
s0, s1 = Dense(5, 2, "linear"), Dense(5, 2, "tanh")
v0, v1 = Dense(2, 2, "linear"), Dense(2, 2, "sigmoid")
exp_layers = [
    {"type": "parallel", "activation": "relu", "combine_mode": "concat",
     "branches": [p0a.d(), {"type": "sequential", "activation": "relu", "branches": [p0b1.d(), p0b2.d()]}]},
    {"type": "parallel", "activation": "relu", "combine_mode": "filter", "branches": [p1a.d(), p1b.d()]},
    {"type": "kmeans", "activation": "relu", "num_clusters": 4, "kmeans_temperature": 0.5,
     "kmeans_output_mode": "probabilities", "distance_metric": "euclidean", "cluster_dim": 3,
     "branches": [km_att.d()]},
    {"type": "parallel", "activation": "relu", "combine_mode": "grid_scatter",
     "grid_output_rows": 1, "grid_output_cols": 2, "grid_output_layers": 1,
     "grid_positions": [
         {"branch_index": 0, "target_row": 0, "target_col": 1, "target_layer": 0},
         {"branch_index": 1, "target_row": 0, "target_col": 0, "target_layer": 0}],
     "branches": [g0.d(), g1.d()]},
    {"type": "parallel", "activation": "relu", "combine_mode": "add", "branches": [s0.d(), s1.d()]},
    {"type": "parallel", "activation": "relu", "combine_mode": "avg", "branches": [v0.d(), v1.d()]},
]
exp_weights = [
    {"branch_weights": [p0a.weights(), {"branch_weights": [p0b1.weights(), p0b2.weights()]}]},
    {"branch_weights": [p1a.weights(), p1b.weights()]},
    {"cluster_centers": km_c, "branch_weights": [km_att.weights()]},
    {"branch_weights": [g0.weights(), g1.weights()]},
    {"branch_weights": [s0.weights(), s1.weights()]},
    {"branch_weights": [v0.weights(), v1.weights()]},
]
x = w(3, 6, s=1.0)
e0 = np.concatenate([p0a.run(x), p0b2.run(p0b1.run(x))], -1)
b0, b1 = p1a.run(e0), p1b.run(e0)
e1 = (b0 + np.pad(b1, ((0, 0), (0, 2)))) / 2
f = km_att.run(e1)
d2 = ((f[:, None, :] - km_c[None, :, :].astype(np.float64)) ** 2).sum(-1)
e2 = softmax(-d2 / (2 * 0.5 * 0.5))
e3 = np.concatenate([g1.run(e2), g0.run(e2)], -1)
e4 = s0.run(e3) + s1.run(e3)
e5 = (v0.run(e4) + v1.run(e4)) / 2
out["experts"] = {
    "bundle": bundle([json_model("experts", cfg_of("experts", exp_layers), exp_weights)]),
    "input": x.reshape(-1).tolist(),
    "input_shape": [3, 6],
    "output": e5.reshape(-1).tolist(),
}

# ---------------------------------------------------------------- E: embedding + kmeans features
emb = w(10, 6, s=1.0)
t1 = Dense(6, 4, "relu")
kc = w(3, 4, s=1.0)
tok_layers = [
    {"type": "embedding", "activation": "relu", "vocab_size": 10, "embedding_dim": 6},
    t1.d(),
    {"type": "kmeans", "activation": "relu", "num_clusters": 3, "kmeans_output_mode": "features"},
]
tok_weights = [{"embedding_weights": emb}, t1.weights(), {"cluster_centers": kc}]
ids = np.array([[1, 4, 9], [0, 0, 7]])
h = t1.run(emb[ids].astype(np.float64))
dd = ((h[..., None, :] - kc.astype(np.float64)) ** 2).sum(-1)
p = softmax(-dd / 2.0)
y = p @ kc.astype(np.float64)
out["tokens"] = {
    "bundle": bundle([json_model("tokens", cfg_of("tokens", tok_layers), tok_weights)]),
    "input": ids.reshape(-1).astype(float).tolist(),
    "input_shape": [2, 3],
    "output": y.reshape(-1).tolist(),
}

# ---------------------------------------------------------------- F: attention
D, H, T = 8, 2, 5
hd = D // H
Wq, Wk, Wv, Wo = w(D, D), w(D, D), w(D, D), w(D, D)  # [in][out]
bq, bk, bv, bo = w(D, s=0.1), w(D, s=0.1), w(D, s=0.1), w(D, s=0.1)
x = w(T, D, s=1.0).astype(np.float64)
Q, K, V = x @ Wq + bq, x @ Wk + bk, x @ Wv + bv
half = hd // 2
freq = 1.0 / (10000.0 ** (np.arange(half) * 2 / hd))


def rope(m):
    m = m.reshape(T, H, hd).copy()
    ang = np.arange(T)[:, None] * freq[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = m[..., :half].copy(), m[..., half:].copy()
    m[..., :half] = a * c - b * s
    m[..., half:] = a * s + b * c
    return m


Qr, Kr, Vr = rope(Q), rope(K), V.reshape(T, H, hd)
att = np.zeros((T, H, hd))
for hh in range(H):
    sc = Qr[:, hh, :] @ Kr[:, hh, :].T / math.sqrt(hd)
    sc = sc + np.triu(np.full((T, T), -np.inf), 1)
    att[:, hh, :] = softmax(sc) @ Vr[:, hh, :]
y = att.reshape(T, D) @ Wo + bo
out["attention"] = {
    "bundle": bundle([json_model("attn", cfg_of("attn", [
        {"type": "multi_head_attention", "activation": "relu", "d_model": D, "num_heads": H, "seq_length": T}]),
        [{"q_weights": Wq, "k_weights": Wk, "v_weights": Wv, "output_weight": Wo,
          "q_bias": bq, "k_bias": bk, "v_bias": bv, "output_bias": bo}])]),
    "input": x.reshape(-1).tolist(),
    "input_shape": [T, D],
    "output": y.reshape(-1).tolist(),
}

# ---------------------------------------------------------------- G: multiPrecision


def enc_mp(v, dtype, scale):
    """Loom's EncodeSliceWithDType for a float32 array; returns raw bytes."""
    v = v.astype(np.float32).reshape(-1)
    v64 = v.astype(np.float64)
    if dtype == "float32":
        return v.tobytes()
    if dtype == "float64":
        return v64.tobytes()
    if dtype == "float16":
        return v.astype(np.float16).tobytes()
    if dtype == "bfloat16":
        bits = v.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
    if dtype == "int8":
        return np.trunc(np.clip(v64 * scale, -127, 127)).astype(np.int8).tobytes()
    if dtype == "int16":
        return np.trunc(np.clip(v64 * scale, -32767, 32767)).astype(np.int16).tobytes()
    if dtype == "int32":
        return np.trunc(v64 * scale).astype(np.int32).tobytes()
    if dtype == "int64":
        return np.trunc(v64 * scale).astype(np.int64).tobytes()
    if dtype == "uint8":
        return np.trunc(np.clip((v64 + 1) * 127.5, 0, 255)).astype(np.uint8).tobytes()
    if dtype == "uint16":
        return np.trunc(np.clip((v64 + 1) * 32767.5, 0, 65535)).astype(np.uint16).tobytes()
    if dtype == "uint32":
        return np.trunc(np.clip((v64 + 1) * 2147483647.5, 0, 4294967295)).astype(np.uint32).tobytes()
    if dtype == "uint64":
        return np.trunc(np.maximum((v64 + 1) * 9.223372e18, 0)).astype(np.uint64).tobytes()
    if dtype == "float8":
        codes = []
        for x in v:
            if x == 0:
                codes.append(0)
                continue
            bits = int(np.array([x], np.float32).view(np.uint32)[0])
            sign, e, m = bits >> 31, ((bits >> 23) & 0xFF) - 127, bits & 0x7FFFFF
            ne = e + 7
            if ne >= 15:
                codes.append((sign << 7) | 0x7E)
            elif ne <= 0:
                codes.append(sign << 7)
            else:
                codes.append((sign << 7) | (ne << 3) | (m >> 20))
        return bytes(codes)
    if dtype in ("float4", "int4"):
        q = []
        for x in v:
            if dtype == "float4":
                n = min(1.0, max(-1.0, float(f32(x / f32(scale)))))
                q.append(min(15, max(0, int((n + 1) * 7.5))))
            else:
                s = float(f32(x * f32(scale / 8.0)))
                q.append(int(min(7, max(-8, math.trunc(s)))) + 8)
        if len(q) % 2:
            q.append(0 if dtype == "float4" else 8)
        return bytes((q[i] << 4) | q[i + 1] for i in range(0, len(q), 2))
    raise ValueError(dtype)


def dec_mp(raw, dtype, scale, count):
    """Loom's DecodeSliceWithDType, in float32 where Loom computes in float32."""
    b = np.frombuffer(raw, np.uint8)
    if dtype == "float32":
        return np.frombuffer(raw, np.float32)[:count]
    if dtype == "float64":
        return np.frombuffer(raw, np.float64)[:count].astype(np.float32)
    if dtype == "float16":
        return np.frombuffer(raw, np.float16)[:count].astype(np.float32)
    if dtype == "bfloat16":
        return (np.frombuffer(raw, np.uint16)[:count].astype(np.uint32) << 16).view(np.float32)
    if dtype in ("int8", "int16", "int32", "int64"):
        t = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64}[dtype]
        return (np.frombuffer(raw, t)[:count].astype(np.float64) / scale).astype(np.float32)
    if dtype in ("uint8", "uint16", "uint32", "uint64"):
        t, k = {"uint8": (np.uint8, 127.5), "uint16": (np.uint16, 32767.5),
                "uint32": (np.uint32, 2147483647.5), "uint64": (np.uint64, 9.223372e18)}[dtype]
        return (np.frombuffer(raw, t)[:count].astype(np.float64) / k - 1.0).astype(np.float32)
    if dtype == "float8":
        res = []
        for c in b[:count]:
            c = int(c)
            if c & 0x7F == 0:
                res.append(0.0)
            else:
                sgn = -1.0 if c & 0x80 else 1.0
                res.append(sgn * 2.0 ** (((c >> 3) & 15) - 7) * (1 + (c & 7) / 8))
        return np.array(res, np.float32)
    if dtype in ("float4", "int4"):
        q = []
        for byte in b:
            q += [int(byte) >> 4, int(byte) & 15]
        q = q[:count]
        if dtype == "float4":
            return np.array([f32(f32(f32(x) / f32(7.5)) - f32(1)) * f32(scale) for x in q], np.float32)
        return np.array([f32(x - 8) * f32(8.0 / scale) for x in q], np.float32)
    raise ValueError(dtype)


MP_SCALE = {"int8": 127.0, "int16": 32767.0, "int32": 2147483647.0, "int64": 127.0,
            "uint8": 255.0, "uint16": 65535.0, "uint32": 4294967295.0}
mp = {}
k = rng.uniform(-0.9, 0.9, (6, 4)).astype(np.float32)  # [in][out]; |w| < 1 for the [-1, 1] codes
b = rng.uniform(-0.9, 0.9, 4).astype(np.float32)
x = w(2, 6, s=1.0)
for dt in ["float32", "float64", "float16", "bfloat16", "float8", "float4", "int4", "int8", "int16",
           "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
    scale = MP_SCALE.get(dt, 1.0)
    kr, br = enc_mp(k, dt, scale), enc_mp(b, dt, scale)
    kd, bd = dec_mp(kr, dt, scale, 24), dec_mp(br, dt, scale, 4)
    blob = {"dtype": dt, "scale": scale, "layers": [{
        "kernel": base64.b64encode(kr).decode(), "biases": base64.b64encode(br).decode()}]}
    data = base64.b64encode(json.dumps(blob).encode()).decode()
    cfg = cfg_of("mp", [{"type": "dense", "activation": "linear", "input_height": 6, "output_height": 4}])
    cfg["dtype"] = dt
    mp[dt] = {
        "bundle": bundle([{"id": "mp", "cfg": cfg, "weights": {"fmt": "multiPrecisionB64", "data": data}}],
                         version=2),
        "kernel": kd.astype(np.float64).tolist(),  # [in][out] as Loom decodes it
        "bias": bd.astype(np.float64).tolist(),
        "output": (x.astype(np.float64) @ kd.astype(np.float64).reshape(6, 4) + bd).reshape(-1).tolist(),
    }
out["multi_precision"] = {"input": x.reshape(-1).tolist(), "input_shape": [2, 6], "dtypes": mp}

path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "loom.json")
with open(path, "w") as fh:
    json.dump(out, fh)
    fh.write("\n")
print("wrote", path)
