/**
 * Q4_K / Q6_K / Q5_0 weights on many x rows (prefill, batches) as the
 * integer GEMMs of `kernels/wasm/_kernels_quant_kgemm.ts`: the x codes packed
 * once per chunk of rows, each weight's panels of 8 outputs split between
 * the threads. Same bits as the dot kernels of `quantJob` for every row.
 *
 * @module
 */

import type { Engine } from "../wasm/_engine.ts";
import {
  kquantGemmPackedXBytes,
  kquantGemmScratchBytes,
  QK_MR,
  QK_NR,
} from "../wasm/_kernels_quant_kgemm.ts";
import { q5IgemmScratchBytes } from "../wasm/_kernels_quant_q5gemm.ts";
import { QI_MR, quantIgemmPackedXBytes } from "../wasm/_kernels_quant_igemm.ts";
import { runGemm, state, threadSlots } from "./_dispatch.ts";

/** x rows per chunk of a K-quant GEMM job (keeps the packed x small). */
const KGEMM_CHUNK_ROWS = 256;

/**
 * Least x rows for which Q4_K / Q6_K / Q5_0 jobs run as the GEMM (`state.gemmMinRows`
 * when set). 4: below that the dot kernels read the weights few enough
 * times that unpacking a panel per job does not pay (not measured finer).
 */
const KGEMM_MIN_ROWS = 4;

/**
 * Zeroes the rows past the last of a packed x's last panel (`n` rows in
 * panels of `mr` rows, `panelBytes` bytes each; the pack kernels write
 * only the rows that exist): the GEMMs read whole panels, and the panels
 * before it are written whole. Zeroing only that panel instead of the
 * whole block saves a fill of the packed x per job (120 per 128-token
 * prefill of SmolLM-135M's shape, 147 KB each) and leaves the same bytes
 * where the kernels read.
 *
 * @param e The engine.
 * @param xp The packed x.
 * @param n Rows packed.
 * @param mr Rows per panel.
 * @param panelBytes Bytes per panel.
 */
export function zeroLastPanel(
  e: Engine,
  xp: number,
  n: number,
  mr: number,
  panelBytes: number,
): void {
  const whole = Math.floor(n / mr);
  if (whole * mr === n) return;
  e.u8.fill(0, xp + whole * panelBytes, xp + (whole + 1) * panelBytes);
}

/** The GEMM kernel of a weight kind (`q4_k`, `q6_k`, `q5_0`). */
function fnName(kind: string): string {
  return kind === "q5_0" ? "q5_0_igemm" : `${kind}_kgemm`;
}

/** Whether a `kind` job of `rows` x rows of `inF` inputs runs as the K-quant GEMM on `e`. */
export function useKquantGemm(
  e: Engine,
  kind: string,
  rows: number,
  inF: number,
): boolean {
  if (!state.kGemm || !e.fn[fnName(kind)]) return false;
  if (kind !== "q5_0" && inF % 256 !== 0) return false;
  const least = state.gemmMinRows > 0 ? state.gemmMinRows : KGEMM_MIN_ROWS;
  return rows >= Math.max(2, least);
}

/**
 * Runs the weights `ptrs` (kind `kind`, `outs[i] × inF`, `rowBytes` bytes
 * per output row) on the Q8_K-quantized x (`q8` codes, `meta` as
 * `quantize_xk` writes them) of `rows` rows; writes each weight's
 * `rows × outs[i]` output plus its bias to kernel memory at `ys[i]` (the
 * kernels store only the outputs and rows that exist).
 *
 * @param e The engine.
 * @param kind The weights' kind.
 * @param rowBytes Bytes per output row of a weight.
 * @param ptrs Kernel addresses of the weights.
 * @param outs Outputs of each weight.
 * @param q8 The x codes.
 * @param meta Their metadata.
 * @param rows x rows.
 * @param inF Inputs.
 * @param biases Biases (undefined entries: none).
 * @param ys Where each weight's outputs go.
 */
export function kquantGemmJob(
  e: Engine,
  kind: "q4_k" | "q6_k" | "q5_0",
  rowBytes: number,
  ptrs: number[],
  outs: number[],
  q8: number,
  meta: number,
  rows: number,
  inF: number,
  biases: (Float32Array | undefined)[],
  ys: number[],
): void {
  const chunk = Math.min(rows, KGEMM_CHUNK_ROWS);
  // Q5_0 (Q8_0 activations) packs x as Q4_0's integer GEMM does
  const q5 = kind === "q5_0";
  const xBytes = q5
    ? quantIgemmPackedXBytes(chunk, inF)
    : kquantGemmPackedXBytes(chunk, inF);
  const xp = e.scratch("qkx", xBytes + 64);
  const stride =
    ((q5 ? q5IgemmScratchBytes(inF) : kquantGemmScratchBytes(inF)) + 63) & ~63;
  const scr = e.scratch("qkscr", stride * threadSlots(e));
  for (let r0 = 0; r0 < rows; r0 += chunk) {
    const n = Math.min(chunk, rows - r0);
    zeroLastPanel(e, xp, n, q5 ? QI_MR : QK_MR, (q5 ? QI_MR : QK_MR) * inF);
    e.fn[q5 ? "qi_pack_x" : "qk_pack_x"](q8 + r0 * inF, xp, n, inF);
    // quantize_x's and quantize_xk's metadata: 16 bytes per row and block of 32
    const m = meta + r0 * (inF / 32) * 16;
    ptrs.forEach((w, i) => {
      const outF = outs[i];
      const padded = Math.ceil(outF / QK_NR) * QK_NR;
      const bp = e.scratch("bias", padded * 4);
      e.f32.fill(0, bp >> 2, (bp >> 2) + padded);
      if (biases[i]) e.f32.set(biases[i]!, bp >> 2);
      runGemm(
        e,
        fnName(kind),
        n * inF * outF,
        Math.ceil(outF / QK_NR),
        [xp, m, w, rowBytes, ys[i] + r0 * outF * 4, bp, n, inF, outF],
        scr,
        stride,
      );
    });
  }
}
