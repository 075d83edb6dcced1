// Weights in ONNX: stored dtypes kept as initializers (+ Cast / DequantizeLinear),
// the F16 / I8 conversions, FP8, and what ORT computes from each.

import { assert, assertEquals, assertThrows } from "@std/assert";
import {
  decodeToF32,
  dtypeInfo,
  encodeFromF32,
  roundHalfEven,
} from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { buildNetwork, initNetwork } from "../../core/network.ts";
import { createRng } from "../../core/rng.ts";
import {
  floatTensor,
  type QuantParams,
  type Tensor,
  tensorFromF32,
  toFloat32,
} from "../../core/tensor.ts";
import { exportOnnxFiles } from "../../formats/onnx/mod.ts";
import { defaultRegistry } from "../../mod.ts";
import { assertAllClose } from "../_helpers/close.ts";
import { openOrt } from "./_ort.ts";

const reg = defaultRegistry();

const MLP = {
  input_size: 8,
  layers: [
    { type: "dense", output_size: 12, activation: "relu" },
    { type: "layer_norm" },
    { type: "dense", output_size: 5 },
  ],
};

function input(rows: number, cols: number, seed = 1): Float32Array {
  const rng = createRng(seed);
  return Float32Array.from({ length: rows * cols }, () => 2 * rng.normal());
}

/** Exports, runs ORT at batch 3, and compares with our forward on the same tensors. */
async function parity(
  config: Record<string, unknown>,
  tensors: Map<string, Tensor>,
  options: Parameters<typeof exportOnnxFiles>[1] = {},
  reference: Map<string, Tensor> = tensors,
): Promise<string[]> {
  const net = buildNetwork(reg, config, tensors);
  const files = exportOnnxFiles(net, options);
  const x = input(3, net.spec.inputSize!);
  const expected = buildNetwork(reg, config, reference).forward(
    floatTensor(x, [3, net.spec.inputSize!]),
  );
  // ORT's extended optimizations turn DequantizeLinear → MatMul into an
  // int8 MatMul on dynamically quantized activations (not exact): compare
  // int8 graphs at the basic level.
  const s = await openOrt(
    files.model,
    files.ops.includes("DequantizeLinear") ? "basic" : "all",
  );
  try {
    const got = await s.run("input", x, [3, net.spec.inputSize!]);
    assertAllClose(
      got.data,
      expected.data,
      JSON.stringify(options),
      1e-4,
      1e-6,
    );
  } finally {
    await s.close();
  }
  return files.ops;
}

/** The MLP's tensors with its two weight matrices replaced by `convert`. */
function withWeights(convert: (t: Tensor) => Tensor): Map<string, Tensor> {
  const init = initNetwork(reg, MLP, 5);
  for (const name of ["layers.0.weight", "layers.2.weight"]) {
    init.set(name, convert(init.get(name)!));
  }
  return init;
}

function recode(t: Tensor, dtype: "F16" | "BF16" | "F64" | "I16"): Tensor {
  return {
    name: t.name,
    dtype,
    shape: t.shape,
    bytes: encodeFromF32(dtype, toFloat32(t)),
  };
}

Deno.test("onnx weights: F16, BF16, F64 and integer matrices stay in their dtype, widened by Cast", async () => {
  for (const dtype of ["F16", "BF16", "F64"] as const) {
    const ops = await parity(MLP, withWeights((t) => recode(t, dtype)));
    assertEquals(ops.filter((o) => o === "Cast").length, 2, dtype);
  }
  // Plain integers (no quantization parameters): the values are the codes.
  const ints = withWeights((t) => {
    const v = toFloat32(t).map((x) => Math.round(x * 10));
    return {
      name: t.name,
      dtype: "I16",
      shape: t.shape,
      bytes: encodeFromF32("I16", v),
    };
  });
  assertEquals(
    (await parity(MLP, ints)).filter((o) => o === "Cast").length,
    2,
  );
});

/** Symmetric-or-not quantization written by the test itself (the reference). */
function quantize(
  t: Tensor,
  dtype: "I8" | "U8",
  q: (v: Float32Array) => QuantParams,
): Tensor {
  const v = toFloat32(t);
  const quant = q(v);
  const [rows, cols] = t.shape;
  const codes = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const c = quant.blockSize !== undefined
      ? Math.floor(i / quant.blockSize)
      : Math.floor(i / cols) % rows;
    const s = typeof quant.scale === "number" ? quant.scale : quant.scale[c];
    const z = quant.zeroPoint === undefined
      ? 0
      : typeof quant.zeroPoint === "number"
      ? quant.zeroPoint
      : quant.zeroPoint[c];
    codes[i] = roundHalfEven(v[i] / s) + z;
  }
  return {
    name: t.name,
    dtype,
    shape: t.shape,
    bytes: encodeFromF32(dtype, codes),
    quant,
  };
}

Deno.test("onnx weights: I8 per-channel with zero points and U8 per-tensor become DequantizeLinear", async () => {
  const perChannel = withWeights((t) =>
    quantize(t, "I8", (v) => {
      const rows = t.shape[0], cols = t.shape[1];
      const scale = new Float32Array(rows), zp = new Float32Array(rows);
      for (let r = 0; r < rows; r++) {
        let max = 0;
        for (let c = 0; c < cols; c++) {
          max = Math.max(max, Math.abs(v[r * cols + c]));
        }
        scale[r] = max / 100;
        zp[r] = (r % 5) - 2;
      }
      return { scale, zeroPoint: zp, axis: 0 };
    })
  );
  for (const opset of [13, 17, 23]) {
    const ops = await parity(MLP, perChannel, { opsetVersion: opset });
    assertEquals(ops.filter((o) => o === "DequantizeLinear").length, 2);
    assertEquals(ops.filter((o) => o === "Transpose").length, 0);
  }
  const perTensor = withWeights((t) =>
    quantize(t, "U8", () => ({ scale: 0.004, zeroPoint: 128 }))
  );
  const ops = await parity(MLP, perTensor);
  assertEquals(ops.filter((o) => o === "DequantizeLinear").length, 2);
});

Deno.test("onnx weights: block scales and fractional zero points use Cast, Sub, Mul", async () => {
  const blocks = withWeights((t) =>
    quantize(t, "I8", (v) => {
      const bs = 4, nb = v.length / bs;
      const scale = new Float32Array(nb), zp = new Float32Array(nb);
      for (let b = 0; b < nb; b++) {
        scale[b] = 0.002 + 0.0005 * (b % 7);
        zp[b] = b % 3;
      }
      return { scale, zeroPoint: zp, blockSize: bs };
    })
  );
  const ops = await parity(MLP, blocks);
  assertEquals(ops.filter((o) => o === "Transpose").length, 2);
  assert(!ops.includes("DequantizeLinear"));
  const fractional = withWeights((t) =>
    quantize(t, "I8", () => ({ scale: 0.01, zeroPoint: 0 }))
  );
  for (const t of fractional.values()) {
    if (t.quant) t.quant.zeroPoint = 0.5;
  }
  const ops2 = await parity(MLP, fractional);
  assert(ops2.includes("Sub") && !ops2.includes("DequantizeLinear"));
});

Deno.test("onnx weights: GGUF block types (Q8_0) are dequantized to F32 initializers", async () => {
  if (!dtypeInfo("Q8_0").fromF32) return;
  const cfg = {
    input_size: 64,
    layers: [{ type: "dense", output_size: 8, activation: "tanh" }],
  };
  const init = initNetwork(reg, cfg, 2);
  const w = init.get("layers.0.weight")!;
  const q = encodeFromF32("Q8_0", toFloat32(w));
  init.set(w.name, { name: w.name, dtype: "Q8_0", shape: w.shape, bytes: q });
  // The export holds the dequantized F32 weights, so ORT must equal our
  // forward on exactly those (our own Q8_0 forward also rounds activations
  // to int8, as llama.cpp does, which is checked in the kernel tests).
  const dequantized = new Map(init);
  dequantized.set(
    w.name,
    tensorFromF32(w.name, decodeToF32("Q8_0", q, 64 * 8), w.shape),
  );
  assertEquals(await parity(cfg, init, {}, dequantized), [
    "MatMul",
    "Add",
    "Tanh",
  ]);
});

Deno.test("onnx weights: weightDtype F16 halves the file and equals our forward on F16 weights", async () => {
  const cfg = {
    input_size: 32,
    layers: [
      { type: "dense", output_size: 64, activation: "gelu" },
      { type: "dense", output_size: 16 },
    ],
  };
  const f32 = initNetwork(reg, cfg, 9);
  const rounded = new Map(f32);
  for (const [n, t] of f32) {
    if (t.shape.length === 2) rounded.set(n, recode(t, "F16"));
  }
  const net = buildNetwork(reg, cfg, f32);
  const full = exportOnnxFiles(net).model.length;
  const half = exportOnnxFiles(net, { weightDtype: "F16" }).model.length;
  assert(half < full * 0.6, `F16 file ${half} bytes, F32 file ${full}`);
  // ORT on the converted export equals our forward on weights rounded by the test.
  const x = input(3, 32);
  const expected = buildNetwork(reg, cfg, rounded).forward(
    floatTensor(x, [3, 32]),
  );
  const s = await openOrt(exportOnnxFiles(net, { weightDtype: "F16" }).model);
  try {
    assertAllClose(
      (await s.run("input", x, [3, 32])).data,
      expected.data,
      "F16",
      1e-4,
      1e-6,
    );
  } finally {
    await s.close();
  }
});

Deno.test("onnx weights: weightDtype I8 is per-row symmetric int8 + DequantizeLinear", async () => {
  const f32 = initNetwork(reg, MLP, 4);
  const net = buildNetwork(reg, MLP, f32);
  // The test's own quantizer: scale = max|row| / 127, codes rounded half to even.
  const reference = new Map(f32);
  for (const name of ["layers.0.weight", "layers.2.weight"]) {
    const t = f32.get(name)!;
    reference.set(
      name,
      quantize(t, "I8", (v) => {
        const [rows, cols] = t.shape;
        const scale = new Float32Array(rows);
        for (let r = 0; r < rows; r++) {
          let m = 0;
          for (let c = 0; c < cols; c++) {
            m = Math.max(m, Math.abs(v[r * cols + c]));
          }
          scale[r] = m / 127;
        }
        return { scale, axis: 0 };
      }),
    );
  }
  const files = exportOnnxFiles(net, { weightDtype: "I8" });
  assertEquals(files.opCounts.DequantizeLinear, 2);
  const x = input(4, 8);
  const expected = buildNetwork(reg, MLP, reference).forward(
    floatTensor(x, [4, 8]),
  );
  const unquantized = net.forward(floatTensor(x, [4, 8]));
  const s = await openOrt(files.model, "basic");
  try {
    const got = (await s.run("input", x, [4, 8])).data;
    assertAllClose(got, expected.data, "I8", 1e-4, 1e-6);
    // And it is a real quantization: not the F32 result.
    assert(got.some((v, i) => Math.abs(v - unquantized.data[i]) > 1e-4));
  } finally {
    await s.close();
  }
});

/** FP8 E4M3FN codes: 0x38 = 1, 0x40 = 2, 0xB8 = −1, 0x30 = 0.5, 0x3C = 1.5, 0x00 = 0. */
const E4M3 = new Uint8Array([0x38, 0x40, 0xb8, 0x30, 0x3c, 0x00]);
/** FP8 E5M2 codes (the top byte of an F16): 0x3C = 1, 0x40 = 2, 0xBC = −1, 0x38 = 0.5, 0x3E = 1.5, 0 = 0. */
const E5M2 = new Uint8Array([0x3c, 0x40, 0xbc, 0x38, 0x3e, 0x00]);

Deno.test("onnx weights: FP8 weights are FLOAT8 initializers + Cast from opset 19", async () => {
  // W = [[1, 2, −1], [0.5, 1.5, 0]] (hand-decoded), x = [1, 2, 3] → y = [2, 3.5].
  const cfg = {
    input_size: 3,
    layers: [{ type: "dense", output_size: 2, bias: false }],
  };
  for (
    const [dtype, bytes] of [["F8_E4M3", E4M3], ["F8_E5M2", E5M2]] as const
  ) {
    const tensors = new Map<string, Tensor>([[
      "layers.0.weight",
      { name: "layers.0.weight", dtype, shape: [2, 3], bytes },
    ]]);
    const net = buildNetwork(reg, cfg, tensors);
    for (const opset of [19, 21, 23]) {
      const files = exportOnnxFiles(net, { opsetVersion: opset });
      assertEquals(files.ops, ["Cast", "MatMul"]);
      const s = await openOrt(files.model);
      try {
        const y = await s.run("input", new Float32Array([1, 2, 3]), [1, 3]);
        assertEquals(Array.from(y.data), [2, 3.5], `${dtype} opset ${opset}`);
      } finally {
        await s.close();
      }
    }
    // Below opset 19 FP8 is stored as F16 (every FP8 value is exact in F16),
    // which needs the dtype table's FP8 decoder.
    if (dtypeInfo(dtype).toF32) {
      const s = await openOrt(exportOnnxFiles(net, { opsetVersion: 17 }).model);
      try {
        const y = await s.run("input", new Float32Array([1, 2, 3]), [1, 3]);
        assertEquals(Array.from(y.data), [2, 3.5]);
      } finally {
        await s.close();
      }
    } else {
      assertThrows(
        () => exportOnnxFiles(net, { opsetVersion: 17 }),
        UnsupportedDTypeError,
        dtype,
      );
    }
  }
});

Deno.test("onnx weights: ORT's default optimizations quantize activations of int8 MatMuls (documented, bounded)", async () => {
  const net = buildNetwork(reg, MLP, initNetwork(reg, MLP, 4));
  const model = exportOnnxFiles(net, { weightDtype: "I8" }).model;
  const x = input(4, 8);
  const exact = await openOrt(model, "basic");
  const fused = await openOrt(model, "all");
  try {
    const a = (await exact.run("input", x, [4, 8])).data;
    const b = (await fused.run("input", x, [4, 8])).data;
    const scale = Math.max(...a.map(Math.abs));
    // Different (8-bit activations), but close: within 3% of the largest output.
    assert(a.some((v, i) => v !== b[i]));
    assertAllClose(b, a, "fused int8", 0, 0.03 * scale);
  } finally {
    await exact.close();
    await fused.close();
  }
});
