"""Reference vectors for the conv1d example plugin, computed by PyTorch's
torch.nn.functional.conv1d in float64 from float32 inputs and weights.
Our layout is channels last ([batch, length, channels]); PyTorch's is
[batch, channels, length], so inputs and outputs are transposed around it.

Run with the system Python that has PyTorch:
    /usr/bin/python3 examples/plugins/conv1d/testdata/gen_vectors.py
"""

import json
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(1234)

# (name, config, input shape [batch, length, channels] or [length, channels])
CASES = [
    ("basic", dict(in_channels=3, out_channels=4, kernel_size=3), [2, 7, 3]),
    ("stride_padding", dict(in_channels=2, out_channels=5, kernel_size=4, stride=2, padding=1), [3, 9, 2]),
    ("dilation_no_bias", dict(in_channels=4, out_channels=3, kernel_size=3, dilation=2, padding=2, bias=False), [1, 10, 4]),
    ("same_even_kernel", dict(in_channels=3, out_channels=2, kernel_size=4, padding="same"), [2, 6, 3]),
    ("same_dilated", dict(in_channels=2, out_channels=3, kernel_size=3, dilation=3, padding="same"), [1, 11, 2]),
    ("valid", dict(in_channels=2, out_channels=2, kernel_size=5, padding="valid"), [2, 5, 2]),
    ("groups", dict(in_channels=4, out_channels=6, kernel_size=3, groups=2, padding=1), [2, 8, 4]),
    ("depthwise", dict(in_channels=3, out_channels=3, kernel_size=2, groups=3, stride=2), [2, 9, 3]),
    ("pointwise_stride3", dict(in_channels=5, out_channels=4, kernel_size=1, stride=3), [2, 10, 5]),
    ("unbatched", dict(in_channels=2, out_channels=3, kernel_size=3, padding=1), [6, 2]),
    ("wide", dict(in_channels=16, out_channels=12, kernel_size=5, stride=2, padding=2, dilation=2), [2, 21, 16]),
]


def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]


out = []
for name, cfg, shape in CASES:
    cin, cout, k = cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
    groups = cfg.get("groups", 1)
    x = torch.randn(*shape, dtype=torch.float32)
    w = (torch.rand(cout, cin // groups, k, dtype=torch.float32) * 2 - 1) * 0.5
    b = (torch.rand(cout, dtype=torch.float32) * 2 - 1) * 0.5 if cfg.get("bias", True) else None
    batched = x if len(shape) == 3 else x.unsqueeze(0)
    y = F.conv1d(
        batched.double().transpose(1, 2),
        w.double(),
        None if b is None else b.double(),
        stride=cfg.get("stride", 1),
        padding=cfg.get("padding", 0),
        dilation=cfg.get("dilation", 1),
        groups=groups,
    ).transpose(1, 2)
    if len(shape) == 2:
        y = y.squeeze(0)
    case = {
        "name": name,
        "config": dict(type="conv1d", **cfg),
        "input_shape": list(shape),
        "input": flat(x),
        "weight_shape": list(w.shape),
        "weight": flat(w),
        "output_shape": list(y.shape),
        "output": flat(y),
    }
    if b is not None:
        case["bias"] = flat(b)
    out.append(case)

with open(os.path.join(HERE, "vectors.json"), "w") as f:
    json.dump({"generator": "torch.nn.functional.conv1d, torch " + torch.__version__, "cases": out}, f)
    f.write("\n")
