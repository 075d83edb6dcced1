/**
 * The system BLAS backend's packed weights (io/_blas_packed.ts) against an
 * F64 product of the same F32 inputs, on shapes that are not multiples of
 * the kernel's unrolls or blocks; one and two threads bit for bit; the
 * packed copies dropped by `forgetWeight`; the fallback where the library
 * lacks the routines. Skipped with a message where the library, its
 * packed routines or --allow-ffi are missing.
 */

import { assert, assertEquals, assertMatch, assertThrows } from "@std/assert";
import { openSystemBlas, type SystemBlas } from "../../io/blas.ts";
import {
  blockK,
  outputRows,
  PACKED_FAMILIES,
  PackedGemm,
  planPacked,
  runPackedItems,
} from "../../io/_blas_packed.ts";
import { forgetWeight, setF32GemmBackend } from "../../kernels/fast/mod.ts";
import { checkF32Product, uniformF32 } from "../_helpers/f32_product.ts";
import { untilHelperRuns, warmHelper } from "../_helpers/blas_warm.ts";

const uniform = uniformF32;

/**
 * Asserts `y` is within `in·ε_f32·Σ|terms|` (plus one ε for the bias) of
 * the F64 sum of each output (any order of F32 additions stays within
 * it); returns the worst error in units of `ε·Σ|terms|`.
 */
function check(
  y: Float32Array,
  x: Float32Array,
  w: Float32Array,
  b: Float32Array | undefined,
  rows: number,
  inF: number,
  outF: number,
  what: string,
): number {
  return checkF32Product(y, x, w, b, rows, inF, outF, what, inF + 1);
}

/** Opens a packed backend, or says why the test is skipped. */
function packedBlas(threads: number, extra = {}): SystemBlas | null {
  // on by default
  const blas = openSystemBlas({ threads, ...extra });
  if (!blas.backend || !blas.packedStats) {
    console.log(`skipped: ${blas.note ?? blas.packed}`);
    blas.close();
    return null;
  }
  return blas;
}

const SIZES = [1, 7, 33, 384, 1000];
const ROWS = [1, 3, 17, 64, 130];

Deno.test("packed GEMM: odd shapes against the F64 product, with and without bias, 1 and 2 threads bit-identical", async () => {
  const one = packedBlas(1);
  if (!one) return;
  const two = packedBlas(2);
  if (!two) return one.close();
  try {
    console.log(`packed: ${one.packed}`);
    await warmHelper(two);
    assert(two.packedStats!.helperItems > 0, "the helper thread never ran");
    let worst = 0, cases = 0;
    const helped = two.packedStats!.helperItems;
    let seed = 100;
    for (const rows of ROWS) {
      for (const inF of SIZES) {
        for (const outF of SIZES) {
          // the largest products only with a few row counts
          if (rows * inF * outF > 4e7 && rows !== 130 && rows !== 3) continue;
          const x = uniform(rows * inF, seed++);
          const w = uniform(outF * inF, seed++);
          const b = (rows + inF + outF) % 2 ? uniform(outF, seed++) : undefined;
          const shape = `${rows}×${inF}→${outF}${b ? " +bias" : ""}`;
          const y1 = one.backend!.gemm(x, rows, inF, w, outF, b);
          const y2 = two.backend!.gemm(x, rows, inF, w, outF, b);
          worst = Math.max(worst, check(y1, x, w, b, rows, inF, outF, shape));
          assertEquals(y2, y1, `${shape}: 2 threads differ from 1`);
          cases++;
        }
      }
    }
    console.log(`${cases} shapes, worst error ${worst.toFixed(2)} ε·Σ|x·w|`);
    assert(one.packedStats!.products >= cases);
    assertEquals(one.packedStats!.helperItems, 0);
    const share = two.packedStats!.helperItems - helped;
    console.log(`helper thread ran ${share} of the items`);
    assert(share > 0, "the helper thread ran no items of the products");
  } finally {
    one.close();
    two.close();
  }
});

Deno.test("packed GEMM: ReLU in the work items equals the product then ReLU, 1 and 2 threads, and held outputs stay intact", async () => {
  const one = packedBlas(1);
  if (!one) return;
  // the helper woken early and polling between products, outputs of 128
  // KiB or more populated before the kernel writes them
  const two = packedBlas(2, {
    packedHelperSpin: 0.3,
    packedEarlyWake: true,
    packedPopulate: true,
  });
  if (!two) return one.close();
  try {
    await warmHelper(two);
    const helped = two.packedStats!.helperItems;
    const held: [Float32Array, Float32Array, string][] = [];
    let seed = 500, zeros = 0, positive = 0;
    // the same size twice in a row (the helper's cached view of y) and
    // sizes that change (a new view)
    for (
      const [rows, inF, outF] of [
        [64, 384, 1000],
        [64, 384, 1000],
        [17, 1000, 33],
        [130, 33, 384],
        [64, 384, 1000],
        [3, 7, 1000],
      ]
    ) {
      const x = uniform(rows * inF, seed++), w = uniform(outF * inF, seed++);
      const b = uniform(outF, seed++);
      const shape = `${rows}×${inF}→${outF}`;
      const y = one.backend!.gemm(x, rows, inF, w, outF, b);
      check(y, x, w, b, rows, inF, outF, shape);
      const want = y.map((v) => v > 0 ? v : 0);
      const r1 = one.backend!.gemmRelu!(x, rows, inF, w, outF, b);
      const r2 = two.backend!.gemmRelu!(x, rows, inF, w, outF, b);
      if (!r1 || !r2) throw new Error(`${shape}: no packed gemmRelu`);
      assertEquals(r1, want, `${shape}: 1 thread`);
      assertEquals(r2, want, `${shape}: 2 threads`);
      for (const v of want) v === 0 ? zeros++ : positive++;
      held.push([r2, want.slice(), shape]);
    }
    assert(zeros > 1000 && positive > 1000, `${zeros} zeros, ${positive} > 0`);
    // every output the caller still holds is its own array, unchanged
    for (const [r, want, shape] of held) {
      assertEquals(r, want, `${shape}: a later product changed a held output`);
    }
    // on a busy machine the calling thread may have taken every item of
    // the products above: a ReLU product (bits checked each time) until
    // the helper has taken part in one
    {
      const [rows, inF, outF] = [64, 384, 1000];
      const x = uniform(rows * inF, 900), w = uniform(outF * inF, 901);
      const want = one.backend!.gemm(x, rows, inF, w, outF).map((v) =>
        v > 0 ? v : 0
      );
      await untilHelperRuns(two, helped, (i) => {
        const r = two.backend!.gemmRelu!(x, rows, inF, w, outF);
        assertEquals(r, want, `${rows}×${inF}→${outF}, try ${i}`);
      });
    }
    assert(
      two.packedStats!.helperItems > helped,
      "the helper thread ran no ReLU items",
    );
  } finally {
    one.close();
    two.close();
  }
});

Deno.test("packed GEMM: a weight inside a larger buffer, changed in place, is packed again after forgetWeight", () => {
  const blas = packedBlas(1);
  if (!blas) return;
  const before = setF32GemmBackend(blas.backend);
  try {
    const rows = 5, inF = 33, outF = 7;
    const store = uniform(3 + outF * inF * 2, 4);
    const w = store.subarray(3, 3 + outF * inF); // 12 bytes into the buffer
    const x = uniform(rows * inF, 5);
    const y0 = blas.backend!.gemm(x, rows, inF, w, outF);
    check(y0, x, w, undefined, rows, inF, outF, "offset weight");
    w.set(uniform(outF * inF, 6));
    // the packed copy is kept: the old weight's product
    assertEquals(blas.backend!.gemm(x, rows, inF, w, outF), y0);
    forgetWeight(w);
    const y1 = blas.backend!.gemm(x, rows, inF, w, outF);
    check(y1, x, w, undefined, rows, inF, outF, "after forgetWeight");
    assert(y1.some((v, i) => v !== y0[i]));
  } finally {
    setF32GemmBackend(before);
    blas.close();
  }
});

Deno.test("packed GEMM: past the copy budget the weight is used as stored", () => {
  const blas = packedBlas(1, { transposeBytes: 1000 * 4 });
  if (!blas) return;
  try {
    const rows = 4, inF = 33, outF = 33; // 4356 bytes: no room
    const x = uniform(rows * inF, 7), w = uniform(outF * inF, 8);
    const y = blas.backend!.gemm(x, rows, inF, w, outF);
    check(y, x, w, undefined, rows, inF, outF, "over budget");
    assertEquals(blas.packedStats!.products, 0);
    const small = uniform(7 * 33, 9);
    check(
      blas.backend!.gemm(x, rows, inF, small, 7),
      x,
      small,
      undefined,
      rows,
      inF,
      7,
      "within budget",
    );
    assertEquals(blas.packedStats!.products, 1);
  } finally {
    blas.close();
  }
});

Deno.test("packed GEMM: falls back where the routines are missing or the family is unknown", () => {
  const blas = openSystemBlas({ threads: 1, packedWeights: true });
  if (!blas.backend || !blas.library) {
    console.log(`skipped: ${blas.note}`);
    return blas.close();
  }
  try {
    const budget = { bytes: 0, limit: 2 ** 20 };
    const libc = PackedGemm.open("libc.so.6", budget, "Haswell");
    assertEquals(libc.packed, null);
    assertMatch(
      libc.note,
      /does not export sgemm_kernel\/incopy\/oncopy_HASWELL/,
    );
    const old = PackedGemm.open(blas.library, budget, "Nehalem");
    assertEquals(old.packed, null);
    assertMatch(old.note, /no packed kernels for core Nehalem/);
    const off = openSystemBlas({
      threads: 1,
      libraries: [blas.library],
      packedWeights: false,
    });
    assertMatch(off.packed!, /off/);
    assertEquals(off.packedStats, undefined);
    const x = uniform(4 * 7, 1), w = uniform(33 * 7, 2);
    check(off.backend!.gemm(x, 4, 7, w, 33), x, w, undefined, 4, 7, 33, "off");
    off.close();
  } finally {
    blas.close();
  }
});

Deno.test("packed GEMM: the plan covers every output and row once, on unroll boundaries", () => {
  for (const fam of Object.values(PACKED_FAMILIES)) {
    for (const rows of [1, 3, 17, 64, 130, 4096]) {
      for (const outF of [1, 7, 33, 384, 1000, 4096]) {
        {
          const p = planPacked(fam, rows, outF);
          const what = `${fam.suffix} ${rows}×${outF}`;
          assertEquals(p.gm % fam.unrollM, 0, what);
          assertEquals(p.gn % fam.unrollN, 0, what);
          assert(p.mItems * p.gm >= outF && (p.mItems - 1) * p.gm < outF, what);
          const nItems = p.count / p.mItems;
          assert(nItems * p.gn >= rows && (nItems - 1) * p.gn < rows, what);
        }
      }
    }
  }
});

Deno.test("packed GEMM: options out of range are refused", () => {
  assertThrows(() => openSystemBlas({ packedSpin: -1 }), RangeError, "0..100");
  assertThrows(
    () => openSystemBlas({ packedGroup: 0 }),
    RangeError,
    "packedGroup",
  );
  assertThrows(
    () => openSystemBlas({ packedHelperSpin: 101 }),
    RangeError,
    "packedHelperSpin",
  );
  assertThrows(
    () => openSystemBlas({ packedRows: 1.5 }),
    RangeError,
    "packedRows",
  );
});

Deno.test("packed GEMM: arrays shorter than their shapes are refused before native code reads them", () => {
  const blas = packedBlas(1);
  if (!blas) return;
  try {
    const w = uniform(33 * 7, 1), x = uniform(4 * 33, 2);
    assertThrows(
      () => blas.backend!.gemm(x.subarray(1), 4, 33, w, 7),
      RangeError,
      "the input has 131 values, 4×33 = 132 expected",
    );
    assertThrows(
      () => blas.backend!.gemm(x, 4, 33, w.subarray(5), 7),
      RangeError,
      "the weight has 226 values",
    );
    assertThrows(
      () => blas.backend!.gemm(x, 4, 33, w, 7, uniform(6, 3)),
      RangeError,
      "the bias has 6 values",
    );
  } finally {
    blas.close();
  }
});

Deno.test("packed GEMM: on 2 threads a refused product leaves the helper working", async () => {
  for (const early of [false, true]) await refusedCase(early);
});

async function refusedCase(early: boolean): Promise<void> {
  const two = packedBlas(2, { packedEarlyWake: early });
  if (!two) return;
  try {
    await warmHelper(two);
    const w = uniform(1000 * 64, 4), x = uniform(64 * 64, 5);
    const b = uniform(1000, 6);
    assertThrows(
      () => two.backend!.gemm(x.subarray(1), 64, 64, w, 1000, b),
      RangeError,
      "the input has 4095 values",
    );
    assertThrows(
      () => two.backend!.gemmRelu!(x, 64, 64, w, 1000, b.subarray(1)),
      RangeError,
      "the bias has 999 values",
    );
    const helped = two.packedStats!.helperItems;
    const y = two.backend!.gemm(x, 64, 64, w, 1000, b);
    check(y, x, w, b, 64, 64, 1000, `early ${early}: after refused products`);
    assert(two.packedStats!.helperItems >= helped);
  } finally {
    two.close();
  }
}

/** CPU flags each family's kernels need (x86-64 Linux only). */
const FAMILY_FLAGS: Record<string, string[]> = {
  Haswell: ["avx2", "fma"],
  Zen: ["avx2", "fma"],
  SkylakeX: ["avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"],
  Cooperlake: [
    "avx512f",
    "avx512bw",
    "avx512dq",
    "avx512vl",
    "avx512cd",
    "avx512_bf16",
  ],
};

Deno.test("packed GEMM: every family table entry this CPU can run matches its library routines' layout", () => {
  const blas = openSystemBlas({ threads: 1, packedWeights: false });
  let flags: Set<string>;
  try {
    const head = Deno.readTextFileSync("/proc/cpuinfo").split("\n\n")[0];
    flags = new Set(/^flags\s*:(.*)$/m.exec(head)?.[1].trim().split(/\s+/));
  } catch {
    flags = new Set();
  }
  if (!blas.library || flags.size === 0) {
    console.log(`skipped: ${blas.note ?? "no /proc/cpuinfo"}`);
    return blas.close();
  }
  try {
    // 130 × 1000 → 33 and 17 × 7 → 1000: outputs cut at 24 and 256, rows
    // in one or two groups, k-blocks of 334, 7
    for (const [name, fam] of Object.entries(PACKED_FAMILIES)) {
      if (!FAMILY_FLAGS[name].every((f) => flags.has(f))) {
        console.log(`${name}: skipped, the CPU lacks ${FAMILY_FLAGS[name]}`);
        continue;
      }
      const budget = { bytes: 0, limit: 2 ** 26 };
      const { packed, note } = PackedGemm.open(blas.library, budget, name);
      if (!packed) {
        console.log(`${name}: skipped, ${note}`);
        continue;
      }
      try {
        for (
          const [rows, inF, outF] of [
            [130, 1000, 33],
            [17, 7, 1000],
            [9, 2500, 40], // several k-blocks with every family's kc
          ]
        ) {
          const x = uniform(rows * inF, rows), w = uniform(outF * inF, inF);
          const b = uniform(outF, outF);
          const pw = packed.weight(w, outF, inF)!;
          const { y, at } = outputRows(rows, outF);
          const plan = planPacked(fam, rows, outF);
          const d = new Float64Array([
            pw.at,
            packed.packX(x, rows, inF),
            at,
            outF,
            rows,
            inF,
            blockK(fam, inF),
            fam.mc,
            plan.gm,
            plan.gn,
            plan.mItems,
            plan.count,
            ...packed.biasOnes(b, outF, rows),
          ]);
          // items in reverse order: the result does not depend on it
          let k = plan.count;
          runPackedItems(packed.kernel, d, () => (k > 0 ? --k : plan.count));
          const worst = check(
            y,
            x,
            w,
            b,
            rows,
            inF,
            outF,
            `${name} ${rows}×${inF}→${outF}`,
          );
          console.log(
            `${name} ${rows}×${inF}→${outF}: worst ${
              worst.toFixed(2)
            } ε·Σ|x·w|`,
          );
        }
      } finally {
        packed.close();
      }
    }
  } finally {
    blas.close();
  }
});
