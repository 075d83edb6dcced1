/**
 * The IQ, TQ, FP4, Q1_0 and Q2_0 block types against ggml itself
 * (`tests/vectors/gen/iq_quants.py`: ggml's quantizers and `to_float`, with
 * gguf-py's NumPy readers agreeing bit for bit): every type decodes to
 * ggml's exact F32 values, and the IQ4_NL, IQ4_XS, MXFP4, IQ3, IQ2, IQ1 and
 * TQ encoders write ggml's exact bytes, with and without an importance
 * matrix; the scalar dot
 * rules of `kernels/quant_ref.ts` for them equal ggml's CPU `vec_dot`.
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { readGguf } from "../../formats/gguf/mod.ts";
import { memorySource } from "../../core/sources.ts";
import { decodeToF32, encodeFromF32, toFloat32 } from "../../core/mod.ts";
import type { Tensor } from "../../core/mod.ts";
import {
  quantizeIQ4_NL,
  quantizeIQ4_NLRef,
  quantizeIQ4_XS,
  quantizeMXFP4,
} from "../../core/quants/iq_encode.ts";
import {
  quantizeIQ2_S,
  quantizeIQ2_XS,
  quantizeIQ3_S,
  quantizeIQ3_XXS,
} from "../../core/quants/iq_encode_grid.ts";
import {
  quantizeIQ1_M,
  quantizeIQ1_S,
  quantizeIQ2_XXS,
  quantizeTQ1_0,
  quantizeTQ2_0,
} from "../../core/quants/iq_encode_low.ts";
import {
  activationBlocksOf,
  quantizeActivationsRef,
  type QuantizedActivations,
  quantizedDotRef,
} from "../../kernels/quant_ref.ts";

const VEC = new URL("../vectors/", import.meta.url);
const info = JSON.parse(
  await Deno.readTextFile(new URL("iq_quants.json", VEC)),
) as {
  rows: number;
  cols: number;
  types: Record<
    string,
    {
      deq_sha256: string;
      samples: [number, number][];
      ggufpy: string;
      variants: string[];
    }
  >;
  dots?: Record<string, { activations: string; dots: number[] }>;
};
const file = await readGguf(
  memorySource(
    await Deno.readFile(new URL("iq_quants.gguf", VEC)),
    "iq_quants.gguf",
  ),
);
const tensors = file.models[0].tensors;
const load = (name: string): Promise<Tensor> => tensors.load(name);

async function sha256(a: Float32Array): Promise<string> {
  const b = new Uint8Array(a.byteLength);
  b.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return encodeHex(new Uint8Array(await crypto.subtle.digest("SHA-256", b)));
}

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

Deno.test("iq quants: every type decodes to ggml's F32 values bit for bit", async () => {
  assertEquals(Object.keys(info.types).length, 15);
  for (const [type, exp] of Object.entries(info.types)) {
    const t = await load(type);
    assertEquals(t.dtype, type);
    const y = decodeToF32(t.dtype, t.bytes, info.rows * info.cols);
    for (const [i, v] of exp.samples) {
      assert(
        Object.is(y[i], Math.fround(v)),
        `${type}[${i}]: ${y[i]} vs ggml ${v}`,
      );
    }
    assertEquals(
      await sha256(y),
      exp.deq_sha256,
      `${type}: F32 bytes differ from ggml's`,
    );
    assertEquals(await sha256(toFloat32(t)), exp.deq_sha256, type);
    // the generator checked gguf-py's NumPy reader against ggml where it has one
    assert(
      exp.ggufpy === "equal" || exp.ggufpy === "no reader",
      `${type}: ${exp.ggufpy}`,
    );
  }
});

Deno.test("iq quants: the IQ4, MXFP4, IQ3, IQ2, IQ1 and TQ encoders write ggml's bytes", async () => {
  const src = toFloat32(await load("src"));
  const imatrix = toFloat32(await load("imatrix"));
  const cases: [string, (x: Float32Array) => Uint8Array][] = [
    ["IQ4_NL", (x) => encodeFromF32("IQ4_NL", x)],
    ["IQ4_NL.imat", (x) => quantizeIQ4_NL(x, info.cols, imatrix)],
    ["IQ4_NL.ref", quantizeIQ4_NLRef],
    ["IQ4_XS", (x) => encodeFromF32("IQ4_XS", x)],
    ["IQ4_XS.imat", (x) => quantizeIQ4_XS(x, info.cols, imatrix)],
    ["IQ4_XS.ref", quantizeIQ4_XS],
    ["MXFP4", (x) => encodeFromF32("MXFP4", x)],
    ["MXFP4.imat", quantizeMXFP4],
    ["MXFP4.ref", quantizeMXFP4],
    // the lattice types (IQ2_XS needs the imatrix; ggml_quantize_chunk passes it)
    ["IQ2_XS", (x) => quantizeIQ2_XS(x, info.cols, imatrix)],
    ["IQ3_S", (x) => quantizeIQ3_S(x, info.cols)],
    ["IQ3_S.imat", (x) => quantizeIQ3_S(x, info.cols, imatrix)],
    ["IQ3_XXS", (x) => quantizeIQ3_XXS(x, info.cols)],
    ["IQ3_XXS.imat", (x) => quantizeIQ3_XXS(x, info.cols, imatrix)],
    // IQ2_XXS and IQ1_S need the imatrix (ggml_quantize_chunk passes it)
    ["IQ2_XXS", (x) => quantizeIQ2_XXS(x, info.cols, imatrix)],
    ["IQ2_S", (x) => quantizeIQ2_S(x, info.cols)],
    ["IQ2_S.imat", (x) => quantizeIQ2_S(x, info.cols, imatrix)],
    ["IQ1_S", (x) => quantizeIQ1_S(x, info.cols, imatrix)],
    ["IQ1_M", (x) => quantizeIQ1_M(x, info.cols)],
    ["IQ1_M.imat", (x) => quantizeIQ1_M(x, info.cols, imatrix)],
    ["TQ1_0", (x) => encodeFromF32("TQ1_0", x)],
    ["TQ1_0.ref", quantizeTQ1_0],
    ["TQ2_0", (x) => encodeFromF32("TQ2_0", x)],
    ["TQ2_0.ref", quantizeTQ2_0],
  ];
  for (const [name, encode] of cases) {
    const want = (await load(name)).bytes;
    const got = encode(src);
    assertEquals(got.length, want.length, name);
    const at = firstDiff(got, want);
    assertEquals(
      at,
      want.length,
      `${name}: bytes differ from ggml's first at byte ${at}`,
    );
  }
});

/** ggml's activation blocks (Q8_0: f16 d, 32 × i8; Q8_K: f32 d, 256 × i8, sums) as codes and scales. */
function activations(t: Tensor, n: number): QuantizedActivations {
  const b = t.bytes;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const k = t.dtype === "Q8_0";
  const block = k ? 32 : 256, bytes = k ? 34 : 292;
  const codes = new Int8Array(n), scales = new Float32Array(n / block);
  for (let i = 0; i < n / block; i++) {
    const o = i * bytes;
    scales[i] = k ? dv.getFloat16(o, true) : dv.getFloat32(o, true);
    for (let j = 0; j < block; j++) {
      codes[i * block + j] = dv.getInt8(o + (k ? 2 : 4) + j);
    }
  }
  return { block, codes, scales };
}

Deno.test("iq quants: the scalar dot rules equal ggml's CPU vec_dot (IQ4_NL, IQ4_XS, MXFP4, IQ3_S, IQ2_XS)", async () => {
  const dots = info.dots!;
  assertEquals(Object.keys(dots).sort(), [
    "IQ2_XS",
    "IQ3_S",
    "IQ4_NL",
    "IQ4_XS",
    "MXFP4",
  ]);
  const x = toFloat32(await load("dot.x"));
  for (const [type, exp] of Object.entries(dots)) {
    const w = await load(type);
    const xt = await load(`dot.${type}.xq`);
    assertEquals(xt.dtype, exp.activations);
    assertEquals(activationBlocksOf(type), exp.activations, type);
    const xq = activations(xt, info.cols);
    // our activation quantizer (llama.cpp's x86 rule) gives ggml's blocks
    // here, up to the sign ggml's portable Q8_K quantizer puts on a block
    // whose largest magnitude is negative (codes and scale negated together)
    const ours = quantizeActivationsRef(x, exp.activations as "Q8_0" | "Q8_K");
    for (let i = 0; i < xq.scales.length; i++) {
      const sign = Math.sign(ours.scales[i]) * Math.sign(xq.scales[i]);
      assertEquals(ours.scales[i], sign * xq.scales[i], `${type}: scale ${i}`);
      for (let j = i * xq.block; j < (i + 1) * xq.block; j++) {
        assertEquals(ours.codes[j], sign * xq.codes[j], `${type}: code ${j}`);
      }
    }
    for (let r = 0; r < info.rows; r++) {
      const got = quantizedDotRef(type, w.bytes, r, info.cols, xq, 0);
      const want = exp.dots[r];
      // ggml sums its block products in F32, the reference in F64
      assert(
        Math.abs(got - want) <= 1e-5 * Math.max(1, Math.abs(want)),
        `${type} row ${r}: ${got} vs ggml ${want}`,
      );
    }
  }
});

Deno.test("iq quants: the IQ2_XS and IQ3_S encoders refuse what ggml asserts on", () => {
  const x = new Float32Array(512);
  assertThrows(
    () => quantizeIQ2_XS(x, 512, undefined as unknown as Float32Array),
    TypeError,
    "importance matrix",
  );
  assertThrows(
    () => quantizeIQ2_XS(x, 512, new Float32Array(256)),
    RangeError,
    "256 weights",
  );
  assertThrows(() => quantizeIQ3_S(x, 384), RangeError, "384");
  assertThrows(() => quantizeIQ3_S(new Float32Array(100)), RangeError);
});
