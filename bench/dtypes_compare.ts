/**
 * Side-by-side F16 / BF16 conversion speed: the dtype table against the
 * platform's Float16Array / DataView paths and the `@petamoriken/float16`
 * package. Prints the median time per 64 MiB of 16-bit data and the ratio to
 * the package (F16) or to a DataView loop (BF16, which the package lacks).
 *
 *   deno run -A bench/dtypes_compare.ts [MiB=64] [rounds=15]
 *
 * Cases run interleaved, round after round (the slow package cases in a phase
 * of their own), and the median is reported, so a burst of load on a shared
 * machine moves every case alike. The package path
 * is about 300 times slower, so it runs on 1/16 of the data and its time is
 * scaled up.
 *
 * @module
 */

import { getFloat16, setFloat16 } from "@petamoriken/float16";
import { decodeToF32, encodeFromF32 } from "../core/dtypes.ts";

const MIB = Number(Deno.args[0] ?? 64);
const ROUNDS = Number(Deno.args[1] ?? 15);
const N = (MIB * 1024 * 1024) / 2;
const SMALL = N / 16; // elements the package converts per round

const codes = new Uint16Array(N);
let seed = 12345;
for (let i = 0; i < N; i++) {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  codes[i] = ((seed >>> 16) & 0x7bff) | ((seed & 1) << 15); // finite F16
}
const bytes = new Uint8Array(codes.buffer);
const view = new DataView(codes.buffer);
const wide = new Float32Array(new Float16Array(codes.buffer));
let sink = 0;

interface Case {
  group: string;
  name: string;
  /** How much of N one call converts (1, or 1/16 for the package). */
  part: number;
  run(): void;
}
const cases: Case[] = [
  {
    group: "F16 -> F32",
    name: "package getFloat16 loop",
    part: 1 / 16,
    run() {
      const out = new Float32Array(SMALL);
      for (let i = 0; i < SMALL; i++) out[i] = getFloat16(view, 2 * i, true);
      sink += out[SMALL - 1];
    },
  },
  {
    group: "F16 -> F32",
    name: "dtype table (64K lookup table)",
    part: 1,
    run: () => void (sink += decodeToF32("F16", bytes, N)[N - 1]),
  },
  {
    group: "F16 -> F32",
    name: "Float32Array.from(Float16Array)",
    part: 1,
    run: () =>
      void (sink += Float32Array.from(new Float16Array(codes.buffer))[N - 1]),
  },
  {
    group: "F16 -> F32",
    name: "Float16Array element loop",
    part: 1,
    run() {
      const h = new Float16Array(codes.buffer);
      const out = new Float32Array(N);
      for (let i = 0; i < N; i++) out[i] = h[i];
      sink += out[N - 1];
    },
  },
  {
    group: "F16 -> F32",
    name: "DataView.getFloat16 loop",
    part: 1,
    run() {
      const out = new Float32Array(N);
      for (let i = 0; i < N; i++) out[i] = view.getFloat16(2 * i, true);
      sink += out[N - 1];
    },
  },
  {
    group: "BF16 -> F32",
    name: "DataView getUint16 / setUint32 loop",
    part: 1,
    run() {
      const out = new DataView(new ArrayBuffer(4 * N));
      for (let i = 0; i < N; i++) {
        out.setUint32(4 * i, view.getUint16(2 * i, true) << 16, true);
      }
      sink += out.getUint8(0);
    },
  },
  {
    group: "BF16 -> F32",
    name: "copy into the high halves (Uint16Array)",
    part: 1,
    run() {
      const out = new Uint16Array(2 * N);
      for (let i = 0; i < N; i++) out[2 * i + 1] = codes[i];
      sink += out[1];
    },
  },
  {
    group: "BF16 -> F32",
    name: "dtype table (shift loop)",
    part: 1,
    run: () => void (sink += decodeToF32("BF16", bytes, N)[N - 1]),
  },
  {
    group: "F32 -> F16",
    name: "package setFloat16 loop",
    part: 1 / 16,
    run() {
      const out = new DataView(new ArrayBuffer(2 * SMALL));
      for (let i = 0; i < SMALL; i++) setFloat16(out, 2 * i, wide[i], true);
      sink += out.getUint8(0);
    },
  },
  {
    group: "F32 -> F16",
    name: "dtype table (Float16Array.from)",
    part: 1,
    run: () => void (sink += encodeFromF32("F16", wide)[0]),
  },
  {
    group: "F32 -> F16",
    name: "new Float16Array(Float32Array)",
    part: 1,
    run: () => void (sink += new Float16Array(wide)[0]),
  },
];

// The package cases run in their own phase so that their garbage does not
// land in the timings of the fast cases.
const times = new Map<Case, number[]>(cases.map((c) => [c, []]));
for (
  const phase of [
    cases.filter((c) => c.part < 1),
    cases.filter((c) => c.part === 1),
  ]
) {
  for (let r = 0; r < ROUNDS + 1; r++) {
    for (const c of phase) {
      const t0 = performance.now();
      c.run();
      const ms = (performance.now() - t0) / c.part;
      if (r > 0) times.get(c)!.push(ms); // round 0 warms up
    }
  }
}
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
};

console.log(
  `${MIB} MiB of 16-bit data, median of ${ROUNDS} interleaved rounds\n`,
);
let base = 0;
let group = "";
for (const c of cases) {
  const m = median(times.get(c)!);
  if (c.group !== group) {
    group = c.group;
    base = m;
    console.log(`${group}`);
  }
  const ratio = base / m;
  console.log(
    `  ${c.name.padEnd(42)} ${m.toFixed(1).padStart(9)} ms   ${
      ratio >= 1
        ? `${ratio.toFixed(2)}x faster`
        : `${(1 / ratio).toFixed(2)}x slower`
    } than ${cases.find((x) => x.group === group)!.name}`,
  );
}
if (sink === 0.5) console.log(sink);
