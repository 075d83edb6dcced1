/**
 * The K-quant kernels' f16 scale conversion (`f16ToF32NoSubnormal` in
 * `kernels/wasm/_kernels_util.ts`, which never forms an F32 subnormal)
 * against the platform's own `Float16Array` on every one of the 65,536
 * halves (finite ones exactly, signed zeros included; ±inf and NaN become
 * large finite numbers, as the other conversion makes them), and Q4_K /
 * Q6_K weights whose every scale is an f16 subnormal against `linearRef`.
 */

import { assert, assertEquals } from "@std/assert";
import { get, ModuleBuilder, T } from "../../../kernels/wasm/_asm.ts";
import {
  f16ToF32,
  f16ToF32NoSubnormal,
} from "../../../kernels/wasm/_kernels_util.ts";
import type { Tensor } from "../../../core/tensor.ts";
import { linearRef } from "../../../kernels/linear.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import { rowBytes } from "../../../kernels/quant_ref.ts";
import { cosines, decodeAll } from "./_helpers.ts";

Deno.test("f16ToF32NoSubnormal gives Float16Array's value for every finite half", () => {
  const m = new ModuleBuilder({ shared: false, minPages: 1, maxPages: 1 });
  const a = m.func("a", [["h", T.i32]], [T.f32]);
  a.body(f16ToF32NoSubnormal(() => get(a.params.h)));
  const b = m.func("b", [["h", T.i32]], [T.f32]);
  b.body(f16ToF32(get(b.params.h)));
  const instance = new WebAssembly.Instance(
    new WebAssembly.Module(m.encode() as BufferSource),
    { env: { memory: new WebAssembly.Memory({ initial: 1, maximum: 1 }) } },
  );
  const fa = instance.exports.a as (h: number) => number;
  const fb = instance.exports.b as (h: number) => number;
  const half = new Uint16Array(1), f16 = new Float16Array(half.buffer);
  let subnormals = 0;
  for (let h = 0; h < 65536; h++) {
    half[0] = h;
    const got = fa(h);
    if ((h & 0x7c00) === 0x7c00) {
      // ±inf, NaN: the same large finite number as f16ToF32 gives
      assertEquals(got, fb(h), `half 0x${h.toString(16)}`);
      continue;
    }
    if ((h & 0x7c00) === 0 && (h & 0x3ff) !== 0) subnormals++;
    assert(Object.is(got, f16[0]), `half 0x${h.toString(16)}: ${got}`);
  }
  assertEquals(subnormals, 2046);
});

/** Seeded bytes whose every super-block scale is an f16 subnormal. */
function subnormalWeight(dtype: "Q4_K" | "Q6_K", outF: number, inF: number) {
  const n = outF * rowBytes(dtype, inF);
  const b = new Uint8Array(n);
  let s = 99;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    b[i] = s >>> 24;
  }
  const bb = dtype === "Q4_K" ? 144 : 210;
  for (let o = 0, k = 0; o < n; o += bb, k++) {
    // d: 10-bit mantissa, zero exponent, either sign; Q4_K's dmin too
    const at = dtype === "Q4_K" ? o : o + 208;
    b[at + 1] = (b[at + 1] & 0x83) | (k % 2 ? 0x80 : 0);
    if (dtype === "Q4_K") b[o + 3] &= 0x03;
  }
  return { name: `sub_${dtype}`, dtype, shape: [outF, inF], bytes: b };
}

Deno.test("Q4_K and Q6_K with subnormal f16 scales match linearRef", () => {
  for (const dtype of ["Q4_K", "Q6_K"] as const) {
    const w: Tensor = subnormalWeight(dtype, 9, 512);
    const x = cosines(2 * 512, 4);
    const fast = fastLinear(x, 2, w), ref = linearRef(x, 2, w);
    // F32 rounding of the kernels' sums: 2e-6 of Σ|w·x|
    const wf = decodeAll(w);
    for (let i = 0; i < ref.length; i++) {
      const r = Math.floor(i / 9), o = i % 9;
      let mag = 0;
      for (let k = 0; k < 512; k++) {
        mag += Math.abs(wf[o * 512 + k] * x[r * 512 + k]);
      }
      assert(mag > 0, `${dtype}: the scales are not all zero`);
      assert(
        Math.abs(fast[i] - ref[i]) <= 2e-6 * mag,
        `${dtype} output ${i}: ${fast[i]} vs ${ref[i]} (Σ|w·x| ${mag})`,
      );
    }
  }
});
