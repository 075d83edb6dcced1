/**
 * An encoder's GELU MLP, `down(gelu(up(x)))`, through a native backend's
 * `sgemm` (see `F32GemmBackend.sgemm` in `./fast/backend.ts`) with the
 * hidden activations kept in kernel memory: the up projection writes them
 * there, `gelu_bias_rows` adds its bias and applies GELU (erf) in place,
 * split over the kernel threads, and the down projection reads them from
 * there. No bias fill and no copy of the `rows × hidden` activations.
 * The encoders run it for F32 weights when the system BLAS is installed.
 *
 * @module
 */

import type { Tensor } from "../core/tensor.ts";
import { f32GemmBackendFor } from "./fast/backend.ts";
import { f32WeightView } from "./_f32_view.ts";
import { runSplit } from "./fast/_dispatch.ts";
import { getEngine } from "./wasm/_engine.ts";

/**
 * `gelu(x·Upᵀ + bUp)·Downᵀ + bDown` on the installed native backend, or
 * null where it does not apply (no backend with `sgemm`, no engine, weights
 * not plain F32, a hidden size not a multiple of 4, too few rows): the
 * caller then runs its `linear` steps. GELU is the erf form (erf as a
 * rational function, within 5e-7·(1 + |x|) of the exact GELU, tested).
 *
 * @param x Input rows, `rows × inF`.
 * @param rows Number of rows.
 * @param up Up projection `[hidden, inF]`.
 * @param bUp Its bias (`hidden` values) or undefined.
 * @param down Down projection `[inF, hidden]`.
 * @param bDown Its bias (`inF` values) or undefined.
 * @returns The `rows × inF` output, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { geluMlpGemm } from "./_mlp_gemm.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("w", new Float32Array(16), [4, 4]);
 * // without an installed native backend it declines
 * assert(geluMlpGemm(new Float32Array(4), 1, w, undefined, w, undefined) === null);
 * ```
 */
export function geluMlpGemm(
  x: Float32Array,
  rows: number,
  up: Tensor,
  bUp: Float32Array | undefined,
  down: Tensor,
  bDown: Float32Array | undefined,
): Float32Array | null {
  const [hidden, inF] = up.shape;
  if (up.shape.length !== 2 || x.length !== rows * inF || hidden % 4 !== 0) {
    return null;
  }
  const blas = f32GemmBackendFor(rows, inF, hidden);
  const sgemm = blas?.sgemm?.bind(blas);
  const wu = f32WeightView(up, hidden, inF),
    wd = f32WeightView(down, inF, hidden);
  const e = sgemm && wu && wd ? getEngine() : null;
  if (!e || !sgemm || !wu || !wd) return null;
  if (bUp && bUp.length !== hidden) return null;
  if (bDown && bDown.length !== inF) return null;
  const hp = e.scratch("mlp_hidden", rows * hidden * 4 + 64);
  const bp = e.scratch("mlp_bias", hidden * 4 + 64);
  let mem = e.f32;
  if (bUp) mem.set(bUp, bp >> 2);
  else mem.fill(0, bp >> 2, (bp >> 2) + hidden);
  const h = mem.subarray(hp >> 2, (hp >> 2) + rows * hidden);
  sgemm(false, true, rows, hidden, inF, 1, x, inF, wu, inF, 0, h, hidden);
  runSplit(
    e,
    "gelu_bias_rows",
    rows * hidden * 24,
    rows,
    (r0, r1) => [hp + r0 * hidden * 4, bp, r1 - r0, hidden],
  );
  const y = new Float32Array(rows * inF);
  if (bDown) { for (let r = 0; r < rows; r++) y.set(bDown, r * inF); }
  mem = e.f32;
  sgemm(
    false,
    true,
    rows,
    inF,
    hidden,
    1,
    mem.subarray(hp >> 2, (hp >> 2) + rows * hidden),
    hidden,
    wd,
    hidden,
    bDown ? 1 : 0,
    y,
    inF,
  );
  return y;
}
