/**
 * glibc's `mallopt(M_MMAP_THRESHOLD)` through FFI, for the system BLAS
 * backend (io/blas.ts).
 *
 * Each product returns a new output array. glibc serves allocations above
 * its mmap threshold (128 KiB at start, raised as such blocks are freed,
 * but the heap's top is handed back to the system as it frees) with fresh
 * pages, and on first touch each 4 KiB page faults, which on a virtual
 * machine costs microseconds: a 1 MiB output measured 0.5–0.8 ms to
 * allocate and fill on the AMD EPYC VM, 0.1 ms from reused heap memory,
 * against 6–7 ms for the whole batch-64 1024 → 4096 → 1024 MLP on two
 * threads. A fixed threshold keeps such blocks in the heap, where freed
 * memory is reused.
 *
 * @module
 */

const M_MMAP_THRESHOLD = -3;
let applied: number | null = null;

/**
 * Sets glibc's mmap threshold once per process (later calls keep the
 * first value).
 *
 * @param bytes The threshold.
 * @returns What happened, for the backend's notes: the value in force, or
 *   why none was set (not Linux, no glibc).
 */
export function setMmapThreshold(bytes: number): string {
  if (applied !== null) return `malloc mmap threshold ${applied} bytes`;
  if (Deno.build.os !== "linux") return "malloc left alone (not Linux)";
  let libc: Deno.DynamicLibrary<{
    mallopt: { parameters: ["i32", "i32"]; result: "i32" };
    gnu_get_libc_version: { parameters: []; result: "pointer" };
  }>;
  try {
    libc = Deno.dlopen("libc.so.6", {
      mallopt: { parameters: ["i32", "i32"], result: "i32" },
      // present in glibc only: musl's mallopt does nothing
      gnu_get_libc_version: { parameters: [], result: "pointer" },
    });
  } catch {
    return "malloc left alone (no glibc)";
  }
  try {
    if (libc.symbols.mallopt(M_MMAP_THRESHOLD, bytes) !== 1) {
      return "malloc left alone (mallopt refused)";
    }
    applied = bytes;
    return `malloc mmap threshold ${bytes} bytes`;
  } finally {
    libc.close();
  }
}
