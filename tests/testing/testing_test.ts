// The plugin-author helpers (./testing): run on the built-in SafeTensors
// format and dense layer, and shown to fail on plugins that break each rule.

import {
  assert,
  assertEquals,
  AssertionError,
  assertRejects,
  assertThrows,
} from "@std/assert";
import {
  assertFormatRoundTrip,
  assertHostileInputs,
  assertLayerMatchesOnnx,
  assertLayerPlugin,
  collectBytes,
  cosineInput,
} from "../../testing/mod.ts";
import { safetensorsFormat } from "../../formats/safetensors/mod.ts";
import { denseLayer } from "../../layers/dense.ts";
import { runOrt } from "../formats/_ort.ts";
import {
  defaultRegistry,
  type FormatPlugin,
  type LayerPlugin,
  lazyTensorIndex,
  memoryTensorIndex,
  type ModelFile,
  type Tensor,
  tensorFromF32,
} from "../../mod.ts";

function values(n: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => 0.1 + 2 * Math.cos(i));
}

function file(
  tensors: Tensor[],
  extra: Partial<ModelFile["models"][0]> = {},
): ModelFile {
  return {
    models: [{
      id: "m",
      metadata: {},
      tensors: memoryTensorIndex(tensors),
      ...extra,
    }],
  };
}

function raw(
  name: string,
  dtype: Tensor["dtype"],
  shape: number[],
  bytes: ArrayLike<number>,
): Tensor {
  return { name, dtype, shape, bytes: Uint8Array.from(bytes) };
}

Deno.test("testing: SafeTensors round trip keeps dtypes byte for byte, metadata and config", async () => {
  const tensors = [
    tensorFromF32("layers.0.weight", values(12), [3, 4]),
    tensorFromF32("layers.0.bias", values(3), [3]),
    raw("ids", "I64", [2], [1, 0, 0, 0, 0, 0, 0, 0x80, 2, 0, 0, 0, 0, 0, 0, 0]),
    raw("mask", "BOOL", [3], [1, 0, 1]),
    raw("h", "F16", [2], [0x00, 0x3c, 0x00, 0xc0]),
    raw("b", "BF16", [2], [0x80, 0x3f, 0x00, 0xc0]),
    { ...raw("q", "I8", [2, 2], [1, 2, 255, 128]), quant: { scale: 0.5 } },
  ];
  const config = { layers: [{ type: "dense", input_size: 4, output_size: 3 }] };
  const { bytes, file: back } = await assertFormatRoundTrip(
    safetensorsFormat(),
    file(tensors, { config, metadata: { author: "tests", n: 3 } }),
  );
  assertEquals(back.models[0].metadata.author, "tests");
  // The same round trip with the writer converting F32 to F16: only the
  // listed tensors may change dtype, within the stated error.
  await assertFormatRoundTrip(
    safetensorsFormat(),
    file(tensors.slice(0, 2)),
    {
      write: { dtype: "F16" },
      dtypes: { "layers.0.weight": "F16", "layers.0.bias": "F16" },
      tolerance: 1e-3,
    },
  );
  const report = await assertHostileInputs(safetensorsFormat(), bytes, {
    seed: 5,
    mutations: 300,
  });
  assert(
    report.accepted > 0 && report.refused.SyntaxError > 0,
    JSON.stringify(report),
  );
});

Deno.test("testing: the dense layer passes the layer checks", () => {
  const { output, weights } = assertLayerPlugin(
    denseLayer,
    { type: "dense", output_size: 5, activation: "tanh" },
    {
      inputShape: [2, 3, 4],
      outputShape: [2, 3, 5],
      registry: defaultRegistry(),
    },
  );
  assertEquals(weights.get("layers.0.weight")?.shape, [5, 4]);
  assert(output.data.every((v) => Math.abs(v) < 1));
  assertEquals(
    Array.from(cosineInput([3]).data),
    [2.1, 0.1 + 2 * Math.cos(1), 0.1 + 2 * Math.cos(2)].map(Math.fround),
  );
});

// ---------------------------------------------------------------------------
// Broken plugins: each check must catch its rule being broken.

/** A toy format: JSON header line, then raw bytes; variants break one rule each. */
function toyFormat(
  flaw?: "drops" | "flips" | "random" | "plainError" | "hangs" | "dtype",
): FormatPlugin {
  let calls = 0;
  return {
    kind: "format",
    name: `toy-${flaw ?? "ok"}`,
    extensions: [".toy"],
    write: async (f) => {
      const m = f.models[0];
      const parts: Tensor[] = [];
      for (const n of m.tensors.names()) parts.push(await m.tensors.load(n));
      const kept = flaw === "drops" ? parts.slice(1) : parts;
      const header = JSON.stringify({
        n: flaw === "random" ? calls++ : 0,
        t: kept.map((t) => ({
          name: t.name,
          dtype: flaw === "dtype" && t.dtype === "F32" ? "I32" : t.dtype,
          shape: t.shape,
          size: t.bytes.byteLength,
        })),
      });
      const body = kept.map((t) => t.bytes.slice());
      if (flaw === "flips" && body[0]?.length) body[0][0] ^= 1;
      return await collectBytes(
        (async function* () {
          yield new TextEncoder().encode(header + "\n");
          yield* body;
        })(),
      );
    },
    read: (src) => {
      if (flaw === "hangs" && src.size % 2 === 1) {
        return new Promise(() => {}); // never settles
      }
      return src.read(0, src.size).then((all) => {
        const nl = all.indexOf(0x0a);
        if (nl < 0) {
          throw flaw === "plainError"
            ? new Error("no header")
            : new SyntaxError("no header");
        }
        const h = JSON.parse(new TextDecoder().decode(all.subarray(0, nl)));
        let at = nl + 1;
        const infos = h.t.map(
          (
            t: {
              name: string;
              dtype: Tensor["dtype"];
              shape: number[];
              size: number;
            },
          ) => {
            const info = { ...t, byteLength: t.size, byteOffset: at };
            at += t.size;
            return info;
          },
        );
        return {
          models: [{
            id: "m",
            metadata: {},
            tensors: lazyTensorIndex(
              infos,
              (i) => src.read(i.byteOffset!, i.byteLength),
            ),
          }],
        };
      });
    },
  };
}

Deno.test("testing: the round-trip check catches lost, changed and nondeterministic output", async () => {
  const f = file([
    tensorFromF32("a", values(4), [4]),
    tensorFromF32("b", values(2), [2]),
  ], {
    metadata: { k: "v" },
  });
  await assertFormatRoundTrip(toyFormat(), f, { metadata: "ignore" });
  await assertRejects(
    () => assertFormatRoundTrip(toyFormat(), f),
    AssertionError,
    'metadata key "k" was lost',
  );
  await assertRejects(
    () => assertFormatRoundTrip(toyFormat("drops"), f, { metadata: "ignore" }),
    AssertionError,
    "tensor names changed",
  );
  await assertRejects(
    () => assertFormatRoundTrip(toyFormat("flips"), f, { metadata: "ignore" }),
    AssertionError,
    'tensor "a" (F32): stored bytes changed (16 before, 16 after, first difference at byte 0)',
  );
  await assertRejects(
    () => assertFormatRoundTrip(toyFormat("random"), f, { metadata: "ignore" }),
    AssertionError,
    "writing the same file twice gave different bytes",
  );
  await assertRejects(
    () => assertFormatRoundTrip(toyFormat("dtype"), f, { metadata: "ignore" }),
    AssertionError,
    'tensor "a": dtype changed',
  );
  // Converted values outside the tolerance.
  await assertRejects(
    () =>
      assertFormatRoundTrip(
        safetensorsFormat(),
        file([tensorFromF32("w", values(8), [8])]),
        {
          write: { dtype: "F16" },
          dtypes: { w: "F16" },
          tolerance: 1e-6,
        },
      ),
    AssertionError,
    'tensor "w" element',
  );
});

Deno.test("testing: the hostile-input check catches untyped errors and hangs", async () => {
  const good = await toyFormat().write!(
    file([tensorFromF32("a", values(4), [4])]),
  ) as Uint8Array;
  const ok = await assertHostileInputs(toyFormat(), good, { mutations: 30 });
  // The intact file, up to 34 distinct truncations, 30 mutations.
  assert(
    ok.cases > 31 && ok.cases <= 65 && ok.accepted >= 1,
    JSON.stringify(ok),
  );
  await assertRejects(
    () => assertHostileInputs(toyFormat("plainError"), good, { mutations: 0 }),
    AssertionError,
    "truncated to 0 bytes: threw Error (no header); allowed: RangeError, TypeError, SyntaxError",
  );
  await assertRejects(
    () =>
      assertHostileInputs(toyFormat("hangs"), good, {
        mutations: 0,
        timeLimitMs: 50,
      }),
    AssertionError,
    "did not finish within 50 ms",
  );
  await assertRejects(
    () => assertHostileInputs(toyFormat(), new Uint8Array(3)),
    AssertionError,
    "the intact file does not read",
  );
});

Deno.test("testing: the layer check catches broken layer plugins", () => {
  let counter = 0;
  const base: LayerPlugin<{ n: number }> = {
    kind: "layer",
    type: "toy",
    parse: (_json, ctx) => ({ n: ctx.inputSize ?? 1 }),
    outputSize: (c) => c.n,
    toJSON: () => ({ type: "toy" }),
    params: (c) => [{ name: "scale", shape: [c.n], init: "uniform" }],
    build: (c, w) => {
      const s = w.getF32("scale", [c.n]);
      return {
        forward: (x) => ({
          shape: x.shape,
          data: x.data.map((v, i) => v * s[i % c.n]),
        }),
      };
    },
  };
  const check = (p: LayerPlugin<{ n: number }>) =>
    assertLayerPlugin(p as LayerPlugin<unknown>, { type: "toy" }, {
      inputShape: [2, 3],
    });
  check(base);
  assertThrows(
    () =>
      check({
        ...base,
        init: (c) =>
          new Map([["scale", new Float32Array(c.n).fill(counter++)]]),
      }),
    AssertionError,
    "init with seed 0 gave different weights on a second call",
  );
  assertThrows(
    () => check({ ...base, outputSize: () => 4 }),
    AssertionError,
    "last output dimension vs outputSize()",
  );
  assertThrows(
    () =>
      check({ ...base, toJSON: () => ({ type: "toy", version: counter++ }) }),
    AssertionError,
    "toJSON() of the normalized config does not parse back to itself",
  );
  assertThrows(
    () =>
      check({
        ...base,
        build: () => ({
          forward: (x) => ({
            shape: x.shape,
            data: x.data.map(() => counter++),
          }),
        }),
      }),
    AssertionError,
    "a second forward on the same input gave different values",
  );
  assertThrows(
    () =>
      check({
        ...base,
        build: (c, w) => ({
          forward: (x) => {
            x.data[0] = 0;
            return {
              shape: x.shape,
              data: x.data.map((v) => v * w.getF32("scale", [c.n])[0]),
            };
          },
        }),
      }),
    AssertionError,
    "forward changed its input",
  );
});

Deno.test("testing: the ONNX check passes dense and catches a wrong lowering", async () => {
  const ok = await assertLayerMatchesOnnx(
    denseLayer,
    { type: "dense", output_size: 3, activation: "gelu" },
    { inputShape: [4, 5], run: runOrt, opset: 13 },
  );
  assert(ok.maxRelativeError < 1e-5, String(ok.maxRelativeError));
  assertEquals(ok.actual.shape, [4, 3]);
  // A lowering that forgets the activation.
  const wrong = {
    ...denseLayer,
    toOnnx: (g, cfg, w, input) =>
      denseLayer.toOnnx!(g, { ...cfg, activation: "linear" }, w, input, {
        path: "x",
      }),
  } as typeof denseLayer;
  await assertRejects(
    () =>
      assertLayerMatchesOnnx(wrong, {
        type: "dense",
        output_size: 3,
        activation: "tanh",
      }, {
        inputShape: [2, 4],
        run: runOrt,
      }),
    AssertionError,
    'layer "dense" (opset 17): ONNX gives',
  );
  await assertRejects(
    () =>
      assertLayerMatchesOnnx({ ...denseLayer, toOnnx: undefined }, {
        type: "dense",
        output_size: 1,
      }, {
        inputShape: [1, 2],
        run: runOrt,
      }),
    AssertionError,
    'layer "dense" has no toOnnx lowering',
  );
});
