/**
 * F16 / BF16 widening to F32 and F32 -> F16 narrowing: the dtype table's
 * path (a 64K lookup table for F16 widening) beside the alternatives: the
 * platform's Float16Array and DataView, and the `@petamoriken/float16` package
 * as the baseline.
 *
 *   deno task bench bench/dtypes_bench.ts                       # 2 MiB of F16 per case
 *   MODELHOST_BENCH_MIB=64 deno bench -A bench/dtypes_bench.ts  # the README numbers
 *
 * The package decodes one element per call through DataView-style helpers,
 * about 200 times slower than the platform paths, so the default size keeps
 * each case to a few seconds.
 *
 * @module
 */

import {
  Float16Array as PackageFloat16Array,
  getFloat16,
  setFloat16,
} from "@petamoriken/float16";
import { decodeToF32, encodeFromF32 } from "../core/dtypes.ts";

const MIB = Number(Deno.env.get("MODELHOST_BENCH_MIB") ?? "2");
const N = (MIB * 1024 * 1024) / 2; // F16 / BF16 elements in MIB mebibytes
// The package cases take ~300 ms per MiB: run them only a few times.
const slow = { n: MIB >= 32 ? 2 : 3, warmup: 1 };

// Inputs built once: random finite F16 codes, the same bits read as BF16, and
// their F32 values for narrowing.
const codes = new Uint16Array(N);
{
  let s = 12345;
  for (let i = 0; i < N; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    codes[i] = ((s >>> 16) & 0x7bff) | ((s & 1) << 15);
  }
}
const bytes = new Uint8Array(codes.buffer);
const view = new DataView(codes.buffer);
const wide = new Float32Array(new Float16Array(codes.buffer));
let sink = 0;

const f16 = `F16 -> F32, ${MIB} MiB`;
Deno.bench(
  `package getFloat16 loop`,
  { group: f16, baseline: true, ...slow },
  () => {
    const out = new Float32Array(N);
    for (let i = 0; i < N; i++) out[i] = getFloat16(view, 2 * i, true);
    sink += out[N - 1];
  },
);
Deno.bench(`dtype table (64K lookup table)`, {
  group: f16,
}, () => {
  sink += decodeToF32("F16", bytes, N)[N - 1];
});
Deno.bench(`new Float32Array(Float16Array)`, { group: f16 }, () => {
  sink += new Float32Array(new Float16Array(codes.buffer))[N - 1];
});
Deno.bench(`Float16Array element loop`, { group: f16 }, () => {
  const h = new Float16Array(codes.buffer);
  const out = new Float32Array(N);
  for (let i = 0; i < N; i++) out[i] = h[i];
  sink += out[N - 1];
});
Deno.bench(`DataView.getFloat16 loop`, { group: f16 }, () => {
  const out = new Float32Array(N);
  for (let i = 0; i < N; i++) out[i] = view.getFloat16(2 * i, true);
  sink += out[N - 1];
});
Deno.bench(`Float32Array.from(Float16Array)`, { group: f16 }, () => {
  sink += Float32Array.from(new Float16Array(codes.buffer))[N - 1];
});

const bf16 = `BF16 -> F32, ${MIB} MiB (the package has no BF16)`;
Deno.bench(`DataView getUint16 / setUint32 loop`, {
  group: bf16,
  baseline: true,
}, () => {
  const out = new DataView(new ArrayBuffer(4 * N));
  for (let i = 0; i < N; i++) {
    out.setUint32(4 * i, view.getUint16(2 * i, true) << 16, true);
  }
  sink += out.getUint8(4 * N - 1);
});
Deno.bench(`dtype table (shift loop)`, { group: bf16 }, () => {
  sink += decodeToF32("BF16", bytes, N)[N - 1];
});
Deno.bench(`copy into the high halves (Uint16Array)`, { group: bf16 }, () => {
  const out = new Uint16Array(2 * N);
  for (let i = 0; i < N; i++) out[2 * i + 1] = codes[i];
  sink += out[2 * N - 1];
});

const narrow = `F32 -> F16, ${MIB} MiB of F16 out`;
Deno.bench(`package setFloat16 loop`, {
  group: narrow,
  baseline: true,
  ...slow,
}, () => {
  const out = new DataView(new ArrayBuffer(2 * N));
  for (let i = 0; i < N; i++) setFloat16(out, 2 * i, wide[i], true);
  sink += out.getUint8(2 * N - 1);
});
Deno.bench(`package Float16Array.from`, { group: narrow, ...slow }, () => {
  sink += PackageFloat16Array.from(wide)[N - 1];
});
Deno.bench(`dtype table`, { group: narrow }, () => {
  sink += encodeFromF32("F16", wide)[2 * N - 1];
});
Deno.bench(
  `Float16Array.from(Float32Array)`,
  { group: narrow },
  () => {
    sink += Float16Array.from(wide)[N - 1];
  },
);
Deno.bench(`new Float16Array(Float32Array)`, { group: narrow }, () => {
  sink += new Float16Array(wide)[N - 1];
});

globalThis.addEventListener("unload", () => {
  if (sink === 0.5) console.log(sink); // keep the results observable
});
