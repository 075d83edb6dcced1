/**
 * The two rotary layouts of Llama q/k projections and the conversions
 * between them.
 *
 * Hugging Face checkpoints rotate pairs `(i, i + d/2)` of each head
 * ("neox", half-split). llama.cpp's `llama` architecture rotates adjacent
 * pairs `(2i, 2i + 1)` ("interleaved"), so its converter permutes the rows
 * of `q_proj` and `k_proj` (weights and biases) head by head: GGUF row
 * `h·d + 2i + j` is Hugging Face row `h·d + j·d/2 + i` (`j` ∈ {0, 1}).
 * {@link permuteToInterleaved} does that (HF → GGUF) and
 * {@link permuteToHalfSplit} undoes it (GGUF → HF). Rows are moved as whole
 * byte runs, so any dtype works, quantized blocks included, without
 * decoding.
 *
 * A GGUF llama file can also run as stored with `rope_style: "interleaved"`;
 * the loaders do that.
 *
 * Llama 3.1+ GGUF files store their rope scaling as per-pair divisors in a
 * `rope_freqs.weight` tensor; {@link llama3ScalingFromFactors} recovers the
 * `llama3` rule from them and {@link llama3RopeFactors} makes them.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { permuteToHalfSplit, permuteToInterleaved } from "@modelhost/modelhost/models";
 * import { tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 * // one head of size 4: HF rows 0,1,2,3 → GGUF rows 0,2,1,3
 * const w = tensorFromF32("q", new Float32Array([0, 1, 2, 3]), [4, 1]);
 * const g = permuteToInterleaved(w, 1);
 * assert(toFloat32(g).join() === "0,2,1,3");
 * assert(toFloat32(permuteToHalfSplit(g, 1)).join() === "0,1,2,3");
 * ```
 *
 * @module
 */

import { dtypeInfo } from "../core/dtypes.ts";
import type { Tensor } from "../core/tensor.ts";
import { ropeFrequencies, type RopeScaling } from "../kernels/rope.ts";

function rowBytes(t: Tensor): number {
  const info = dtypeInfo(t.dtype);
  const perRow = t.shape.length >= 2
    ? t.shape.slice(1).reduce((a, b) => a * b, 1)
    : 1;
  if (perRow % info.blockSize !== 0) {
    throw new TypeError(
      `Cannot permute rows of "${t.name}": a row of ${perRow} ${t.dtype} values is not a whole number of ${info.blockSize}-value blocks`,
    );
  }
  return (perRow / info.blockSize) * info.blockBytes;
}

function permuteRows(
  t: Tensor,
  heads: number,
  toInterleaved: boolean,
): Tensor {
  if (t.quant) {
    throw new TypeError(
      `Cannot permute rows of "${t.name}": per-channel quantization parameters are not supported here`,
    );
  }
  const rows = t.shape[0];
  if (
    !Number.isInteger(heads) || heads <= 0 || rows % heads !== 0 ||
    (rows / heads) % 2 !== 0
  ) {
    throw new TypeError(
      `Cannot permute rows of "${t.name}" [${
        t.shape.join(", ")
      }] for ${heads} heads: ${rows} rows is not heads × an even head size`,
    );
  }
  const rb = rowBytes(t);
  if (t.bytes.byteLength < rows * rb) {
    throw new RangeError(
      `Cannot permute rows of "${t.name}": needs ${
        rows * rb
      } bytes, has ${t.bytes.byteLength}`,
    );
  }
  const d = rows / heads, half = d / 2;
  const out = new Uint8Array(rows * rb);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const inter = h * d + 2 * i + j;
        const split = h * d + j * half + i;
        const [to, from] = toInterleaved ? [inter, split] : [split, inter];
        out.set(t.bytes.subarray(from * rb, (from + 1) * rb), to * rb);
      }
    }
  }
  return { name: t.name, dtype: t.dtype, shape: [...t.shape], bytes: out };
}

/**
 * Permutes q/k projection rows from the Hugging Face layout (half-split
 * pairs) to llama.cpp's (adjacent pairs), as llama.cpp's converter does.
 * Works on weights `[heads·d, in]` and biases `[heads·d]` of any dtype.
 *
 * @param t The tensor (rows first).
 * @param heads Query heads for `q_proj`, key/value heads for `k_proj`.
 * @returns A new tensor with the same name, dtype and shape.
 * @throws {TypeError} When the rows are not heads × an even head size, or a
 * row is not a whole number of blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { permuteToInterleaved } from "@modelhost/modelhost/models";
 * import { tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 * const b = tensorFromF32("k.bias", new Float32Array([0, 1, 2, 3, 4, 5, 6, 7]), [8]);
 * assert(toFloat32(permuteToInterleaved(b, 2)).join() === "0,2,1,3,4,6,5,7");
 * ```
 */
export function permuteToInterleaved(t: Tensor, heads: number): Tensor {
  return permuteRows(t, heads, true);
}

/**
 * Undoes {@link permuteToInterleaved}: llama.cpp's q/k row order back to
 * the Hugging Face one.
 *
 * @param t The tensor (rows first).
 * @param heads Query heads for `attn_q`, key/value heads for `attn_k`.
 * @returns A new tensor with the same name, dtype and shape.
 * @throws {TypeError} As {@link permuteToInterleaved}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { permuteToHalfSplit } from "@modelhost/modelhost/models";
 * import { tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 * const w = tensorFromF32("q", new Float32Array([0, 2, 1, 3]), [4]);
 * assert(toFloat32(permuteToHalfSplit(w, 1)).join() === "0,1,2,3");
 * ```
 */
export function permuteToHalfSplit(t: Tensor, heads: number): Tensor {
  return permuteRows(t, heads, false);
}

/**
 * The per-pair divisors llama.cpp stores as `rope_freqs.weight` for a
 * Llama 3.1+ model: `base frequency / scaled frequency` for each pair.
 *
 * @param headDim Size of one head.
 * @param theta RoPE base.
 * @param scaling The llama3 rule.
 * @returns `headDim / 2` factors (1 for kept pairs, `factor` for slowed ones).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { llama3RopeFactors } from "@modelhost/modelhost/models";
 * const f = llama3RopeFactors(128, 500000, {
 *   rope_type: "llama3", factor: 8, low_freq_factor: 1, high_freq_factor: 4,
 *   original_max_position_embeddings: 8192,
 * });
 * assert(f[0] === 1 && f[63] === 8);
 * ```
 */
export function llama3RopeFactors(
  headDim: number,
  theta: number,
  scaling: RopeScaling,
): Float32Array {
  const base = ropeFrequencies(headDim, theta, null);
  const scaled = ropeFrequencies(headDim, theta, scaling);
  return Float32Array.from(base, (f, i) => f / scaled[i]);
}

function matches(
  factors: ArrayLike<number>,
  headDim: number,
  theta: number,
  s: RopeScaling,
): boolean {
  const want = llama3RopeFactors(headDim, theta, s);
  for (let i = 0; i < want.length; i++) {
    if (Math.abs(want[i] - factors[i]) > 1e-4 * Math.max(1, factors[i])) {
      return false;
    }
  }
  return true;
}

/**
 * Recovers the `llama3` rope scaling rule from llama.cpp's per-pair
 * divisors (`rope_freqs.weight`). The standard Llama 3.1 constants are
 * tried first (low 1, high 4, the given original context); otherwise the
 * blend region is fitted (two or more blended pairs determine it).
 *
 * @param factors The divisors, `headDim / 2` of them.
 * @param headDim Size of one head.
 * @param theta RoPE base.
 * @param originalContext The pre-extension context length, when the file
 *   says (`<arch>.rope.scaling.original_context_length`). @default 8192
 * @returns The rule; `null` when every factor is 1.
 * @throws {TypeError} When the factors follow no llama3 rule.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { llama3RopeFactors, llama3ScalingFromFactors } from "@modelhost/modelhost/models";
 * const rule = {
 *   rope_type: "llama3" as const, factor: 32, low_freq_factor: 1, high_freq_factor: 4,
 *   original_max_position_embeddings: 8192,
 * };
 * const back = llama3ScalingFromFactors(llama3RopeFactors(64, 500000, rule), 64, 500000);
 * assert(back?.rope_type === "llama3" && back.factor === 32);
 * ```
 */
export function llama3ScalingFromFactors(
  factors: ArrayLike<number>,
  headDim: number,
  theta: number,
  originalContext = 8192,
): RopeScaling | null {
  const half = headDim / 2;
  if (factors.length !== half) {
    throw new TypeError(
      `rope_freqs.weight has ${factors.length} values, expected head size ${headDim} / 2 = ${half}`,
    );
  }
  let factor = 1;
  for (let i = 0; i < half; i++) factor = Math.max(factor, factors[i]);
  if (factor === 1) return null;
  // Round what a float32 file stored (8.000000476837158 → 8).
  factor = Number(factor.toPrecision(7));
  const standard: RopeScaling = {
    rope_type: "llama3",
    factor,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: originalContext,
  };
  if (matches(factors, headDim, theta, standard)) return standard;
  // Blended pairs satisfy s = A·f + B with s = (1/ff − 1/factor)/(1 − 1/factor).
  const base = ropeFrequencies(headDim, theta, null);
  const pts: [number, number][] = [];
  for (let i = 0; i < half; i++) {
    const g = 1 / factors[i];
    const s = (g - 1 / factor) / (1 - 1 / factor);
    if (s > 1e-4 && s < 1 - 1e-4) pts.push([base[i], s]);
  }
  if (pts.length >= 2) {
    const [f0, s0] = pts[0], [f1, s1] = pts[pts.length - 1];
    const a = (s1 - s0) / (f1 - f0);
    const b = s0 - a * f0;
    const span = originalContext / (2 * Math.PI * a); // high − low
    const low = -b * span;
    const fitted: RopeScaling = {
      rope_type: "llama3",
      factor,
      low_freq_factor: low,
      high_freq_factor: low + span,
      original_max_position_embeddings: originalContext,
    };
    if (low > 0 && span > 0 && matches(factors, headDim, theta, fitted)) {
      return fitted;
    }
  }
  throw new TypeError(
    `rope_freqs.weight (max factor ${factor}) does not follow the llama3 rope scaling rule for head size ${headDim}, base ${theta}`,
  );
}
