/**
 * The system BLAS backend (io/blas.ts) against the WebAssembly F32 GEMM and
 * an F64 product of the same F32 inputs. Skipped with a message where the
 * library or --allow-ffi is missing.
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { useSystemBlas } from "../../io/blas.ts";
import {
  f32GemmBackendFor,
  fastLinear,
  fastMatmulF32,
  setF32GemmBackend,
  SGEMM_CALL_FIELDS,
} from "../../kernels/fast/mod.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { checkF32Product, uniformF32 } from "../_helpers/f32_product.ts";

const uniform = uniformF32;

/**
 * Tolerance per output: 2·in·ε_f32·Σ|x_i·w_i| (each side's F32 sums in any
 * order are within in·ε·Σ|terms| of the exact value).
 */
function check(
  y: Float32Array,
  x: Float32Array,
  w: Float32Array,
  b: Float32Array,
  rows: number,
  inF: number,
  outF: number,
  what: string,
): void {
  const worst = checkF32Product(y, x, w, b, rows, inF, outF, what, 2 * inF);
  console.log(`${what}: worst error ${worst.toFixed(1)} ε·Σ|x·w|`);
}

Deno.test("system BLAS GEMM agrees with the WebAssembly GEMM and the exact product", () => {
  const blas = useSystemBlas({ threads: 1 });
  if (!blas.backend) {
    console.log(`skipped: ${blas.note}`);
    return;
  }
  try {
    const rows = 16, inF = 256, outF = 96;
    const x = uniform(rows * inF, 1), w = uniform(outF * inF, 2);
    const b = uniform(outF, 3);
    assert(f32GemmBackendFor(rows, inF, outF) === null); // below minWork
    const t = tensorFromF32("w", w, [outF, inF]);
    const real = blas.backend;
    let calls = 0;
    const small = setF32GemmBackend({
      ...real,
      minWork: 1,
      gemm(...a) {
        calls++;
        return real.gemm(...a);
      },
    });
    const native = fastLinear(x, rows, t, b);
    const viaMatmul = fastMatmulF32(x, rows, inF, w, outF, b);
    assertEquals(calls, 2);
    setF32GemmBackend(null);
    const wasm = fastLinear(x, rows, t, b);
    setF32GemmBackend(small);
    assertEquals(native, viaMatmul);
    check(native, x, w, b, rows, inF, outF, `BLAS (${blas.backend.name})`);
    check(wasm, x, w, b, rows, inF, outF, "WebAssembly");
    // the two against each other: within the sum of both bounds
    let differ = 0;
    for (let i = 0; i < native.length; i++) {
      if (native[i] !== wasm[i]) differ++;
    }
    console.log(`${differ} of ${native.length} outputs differ in their bits`);
    // decode-sized calls (one row) stay on WebAssembly
    setF32GemmBackend({ ...blas.backend, minWork: 1 });
    const one = fastLinear(x.subarray(0, inF), 1, t, b);
    setF32GemmBackend(null);
    assertEquals(one, fastLinear(x.subarray(0, inF), 1, t, b));
  } finally {
    blas.close();
    setF32GemmBackend(null);
  }
});

Deno.test("without a BLAS library the WebAssembly kernels stay", () => {
  const blas = useSystemBlas({ libraries: ["/nonexistent/libblas.so"] });
  try {
    assertEquals(blas.backend, null);
    assert(/no BLAS library found|--allow-ffi|no FFI/.test(blas.note ?? ""));
    assert(f32GemmBackendFor(64, 1024, 4096) === null);
  } finally {
    blas.close();
  }
});

Deno.test("bad thread counts and OpenBLAS thread timeouts are RangeErrors", () => {
  assertThrows(() => useSystemBlas({ threads: 0 }), RangeError, "BLAS threads");
  for (const t of [3, 31, 4.5]) {
    assertThrows(
      () => useSystemBlas({ threadTimeout: t }),
      RangeError,
      `thread timeout ${t}`,
    );
  }
});

Deno.test("OpenBLAS kernel family: Haswell on AMD with AVX-512 unless set or turned off", async () => {
  const cpu = await Deno.readTextFile("/proc/cpuinfo").catch(() => "");
  const head = cpu.split("\n\n")[0];
  const amd512 = /vendor_id\s*:\s*AuthenticAMD/.test(head) &&
    /^flags\s*:.*\bavx512f\b/m.test(head);
  const probe = (opts: string, env: Record<string, string> = {}) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { openSystemBlas } from "${
          new URL("../../io/blas.ts", import.meta.url).href
        }";
        const b = openSystemBlas(${opts});
        console.log(JSON.stringify({ env: Deno.env.get("OPENBLAS_CORETYPE") ?? null, name: b.backend?.name ?? null }));
        b.close();`,
      ],
      // this process's own BLAS (the tests above) set the variable here
      env: { ...withoutCoreType(), ...env },
      clearEnv: true,
    }).output().then((o) => {
      assertEquals(o.code, 0, new TextDecoder().decode(o.stderr));
      return JSON.parse(new TextDecoder().decode(o.stdout)) as {
        env: string | null;
        name: string | null;
      };
    });
  function withoutCoreType(): Record<string, string> {
    const all = Deno.env.toObject();
    delete all.OPENBLAS_CORETYPE;
    return all;
  }
  const auto = await probe("{}");
  if (auto.name === null) {
    console.log("skipped: no system BLAS library here");
    return;
  }
  assertEquals(auto.env, amd512 ? "Haswell" : null);
  if (amd512 && auto.name.startsWith("OpenBLAS")) {
    assert(auto.name.includes("Haswell"), auto.name);
  }
  // null leaves the library's choice; a variable already set is kept
  assertEquals((await probe("{ coreType: null }")).env, null);
  const set = await probe("{}", { OPENBLAS_CORETYPE: "Sandybridge" });
  assertEquals(set.env, "Sandybridge");
});

Deno.test("sgemmMany: a list of strided products on two threads gives one-at-a-time sgemm's bits and the exact products' values", async () => {
  const blas = useSystemBlas({ threads: 2 });
  if (!blas.backend?.sgemmMany) {
    console.log(`skipped: ${blas.note ?? "no sgemmMany"}`);
    blas.close();
    return;
  }
  const many = blas.backend.sgemmMany.bind(blas.backend);
  try {
    const memory = new WebAssembly.Memory({
      initial: 64,
      maximum: 128,
      shared: true,
    });
    const mem = new Float32Array(memory.buffer);
    const src = uniform(96 * 48, 7);
    mem.set(src); // A and B share this 96 × 48 block (row stride 48)
    const F = SGEMM_CALL_FIELDS, count = 40, list = 1 << 20, out = 1 << 18;
    // m × n × k per call, both transpositions, columns blocks of the source
    const calls = Array.from({ length: count }, (_, i) => {
      const m = 8 + (i % 5), n = 6 + (i % 7), k = 16;
      const ta = i % 2, tb = (i >> 1) % 2;
      const c = out + i * 4096;
      return [
        ta,
        tb,
        m,
        n,
        k,
        1,
        (i % 3) * 4,
        48,
        4 * (20 + (i % 4)),
        48,
        0,
        c,
        n + 3,
      ];
    });
    const l = new Float64Array(memory.buffer, list, count * F);
    calls.forEach((c, i) => l.set(c, i * F));
    const expect = calls.map(
      ([ta, tb, m, n, k, _al, a, lda, b, ldb, _be, _c, ldc]) => {
        const y = new Float32Array(m * ldc);
        blas.backend!.sgemm!(
          ta === 1,
          tb === 1,
          m,
          n,
          k,
          1,
          src.subarray(a / 4),
          lda,
          src.subarray(b / 4),
          ldb,
          0,
          y,
          ldc,
        );
        // within 2·k·ε·Σ|terms| of the exact product
        for (let i = 0; i < m; i++) {
          for (let j = 0; j < n; j++) {
            let exact = 0, mag = 0;
            for (let p = 0; p < k; p++) {
              const t = src[a / 4 + (ta ? p * lda + i : i * lda + p)] *
                src[b / 4 + (tb ? j * ldb + p : p * ldb + j)];
              exact += t;
              mag += Math.abs(t);
            }
            assert(Math.abs(y[i * ldc + j] - exact) <= 2 * k * 2 ** -24 * mag);
          }
        }
        return y;
      },
    );
    // the helper thread starts on the first list and takes half of the next ones
    for (let round = 0; round < 4; round++) {
      mem.fill(NaN, out / 4, out / 4 + count * 1024);
      many(memory, list, count);
      calls.forEach(([, , m, n, , , , , , , , c, ldc], i) => {
        for (let r = 0; r < m; r++) {
          assertEquals(
            mem.subarray(c / 4 + r * ldc, c / 4 + r * ldc + n),
            expect[i].subarray(r * ldc, r * ldc + n),
            `round ${round}, call ${i}, row ${r}`,
          );
        }
      });
      await new Promise((r) => setTimeout(r, 100));
    }
    // a call past the memory's end is refused, on either thread
    l[(count - 1) * F + 11] = memory.buffer.byteLength - 16;
    assertThrows(() => many(memory, list, count), RangeError, "reach byte");
  } finally {
    blas.close();
    setF32GemmBackend(null);
  }
});
