// fastLinearMany (and linearMany above it) must give, for each weight,
// exactly what fastLinear gives for that weight alone: quantized weights of
// one dtype share one quantization of x.

import { assertEquals, assertThrows } from "@std/assert";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { fastLinear, fastLinearMany } from "../../../kernels/fast/matmul.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { linear, linearMany } from "../../../kernels/linear.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { cosines, makeWeight } from "./_helpers.ts";

/** Each weight alone vs all of them at once, for rows 1 and 3. */
function check(
  outs: number[],
  inF: number,
  what: string,
  dtype: "Q8_0" | "Q4_0" = "Q8_0",
): void {
  const ws = outs.map((o, i) => ({
    ...makeWeight(dtype, o, inF),
    name: `w${i}`,
  }));
  const biases = outs.map((o, i) => i % 2 ? cosines(o, i) : undefined);
  for (const rows of [1, 3]) {
    const x = cosines(rows * inF, 4);
    const many = fastLinearMany(x, rows, ws, biases);
    ws.forEach((w, i) => {
      assertEquals(
        many[i],
        fastLinear(x, rows, w, biases[i]),
        `${what} rows ${rows} w${i}`,
      );
    });
    assertEquals(linearMany(x, rows, ws, biases), many);
  }
}

function cases(): void {
  check([576, 192, 192], 576, "q/k/v shapes");
  check([13, 7, 64, 1], 96, "odd output counts");
  check([40, 40], 32, "one block per row");
  check([576, 192, 192], 576, "Q4_0 q/k/v shapes", "Q4_0");
  check([13, 7, 64, 1], 96, "Q4_0 odd output counts", "Q4_0");
}

Deno.test("fastLinearMany: shared-x Q8_0 / Q4_0 outputs equal fastLinear's, one thread", () => {
  let quantized = 0;
  const e = getEngine()!;
  const saved = e.fn.quantize_x;
  e.fn.quantize_x = (...a: number[]) => {
    quantized++;
    saved(...a);
  };
  try {
    cases();
  } finally {
    e.fn.quantize_x = saved;
  }
  // per shape and row count: fastLinearMany and linearMany once each, plus
  // one fastLinear per weight (3 + 4 + 2 + 3 + 4 weights)
  assertEquals(quantized, 2 * (2 * 5 + 16));
});

Deno.test("fastLinearMany: the same with two threads splitting the outputs", async () => {
  await configureKernels({ threads: 2, minParallelWork: 1 });
  try {
    cases();
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("fastLinearMany: threads taking a few rows at a time, across weight boundaries, give the same outputs", async () => {
  await configureKernels({ threads: 2, minParallelWork: 1 });
  try {
    for (const rows of [1, 2, 3, 5, 7]) {
      state.chunkRows = rows; // grabs that start and end inside segments
      check([13, 7, 64, 1], 96, `chunks of ${rows}`);
      check([11, 6, 9], 576, `Q4_0 chunks of ${rows}`, "Q4_0");
    }
  } finally {
    state.chunkRows = 0;
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("quantized dot products give the same outputs with and without touch loads ahead", () => {
  for (const dtype of ["Q8_0", "Q4_0", "Q4_K", "Q6_K"] as const) {
    for (const inF of dtype.endsWith("_K") ? [256, 768] : [64, 224, 576]) {
      const w = makeWeight(dtype, 9, inF);
      const x = cosines(2 * inF, 3);
      const saved = state.readAheadMinBytes;
      try {
        state.readAheadMinBytes = 0;
        const ahead = fastLinear(x, 2, w);
        state.readAheadMinBytes = Infinity;
        assertEquals(fastLinear(x, 2, w), ahead, `${dtype} in ${inF}`);
      } finally {
        state.readAheadMinBytes = saved;
      }
    }
  }
});

Deno.test("fastLinearMany: mixed dtypes or input sizes run one by one; errors name the weight", () => {
  const x = cosines(64, 2);
  const ws = [
    makeWeight("Q8_0", 8, 64),
    makeWeight("F16", 5, 64),
    makeWeight("Q4_0", 3, 64),
  ];
  const many = fastLinearMany(x, 1, ws);
  ws.forEach((w, i) => assertEquals(many[i], linear(x, 1, w)));
  const q = { ...makeWeight("Q8_0", 4, 64), name: "q" };
  const bad = { ...makeWeight("Q8_0", 4, 64), name: "k" };
  assertThrows(
    () => fastLinearMany(x, 1, [q, bad], [undefined, new Float32Array(3)]),
    TypeError,
    'Cannot apply "k": bias has 3 values, expected 4',
  );
  assertThrows(
    () => fastLinearMany(x.subarray(0, 60), 1, [q, bad]),
    TypeError,
    "input has 60 values, expected 1 × 64",
  );
});
