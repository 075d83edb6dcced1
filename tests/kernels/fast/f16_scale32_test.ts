// The 32-element formats (Q8_0, Q4_0, Q5_0) with f16 block scales that are
// subnormal (the kernels' scale conversion must give their exact values,
// however slowly: see docs/performance.md, "K-quant and Q5_0 prefill").
// Check: a weight whose every block scale is an f16 subnormal `±m·2^-24`
// (zeros of either sign among them) gives exactly 2^-10 times what the same
// codes give with the normal scales `±m·2^-14` (every product and sum of
// the dot kernels is then scaled by a power of two, which F32 keeps exact),
// and stays within the F32 rounding budget of the reference decode
// (`linearRef`), on one x row (decode kernels, 8- and 4-block groups and
// single blocks) and on several (the GEMMs).

import { assert, assertEquals } from "@std/assert";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import { linearRef } from "../../../kernels/linear.ts";
import { BLOCKS } from "../../../kernels/quant_ref.ts";
import { cosines, makeWeight, quantDotBudget, worstRatio } from "./_helpers.ts";

/** `w` with block k's f16 scale set to `±m_k·2^(e − 25)` bits (e = 0: subnormal). */
function withScales(
  w: ReturnType<typeof makeWeight>,
  e: number,
): ReturnType<typeof makeWeight> {
  const b = w.bytes.slice();
  const bb = BLOCKS[w.dtype as "Q8_0"].bytes;
  let s = 7;
  for (let o = 0, k = 0; o < b.length; o += bb, k++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    // m: 0 every 17th block, else 1..1023; sign alternating
    const m = k % 17 === 0 ? 0 : 1 + ((s >>> 16) % 1023);
    const sign = k % 2 ? 0x8000 : 0;
    // e = 0: subnormal m·2^-24; e = 10: normal with the same m·2^-14
    let h: number;
    if (e === 0 || m === 0) h = m;
    else {
      const p = 31 - Math.clz32(m); // m = 2^p · 1.f
      h = ((p + 1) << 10) | ((m << (10 - p)) & 0x3ff);
    }
    h |= sign;
    b[o] = h & 255;
    b[o + 1] = h >> 8;
  }
  return { ...w, bytes: b };
}

Deno.test("Q8_0 / Q4_0 / Q5_0 with subnormal f16 scales: exactly 2^-10 of the same codes with normal scales, and within linearRef's budget", () => {
  const saved = state.gemmMinRows;
  try {
    for (const dtype of ["Q8_0", "Q4_0", "Q5_0"] as const) {
      // 13 blocks: a group of 8, one of 4, one left over; 7: 4 + 3
      for (const inF of [32 * 13, 32 * 7]) {
        const base = makeWeight(dtype, 21, inF);
        const sub = withScales(base, 0), norm = withScales(base, 10);
        for (const rows of [1, 6]) {
          state.gemmMinRows = rows > 1 ? 2 : saved;
          const x = cosines(rows * inF, 3, 2);
          const a = fastLinear(x, rows, sub);
          const b = fastLinear(x, rows, norm);
          assertEquals(
            Array.from(a, (v) => v * 1024),
            Array.from(b),
            `${dtype}, ${inF} inputs, ${rows} row(s)`,
          );
          const worst = worstRatio(
            a,
            linearRef(x, rows, sub),
            quantDotBudget(sub, x, rows),
          );
          assert(worst <= 1, `${dtype}: ${worst} of the budget`);
        }
      }
    }
  } finally {
    state.gemmMinRows = saved;
  }
});
