/**
 * Probe for V8's 128 → 256-bit WebAssembly revectorizer: a 6 × 16 F32
 * register tile (24 f32x4 accumulators, stored side by side after the
 * loop) timed on one thread. Compare
 *
 *   deno run -A bench/revectorize_probe.ts
 *   deno run -A --v8-flags=--experimental-wasm-revectorize bench/revectorize_probe.ts
 *   deno run -A --v8-flags=--experimental-wasm-revectorize,--no-wasm-bounds-checks bench/revectorize_probe.ts
 *
 * (add `--trace-wasm-revectorize` to see why pairs are refused). Only the
 * last, with bounds checks off (unsafe, never shipped), revectorizes under
 * Deno: see README "Fast kernels → Measured".
 */

import {
  type Code,
  forLoop,
  get,
  i32,
  ModuleBuilder,
  set,
  T,
  v128,
} from "../kernels/wasm/_asm.ts";
import { c, Ctx, zero } from "../kernels/wasm/_kernels_util.ts";

const R = 6, NV = 4, KC = 256, CALLS = 200_000;
const m = new ModuleBuilder({ shared: false, minPages: 16, maxPages: 16 });
const ctx = new Ctx("relaxed");
const f = m.func("tile", [["xp", T.i32], ["wp", T.i32], ["kc", T.i32], [
  "yp",
  T.i32,
]]);
const { xp, wp, kc, yp } = f.params;
const acc = Array.from({ length: R }, () => f.locals(T.v128, NV));
const w = f.locals(T.v128, NV);
const [bx] = f.locals(T.v128, 1);
const [k] = f.locals(T.i32, 1);
const step: Code[] = w.map((v, j) => set(v, v128.load(get(wp), 16 * j)));
for (let r = 0; r < R; r++) {
  step.push(set(bx, v128.load32_splat(get(xp), 4 * r)));
  for (let j = 0; j < NV; j++) {
    step.push(set(acc[r][j], ctx.madd(get(bx), get(w[j]), get(acc[r][j]))));
  }
}
f.body(
  ...acc.flat().map((a) => set(a, zero)),
  forLoop(
    "k",
    k,
    c(0),
    get(kc),
    c(1),
    ...step,
    set(xp, i32.add(get(xp), c(R * 4))),
    set(wp, i32.add(get(wp), c(NV * 16))),
  ),
  ...acc.flatMap((row, r) =>
    row.map((a, j) => v128.store(get(yp), get(a), (r * NV + j) * 16))
  ),
);
const memory = new WebAssembly.Memory({ initial: 16, maximum: 16 });
const instance = new WebAssembly.Instance(
  new WebAssembly.Module(m.encode() as Uint8Array<ArrayBuffer>),
  { env: { memory } },
);
const tile = instance.exports.tile as (...a: number[]) => void;
const f32 = new Float32Array(memory.buffer);
for (let i = 0; i < 100_000; i++) f32[i] = (i % 7) * 0.25 - 0.5;
const X = 0, W = 65536, Y = 524288;
for (let i = 0; i < 2000; i++) tile(X, W, KC, Y); // tier up
let err = 0;
for (let r = 0; r < R; r++) {
  for (let col = 0; col < NV * 4; col++) {
    let s = 0;
    for (let i = 0; i < KC; i++) {
      s += f32[X / 4 + i * R + r] * f32[W / 4 + i * NV * 4 + col];
    }
    err = Math.max(err, Math.abs(s - f32[Y / 4 + r * NV * 4 + col]));
  }
}
const t0 = performance.now();
for (let i = 0; i < CALLS; i++) tile(X, W, KC, Y);
const s = (performance.now() - t0) / 1000;
const gflops = (2 * R * NV * 4 * KC * CALLS) / s / 1e9;
console.log(
  `6 × 16 F32 tile, one thread: ${gflops.toFixed(1)} GFLOP/s (max error ${
    err.toExponential(1)
  })`,
);
