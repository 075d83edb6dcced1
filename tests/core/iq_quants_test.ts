/**
 * The IQ, TQ, FP4, Q1_0 and Q2_0 block types against ggml itself
 * (`tests/vectors/gen/iq_quants.py`: ggml's quantizers and `to_float`, with
 * gguf-py's NumPy readers agreeing bit for bit): every type decodes to
 * ggml's exact F32 values, and the IQ4_NL, IQ4_XS and MXFP4 encoders write
 * ggml's exact bytes, with and without an importance matrix.
 */

import { assert, assertEquals } from "@std/assert";
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

Deno.test("iq quants: IQ4_NL, IQ4_XS and MXFP4 encoders write ggml's bytes", async () => {
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
