// A quantized weight times several x rows (prefill, batched decoding) must
// give every row exactly the bits that row gets alone, whichever way the
// job runs: Q8_0 weight rows prepared once and dotted as magnitudes and
// signs (`q8_0s`, x86), as stored with x split (four dots per block, the
// path of other CPUs, forced here by turning `signDot` off), or unsigned
// (`q8_0u`, AVX-VNNI); Q4_0 rows with their nibbles unpacked once; both
// as the register-blocked GEMM of exact integer products in F32, and as
// the integer GEMMs (Q8_0 codes as i16, `pmaddwd`; Q4_0 as bytes), on the
// relaxed and the plain SIMD module. Codes cover −128…127 and activations
// reach ±127.

import { assertEquals } from "@std/assert";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { SIGN_DOT_PROBE } from "../../../kernels/wasm/_kernels_quant_prep.ts";
import { cosines, makeWeight } from "./_helpers.ts";

/** Each way of running several x rows a test can force on this engine. */
function ways(): { name: string; set: () => void }[] {
  const e = getEngine()!;
  const reset = () => {
    state.u8Dot = true;
    state.signDot = true;
    state.prep = true;
    state.gemmMinRows = Infinity;
    state.intGemm = true;
  };
  const out = [
    {
      name: "register-blocked GEMM",
      set: () => {
        reset();
        state.gemmMinRows = 2;
      },
    },
    {
      name: "register-blocked GEMM, F32 products only",
      set: () => {
        reset();
        state.gemmMinRows = 2;
        state.intGemm = false;
      },
    },
    {
      name: "four dots, prepared",
      set: () => {
        reset();
        state.u8Dot = false;
        state.signDot = false;
      },
    },
    {
      name: "not prepared",
      set: () => {
        reset();
        state.prep = false;
      },
    },
  ];
  if (e.signDot) {
    out.push({
      name: "magnitudes and signs (q8_0s)",
      set: () => {
        reset();
        state.u8Dot = false;
      },
    });
  }
  if (e.u8Dot) out.push({ name: "unsigned (q8_0u)", set: reset });
  return out;
}

const defaultGemmRows = state.gemmMinRows;

function check(threads: number): void {
  const e = getEngine()!;
  try {
    for (const way of ways()) {
      way.set();
      // 1 to 21 blocks (groups of 8 and 4, 0 to 3 left over) and 48
      for (const nb of [...Array.from({ length: 21 }, (_, i) => i + 1), 48]) {
        const inF = 32 * nb;
        for (const dtype of ["Q8_0", "Q4_0"] as const) {
          const w = makeWeight(dtype, 37, inF);
          for (
            const [amp, rows] of [[2, 5], [1e6, 7], [0.5, 13], [3, 2], [1, 3]]
          ) {
            const x = cosines(rows * inF, nb, amp);
            const all = fastLinear(x, rows, w);
            for (let r = 0; r < rows; r++) {
              const one = fastLinear(x.subarray(r * inF, (r + 1) * inF), 1, w);
              assertEquals(
                all.subarray(r * 37, (r + 1) * 37),
                one,
                `${way.name}, ${dtype}, ${nb} blocks, row ${r}, ${threads} thread(s)`,
              );
            }
          }
        }
      }
    }
  } finally {
    state.u8Dot = true;
    state.signDot = true;
    state.prep = true;
    state.gemmMinRows = defaultGemmRows;
    state.intGemm = true;
  }
  void e;
}

Deno.test("several x rows give each row the bits it gets alone (Q8_0 every way, Q4_0), one thread", () => {
  const e = getEngine()!;
  const probe = (e.fn.probe_sdot as unknown as () => number)();
  assertEquals(kernelInfo().signDot, probe === SIGN_DOT_PROBE);
  if (!e.signDot) {
    console.log(
      `  note: this engine's relaxed dot gives ${probe} on the sign probe, not ${SIGN_DOT_PROBE}, so the q8_0s way is not tested here`,
    );
  }
  check(1);
});

Deno.test("a GEMM job longer than one chunk of rows (300 rows) gives each row its bits", () => {
  const defaults = { ...state };
  try {
    for (const intGemm of [true, false]) {
      state.intGemm = intGemm;
      for (const dtype of ["Q8_0", "Q4_0"] as const) {
        const inF = 160, rows = 300;
        const w = makeWeight(dtype, 21, inF);
        const x = cosines(rows * inF, 7, 3);
        const all = fastLinear(x, rows, w);
        state.gemmMinRows = Infinity;
        const dots = fastLinear(x, rows, w);
        state.gemmMinRows = defaults.gemmMinRows;
        assertEquals(all, dots, `${dtype}, intGemm ${intGemm}`);
        for (const r of [0, 255, 256, 299]) {
          assertEquals(
            all.subarray(r * 21, (r + 1) * 21),
            fastLinear(x.subarray(r * inF, (r + 1) * inF), 1, w),
            `${dtype}, row ${r}`,
          );
        }
      }
    }
  } finally {
    state.intGemm = defaults.intGemm;
    state.gemmMinRows = defaults.gemmMinRows;
  }
});

Deno.test("the same on the plain SIMD module (Q8_0's i16 GEMM is in both)", async () => {
  await configureKernels({ noRelaxedSimd: true });
  try {
    assertEquals(kernelInfo().backend, "wasm-simd");
    check(1);
  } finally {
    await configureKernels({ noRelaxedSimd: false });
  }
});

Deno.test("the same with two threads sharing the rows", async () => {
  await configureKernels({ threads: 2, minParallelWork: 1 });
  try {
    check(2);
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});
