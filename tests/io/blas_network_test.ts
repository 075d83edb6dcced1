/**
 * A network of dense layers on the native backend with the activations
 * between layers in the network's reused buffers (`Layer.forwardInto`,
 * the backend's `gemmInto`): the same bits as running the layers one by
 * one, close to ONNX Runtime on the network's own ONNX export, outputs
 * the caller holds left intact by later forwards; `gemmInto` itself
 * against `gemm` (then the ReLU) and the F64 product, into a used
 * buffer, on the packed and the `cblas_sgemm` paths. Skipped with a
 * message where the library or --allow-ffi is missing.
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { buildNetwork, initNetwork } from "../../core/network.ts";
import { type FloatTensor, floatTensor } from "../../core/tensor.ts";
import { exportOnnx } from "../../formats/onnx/mod.ts";
import { openSystemBlas, type SystemBlas } from "../../io/blas.ts";
import {
  type F32GemmBackend,
  setF32GemmBackend,
} from "../../kernels/fast/backend.ts";
import { defaultRegistry } from "../../mod.ts";
import { assertAllClose } from "../_helpers/close.ts";
import { checkF32Product, uniformF32 } from "../_helpers/f32_product.ts";
import { untilHelperRuns, warmHelper } from "../_helpers/blas_warm.ts";
import { openOrt } from "../formats/_ort.ts";

/** Opens the backend, or says why the test is skipped. */
function blasOrSkip(threads: number, extra = {}): SystemBlas | null {
  const blas = openSystemBlas({ threads, ...extra });
  if (!blas.backend?.gemmInto) {
    console.log(`skipped: ${blas.note ?? "no gemmInto"}`);
    blas.close();
    return null;
  }
  return blas;
}

Deno.test("gemmInto: into a used buffer, the bits of gemm (then the ReLU), packed and cblas paths, 1 and 2 threads", async () => {
  const one = blasOrSkip(1);
  if (!one) return;
  const two = blasOrSkip(2);
  if (!two) return one.close();
  // the cblas_sgemm paths: transposed copies, and W as stored
  const plain = blasOrSkip(2, { packedWeights: false });
  if (!plain) return one.close(), two.close();
  const stored = blasOrSkip(1, { packedWeights: false, transposeRows: 0 });
  if (!stored) return one.close(), two.close(), plain.close();
  try {
    if (two.packedStats) await warmHelper(two);
    const helped = two.packedStats?.helperItems ?? 0;
    let seed = 700, zeros = 0, worst = 0;
    for (
      const [rows, inF, outF] of [
        [64, 384, 1000],
        [17, 1000, 33],
        [130, 33, 384],
        [64, 384, 1000],
        [20, 2100, 70], // several k-blocks with every kernel family's kc
        [300, 64, 70], // past packedRows: cblas_sgemm on every backend
      ]
    ) {
      const x = uniformF32(rows * inF, seed++);
      const w = uniformF32(outF * inF, seed++);
      for (const b of [uniformF32(outF, seed++), undefined]) {
        for (const relu of [false, true]) {
          const what = `${rows}×${inF}→${outF}${b ? " +bias" : ""}${
            relu ? " ReLU" : ""
          }`;
          for (const blas of [one, two, plain, stored]) {
            const be = blas.backend!;
            const y = be.gemm(x, rows, inF, w, outF, b);
            worst = Math.max(
              worst,
              checkF32Product(y, x, w, b, rows, inF, outF, what, inF + 1),
            );
            const want = relu ? y.map((v) => v > 0 ? v : 0) : y;
            // a used buffer, longer than the product: NaN everywhere
            const out = new Float32Array(rows * outF + 5).fill(NaN);
            assert(be.gemmInto!(x, rows, inF, w, outF, b, relu, out), what);
            assertEquals(out.subarray(0, rows * outF), want, what);
            assert(out.subarray(rows * outF).every(Number.isNaN), what);
            if (relu) { for (const v of want) if (v === 0) zeros++; }
          }
        }
      }
    }
    console.log(`worst error ${worst.toFixed(2)} ε·Σ|x·w|, ${zeros} zeros`);
    assert(zeros > 1000, `${zeros} zeros after the ReLU`);
    if (two.packedStats) {
      // on a busy machine the calling thread may have taken every item of
      // the products above: a ReLU product into a used buffer (bits
      // checked each time) until the helper has taken part in one
      const [rows, inF, outF] = [64, 384, 1000];
      const x = uniformF32(rows * inF, 900), w = uniformF32(outF * inF, 901);
      const want = one.backend!.gemm(x, rows, inF, w, outF).map((v) =>
        v > 0 ? v : 0
      );
      const out = new Float32Array(rows * outF);
      await untilHelperRuns(two, helped, (i) => {
        out.fill(NaN);
        assert(
          two.backend!.gemmInto!(x, rows, inF, w, outF, undefined, true, out),
        );
        assertEquals(out, want, `${rows}×${inF}→${outF}, try ${i}`);
      });
      assert(two.packedStats.helperItems > helped, "the helper ran no items");
    }
    const be = two.backend!;
    const x = uniformF32(8 * 16, 1), w = uniformF32(16 * 16, 2);
    assertThrows(
      () => be.gemmInto!(x, 8, 16, w, 16, undefined, false, x.slice(1)),
      RangeError,
      "127 values",
    );
    assertThrows(
      () => be.gemmInto!(x.subarray(0, 64), 4, 16, w, 16, undefined, false, x),
      RangeError,
      "its input",
    );
  } finally {
    one.close();
    two.close();
    plain.close();
    stored.close();
  }
});

/** Dense 96 → 320 ReLU → 256 GELU (×0.5) → 200 ReLU → 40, seeded. */
const CONFIG = {
  input_size: 96,
  layers: [
    { type: "dense", output_size: 320, activation: "relu" },
    { type: "dense", output_size: 256, activation: "gelu", scale: 0.5 },
    { type: "dense", output_size: 200, activation: "relu" },
    { type: "dense", output_size: 40 },
  ],
};

Deno.test("network of dense layers on the native backend: buffered forward equals layer by layer bit for bit and ORT; held outputs stay valid", async () => {
  const blas = blasOrSkip(2);
  if (!blas) return;
  const reg = defaultRegistry();
  const net = buildNetwork(reg, CONFIG, initNetwork(reg, CONFIG, 5));
  const be = blas.backend!;
  let into = 0;
  const counting: F32GemmBackend = {
    ...be,
    gemmInto(...a) {
      into++;
      return be.gemmInto!(...a);
    },
  };
  const before = setF32GemmBackend(counting);
  const session = await openOrt(exportOnnx(net));
  try {
    const rows = 64;
    const input = (seed: number) =>
      floatTensor(uniformF32(rows * 96, seed).map((v) => 3 * v), [rows, 96]);
    /** The layers one by one (each output a new array). */
    const oneByOne = (x: FloatTensor) =>
      net.layers.reduce((t, l) => l.forward(t), x);
    const held: [FloatTensor, Float32Array][] = [];
    for (const seed of [1, 2, 3]) {
      const x = input(seed);
      const calls = into;
      const y = net.forward(x);
      // layers 0, 1 and 2 write the buffers; the last its own array
      assertEquals(into - calls, 3, "products run into the buffers");
      assertEquals(y.shape, [rows, 40]);
      assertEquals(y.data, oneByOne(x).data, `seed ${seed}: layer by layer`);
      const ort = await session.run("input", x.data, x.shape);
      assertAllClose(y.data, ort.data, `seed ${seed}: ORT`, 1e-4, 1e-5);
      held.push([y, y.data.slice()]);
    }
    // each forward's output is its own: later forwards left them alone
    for (const [y, copy] of held) assertEquals(y.data, copy);
    assert(held[0][0].data.buffer !== held[1][0].data.buffer);
    assert(held[0][1].some((v, i) => v !== held[1][1][i]));
    // the input was not written
    const x = input(1);
    const copy = x.data.slice();
    net.forward(x);
    assertEquals(x.data, copy);
    // other row counts (buffers grow) and a batch of 2 × 32 rows
    for (const shape of [[200, 96], [5, 96], [2, 32, 96]]) {
      const n = shape.reduce((p, q) => p * q);
      const t = floatTensor(uniformF32(n, n), shape);
      assertEquals(net.forward(t).data, oneByOne(t).data, `[${shape}]`);
    }
  } finally {
    await session.close();
    setF32GemmBackend(before);
    blas.close();
  }
});
