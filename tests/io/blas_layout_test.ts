/**
 * The system BLAS backend's transposed weight copies (io/_blas_transpose.ts)
 * and its library choice (`MODELHOST_BLAS`, BLIS): results against the
 * exact product of the same F32 inputs (F64 sums, with the error bound of
 * F32 sums in any order). Skipped with a message where no library or
 * --allow-ffi is there; the BLIS cases where BLIS is not installed
 * (Debian: `apt-get install libblis4-pthread`).
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { openSystemBlas, useSystemBlas } from "../../io/blas.ts";
import { transposeF32 } from "../../io/_blas_transpose.ts";
import { SgemmHelper } from "../../io/_blas_threads.ts";
import { ADDRESS_FIELDS } from "../../io/_blas_list.ts";
import {
  type F32GemmBackend,
  fastLinear,
  forgetWeight,
  setF32GemmBackend,
} from "../../kernels/fast/mod.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { checkF32Product, uniformF32 } from "../_helpers/f32_product.ts";

const BLIS = "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4";

const uniform = uniformF32;

/** Asserts `y` is within 2·in·ε·Σ|x·w| of the exact `x · Wᵀ + b`, per output. */
function checkExact(
  y: Float32Array,
  x: Float32Array,
  w: Float32Array,
  b: Float32Array,
  rows: number,
  inF: number,
  outF: number,
  what: string,
): void {
  checkF32Product(y, x, w, b, rows, inF, outF, what, 2 * inF);
}

function blisInstalled(): boolean {
  try {
    return Deno.statSync(BLIS).isFile;
  } catch {
    return false;
  }
}

Deno.test("transposeF32 moves value (r, c) to (c, r), ragged tiles included", () => {
  const rows = 45, cols = 70;
  const src = Float32Array.from({ length: rows * cols }, (_, i) => i);
  const dst = new Float32Array(rows * cols);
  transposeF32(src, rows, cols, dst);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      assertEquals(dst[c * rows + r], r * cols + c);
    }
  }
});

Deno.test("transposed and stored weight layouts both give the exact product; forgetWeight renews the copy", () => {
  // the cblas_sgemm paths (no packed weights, io/_blas_packed.ts)
  const copy = openSystemBlas({ threads: 1, packedWeights: false });
  if (!copy.backend) {
    console.log(`skipped: ${copy.note}`);
    return;
  }
  const stored = openSystemBlas({
    threads: 1,
    transposeRows: 0,
    packedWeights: false,
  });
  const tiny = openSystemBlas({
    threads: 1,
    transposeBytes: 1024,
    packedWeights: false,
  });
  try {
    const rows = 40, inF = 300, outF = 200;
    // the weight at an offset inside a larger buffer, as in a model file
    const buf = uniform(outF * inF + 64, 2);
    const w = buf.subarray(64);
    const x = uniform(rows * inF, 1), b = uniform(outF, 3);
    const t = tensorFromF32("w", w, [outF, inF]);
    const run = (backend: F32GemmBackend | null) => {
      setF32GemmBackend({ ...backend!, minWork: 1 });
      try {
        return fastLinear(x, rows, t, b);
      } finally {
        setF32GemmBackend(null);
      }
    };
    for (
      const [what, blas] of [["copy", copy], ["stored", stored], [
        "over budget",
        tiny,
      ]] as const
    ) {
      checkExact(run(blas.backend), x, w, b, rows, inF, outF, what);
    }
    // a second call reuses the copy; after an in-place change and
    // forgetWeight the new values count
    const first = run(copy.backend);
    assertEquals(run(copy.backend), first);
    for (let i = 0; i < w.length; i += 7) w[i] = -w[i];
    setF32GemmBackend({ ...copy.backend, minWork: 1 });
    forgetWeight(t);
    setF32GemmBackend(null);
    const renewed = run(copy.backend);
    checkExact(renewed, x, w, b, rows, inF, outF, "after forgetWeight");
    // 1000+ rows use W as stored: same bits as the stored backend
    const many = 1024, xm = uniform(many * inF, 4);
    const viaCopy = (() => {
      setF32GemmBackend({ ...copy.backend, minWork: 1 });
      try {
        return fastLinear(xm, many, t, b);
      } finally {
        setF32GemmBackend(null);
      }
    })();
    setF32GemmBackend({ ...stored.backend!, minWork: 1 });
    const viaStored = fastLinear(xm, many, t, b);
    setF32GemmBackend(null);
    assertEquals(viaCopy, viaStored);
  } finally {
    copy.close();
    stored.close();
    tiny.close();
    setF32GemmBackend(null);
  }
});

Deno.test("MODELHOST_BLAS names the library to try first; a missing one falls back", async () => {
  const probe = (env: Record<string, string>) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { openSystemBlas } from "${
          new URL("../../io/blas.ts", import.meta.url).href
        }";
        const b = openSystemBlas();
        console.log(JSON.stringify({ name: b.backend?.name ?? null, library: b.library ?? null }));
        b.close();`,
      ],
      env,
    }).output().then((o) => {
      assertEquals(o.code, 0, new TextDecoder().decode(o.stderr));
      return JSON.parse(new TextDecoder().decode(o.stdout)) as {
        name: string | null;
        library: string | null;
      };
    });
  const plain = await probe({ MODELHOST_BLAS: "" });
  if (plain.name === null) {
    console.log("skipped: no system BLAS library here");
    return;
  }
  const missing = await probe({ MODELHOST_BLAS: "/nonexistent/libblas.so" });
  assertEquals(missing, plain);
  if (!blisInstalled()) {
    console.log(`BLIS case skipped: ${BLIS} is not installed`);
    return;
  }
  const blis = await probe({ MODELHOST_BLAS: BLIS });
  assertEquals(blis.library, BLIS);
  assert(blis.name?.startsWith("BLIS "), blis.name ?? "no name");
});

Deno.test("BLIS as the backend gives the exact product, 1 and 2 threads", () => {
  if (!blisInstalled()) {
    console.log(`skipped: ${BLIS} is not installed`);
    return;
  }
  for (const threads of [1, 2]) {
    const blas = useSystemBlas({ libraries: [BLIS], threads });
    if (!blas.backend) {
      console.log(`skipped: ${blas.note}`);
      return;
    }
    try {
      assert(blas.backend.name.startsWith("BLIS "), blas.backend.name);
      const rows = 70, inF = 130, outF = 260;
      const x = uniform(rows * inF, 5), w = uniform(outF * inF, 6);
      const b = uniform(outF, 7);
      const t = tensorFromF32("w", w, [outF, inF]);
      setF32GemmBackend({ ...blas.backend, minWork: 1 });
      const y = fastLinear(x, rows, t, b);
      checkExact(y, x, w, b, rows, inF, outF, `BLIS, ${threads} threads`);
    } finally {
      blas.close();
      setF32GemmBackend(null);
    }
  }
});

Deno.test("malloc's mmap threshold: left alone by default, set once per process when asked; bad values (and bad transpose options) are RangeErrors", async () => {
  for (const k of ["transposeRows", "transposeBytes"]) {
    for (const v of [-1, 0.5]) {
      assertThrows(
        () => openSystemBlas({ [k]: v }),
        RangeError,
        `${k} ${v}`,
      );
    }
  }
  for (const t of [-1, 2 ** 25 + 1, 1.5]) {
    assertThrows(
      () => openSystemBlas({ mmapThreshold: t }),
      RangeError,
      `mmap threshold ${t}`,
    );
  }
  const probe = (opts: string) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { openSystemBlas } from "${
          new URL("../../io/blas.ts", import.meta.url).href
        }";
        const a = openSystemBlas(${opts});
        const b = openSystemBlas({ mmapThreshold: 4096 });
        console.log(JSON.stringify([a.backend ? a.heap : null, b.heap ?? null]));
        a.close(); b.close();`,
      ],
    }).output().then((o) => {
      assertEquals(o.code, 0, new TextDecoder().decode(o.stderr));
      return JSON.parse(new TextDecoder().decode(o.stdout));
    });
  const [off, later] = await probe("{}");
  if (off === null) {
    console.log("skipped: no system BLAS library here");
    return;
  }
  assertEquals(off, "malloc left alone");
  const glibc = later !== "malloc left alone (no glibc)" &&
    later !== "malloc left alone (not Linux)";
  if (glibc) assertEquals(later, "malloc mmap threshold 4096 bytes");
  const [first, second] = await probe(`{ mmapThreshold: ${2 ** 25} }`);
  if (glibc) {
    assertEquals(first, `malloc mmap threshold ${2 ** 25} bytes`);
    // the first value stays
    assertEquals(second, first);
  }
});

Deno.test("two backends on one loaded OpenBLAS each run on their own thread count", () => {
  const two = openSystemBlas({ threads: 2, packedWeights: false });
  if (!two.backend?.name.startsWith("OpenBLAS") || !two.library) {
    console.log(`skipped: ${two.backend?.name ?? two.note}`);
    two.close();
    return;
  }
  // the same library instance, to read its thread count
  const lib = Deno.dlopen(two.library, {
    openblas_get_num_threads: { parameters: [], result: "i32" },
  });
  const now = () => lib.symbols.openblas_get_num_threads();
  const capable = now() >= 2;
  const one = openSystemBlas({
    threads: 1,
    libraries: [two.library],
    packedWeights: false,
  });
  try {
    if (!capable) {
      console.log("skipped: OpenBLAS runs one thread at most here");
      return;
    }
    const rows = 8, inF = 64, outF = 64;
    const x = uniform(rows * inF, 8), w = uniform(outF * inF, 9);
    assertEquals(now(), 1); // opening `one` set it
    two.backend.gemm(x, rows, inF, w, outF);
    assertEquals(now(), 2);
    one.backend!.gemm(x, rows, inF, w, outF);
    assertEquals(now(), 1);
    two.backend.gemm(x, rows, inF, w, outF);
    assertEquals(now(), 2);
  } finally {
    lib.close();
    one.close();
    two.close();
  }
});

Deno.test("splitColumns: two column halves on two threads give the exact product, the same bits whichever thread runs a half", async () => {
  assertThrows(() => openSystemBlas({ splitColumns: 9 }), RangeError, "2..8");
  assertThrows(() => openSystemBlas({ splitColumns: 1 }), RangeError, "2..8");
  for (const parts of [true, 3] as const) await splitCase(parts);
});

async function splitCase(parts: true | number): Promise<void> {
  const split = openSystemBlas({ threads: 2, splitColumns: parts });
  if (!split.backend) {
    console.log(`skipped: ${split.note}`);
    return;
  }
  const one = openSystemBlas({ threads: 1 });
  const plain = openSystemBlas({ threads: 1, packedWeights: false });
  try {
    // 200 outputs: halves of 112 and 88 columns, or blocks of 80, 80, 40;
    // x at an offset in its buffer
    const rows = 24, inF = 300, outF = 200;
    const w = uniform(outF * inF, 5), b = uniform(outF, 6);
    const x = uniform(rows * inF + 3, 7).subarray(3);
    const t = tensorFromF32("w", w, [outF, inF]);
    const run = (backend: F32GemmBackend, bias?: Float32Array) => {
      setF32GemmBackend({ ...backend, minWork: 1 });
      try {
        return fastLinear(x, rows, t, bias);
      } finally {
        setF32GemmBackend(null);
      }
    };
    const zero = new Float32Array(outF);
    // the helper starts on the first call (which runs both halves on
    // this thread) and takes a half of the later ones: the same bits
    const first = run(split.backend, b);
    for (let k = 0; k < 4; k++) {
      await new Promise((r) => setTimeout(r, 20));
      const withBias = run(split.backend, b), without = run(split.backend);
      const what = `${parts} parts, call ${k}`;
      checkExact(withBias, x, w, b, rows, inF, outF, `${what}, bias`);
      checkExact(without, x, w, zero, rows, inF, outF, `${what}, no bias`);
      assertEquals(withBias, first);
      // gemmRelu: the same blocks with the ReLU applied by their threads
      setF32GemmBackend({ ...split.backend, minWork: 1 });
      const relu = split.backend.gemmRelu!(x, rows, inF, w, outF, b);
      setF32GemmBackend(null);
      assertEquals(relu, withBias.map((v) => v < 0 ? 0 : v));
    }
    // without column blocks or packed weights there is no fused path
    assertEquals(plain.backend!.gemmRelu!(x, rows, inF, w, outF, b), null);
    const y1 = run(one.backend!, b);
    checkExact(y1, x, w, b, rows, inF, outF, "one thread");
    // packed weights (the default) apply the ReLU in their work items
    if (one.packedStats) {
      assertEquals(
        one.backend!.gemmRelu!(x, rows, inF, w, outF, b),
        y1.map((v) => v < 0 ? 0 : v),
      );
    }
  } finally {
    split.close();
    one.close();
    plain.close();
    setF32GemmBackend(null);
  }
}

Deno.test("the helper thread runs an address list alone: the exact product of arrays outside kernel memory, ReLU where asked", async () => {
  const blas = openSystemBlas({ threads: 1 });
  if (!blas.backend || !blas.library) {
    console.log(`skipped: ${blas.note}`);
    return;
  }
  const helper = new SgemmHelper(blas.library);
  try {
    const rows = 16, inF = 64, outF = 48;
    const x = uniform(rows * inF, 8), w = uniform(outF * inF, 9);
    const wt = new Float32Array(inF * outF);
    transposeF32(w, outF, inF, wt);
    const y = new Float32Array(rows * outF).fill(NaN);
    const at = (v: Float32Array) =>
      Number(Deno.UnsafePointer.value(Deno.UnsafePointer.of(v)));
    const l = helper.addresses;
    // two column halves of 32 and 16, y = x·wt, ReLU on the second
    const F = ADDRESS_FIELDS;
    l.set([
      0,
      0,
      rows,
      32,
      inF,
      1,
      at(x),
      inF,
      at(wt),
      outF,
      0,
      at(y),
      outF,
      0,
    ]);
    l.set([
      0,
      0,
      rows,
      16,
      inF,
      1,
      at(x),
      inF,
      at(wt) + 128,
      outF,
      0,
      at(y) + 128,
      outF,
      1,
    ], F);
    // start() starts the thread (the caller runs the calls meanwhile); it
    // stops after 1 s without lists, so ask again until it is up
    for (let k = 0; k < 3000 && !helper.ready; k++) {
      helper.start(null, 0, 2);
      await new Promise((r) => setTimeout(r, 20));
    }
    helper.finish(); // a list handed over by the last start(), if any
    assert(
      helper.ready,
      "the helper thread did not start in 60 s (its module is type-checked on first use)",
    );
    helper.start(null, 0, 2); // this thread takes no call: the helper runs both
    assertEquals(helper.finish(), -1);
    // the first half: the exact product; the second: max(0, exact)
    const eps = 2 ** -24;
    for (let r = 0; r < rows; r++) {
      for (let o = 0; o < outF; o++) {
        let exact = 0, mag = 0;
        for (let i = 0; i < inF; i++) {
          const t = x[r * inF + i] * w[o * inF + i];
          exact += t;
          mag += Math.abs(t);
        }
        const want = o < 32 ? exact : Math.max(0, exact);
        assert(
          Math.abs(y[r * outF + o] - want) <= 2 * inF * eps * mag,
          `row ${r} output ${o}: ${y[r * outF + o]} vs ${want}`,
        );
      }
    }
  } finally {
    helper.stop();
    blas.close();
  }
});
