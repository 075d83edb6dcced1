/**
 * Rotary position embeddings (RoPE): the per-pair frequencies (with the
 * Llama 3 and linear context-extension rules), precomputed cos/sin tables,
 * and the in-place rotation of query/key rows in both layouts:
 *
 * - `"neox"`: element `i` pairs with `i + headDim/2` (the half-split layout
 *   of Hugging Face Llama/Qwen/Mistral checkpoints and GPT-NeoX).
 * - `"interleaved"`: element `2i` pairs with `2i + 1` (the layout of Meta's
 *   original Llama code, llama2.c and llama.cpp's `llama` architecture,
 *   whose GGUF converter permutes the q/k rows into it).
 *
 * Angles are computed in float64 and stored as float32 tables.
 * {@link applyRope} rotates on the WebAssembly SIMD kernels of
 * `kernels/fast` (F32 arithmetic) where they apply; {@link applyRopeRef} is
 * its scalar twin (F64 arithmetic).
 *
 * @module
 */

import { getEngine } from "./wasm/_engine.ts";

/** Which elements of a head are rotated together. */
export type RopeStyle = "neox" | "interleaved";

/**
 * Context-extension rule applied to the frequencies, as Hugging Face's
 * `rope_scaling` config names it.
 *
 * - `linear`: every frequency divided by `factor` (position interpolation).
 * - `llama3`: long wavelengths divided by `factor`, short ones kept, a
 *   smooth blend between them (Llama 3.1+).
 */
export type RopeScaling =
  | { rope_type: "linear"; factor: number }
  | {
    rope_type: "llama3";
    factor: number;
    low_freq_factor: number;
    high_freq_factor: number;
    original_max_position_embeddings: number;
  };

/**
 * The rotation frequency of each pair, `θ^(-2i/headDim)` for
 * `i = 0 … headDim/2 − 1`, with an optional scaling rule applied.
 *
 * @param headDim Size of one head (even).
 * @param theta The base (`rope_theta`). @default 10000
 * @param scaling A context-extension rule, or null for none.
 * @returns `headDim / 2` frequencies in radians per position, float64.
 * @throws {RangeError} When `headDim` is not a positive even integer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ropeFrequencies } from "./rope.ts";
 * const f = ropeFrequencies(4, 10000);
 * assert(f[0] === 1 && Math.abs(f[1] - 0.01) < 1e-15);
 * ```
 */
export function ropeFrequencies(
  headDim: number,
  theta = 10000,
  scaling: RopeScaling | null = null,
): Float64Array {
  if (!Number.isInteger(headDim) || headDim <= 0 || headDim % 2 !== 0) {
    throw new RangeError(
      `Cannot build RoPE frequencies: head size ${headDim} is not a positive even integer`,
    );
  }
  const half = headDim / 2;
  const freq = new Float64Array(half);
  for (let i = 0; i < half; i++) freq[i] = Math.pow(theta, (-2 * i) / headDim);
  if (!scaling) return freq;
  if (scaling.rope_type === "linear") {
    for (let i = 0; i < half; i++) freq[i] /= scaling.factor;
    return freq;
  }
  const {
    factor,
    low_freq_factor: lowF,
    high_freq_factor: highF,
    original_max_position_embeddings: oldCtx,
  } = scaling;
  // Wavelengths longer than oldCtx/lowF are slowed by `factor`; those shorter
  // than oldCtx/highF are kept; in between, a linear blend in oldCtx/λ.
  const longest = oldCtx / lowF;
  const shortest = oldCtx / highF;
  for (let i = 0; i < half; i++) {
    const f = freq[i];
    const wavelen = (2 * Math.PI) / f;
    if (wavelen > longest) freq[i] = f / factor;
    else if (wavelen >= shortest) {
      const smooth = (oldCtx / wavelen - lowF) / (highF - lowF);
      freq[i] = (1 - smooth) * (f / factor) + smooth * f;
    }
  }
  return freq;
}

/** Precomputed `cos(p·f_i)` and `sin(p·f_i)` for positions `0 … length−1`. */
export interface RopeTable {
  /** Number of positions covered. */
  readonly length: number;
  /** Pairs per head (`headDim / 2`). */
  readonly half: number;
  /** `[length, half]` row-major cosines. */
  readonly cos: Float32Array;
  /** `[length, half]` row-major sines. */
  readonly sin: Float32Array;
}

/**
 * Builds the cos/sin table for positions `0 … length−1`.
 *
 * @param freq Frequencies from {@link ropeFrequencies}.
 * @param length Number of positions.
 * @returns The table.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ropeFrequencies, ropeTable } from "./rope.ts";
 * const t = ropeTable(ropeFrequencies(2), 3);
 * assert(t.cos[0] === 1 && Math.abs(t.sin[2] - Math.sin(2)) < 1e-7);
 * ```
 */
export function ropeTable(freq: Float64Array, length: number): RopeTable {
  const half = freq.length;
  const cos = new Float32Array(length * half);
  const sin = new Float32Array(length * half);
  for (let p = 0; p < length; p++) {
    for (let i = 0; i < half; i++) {
      const a = p * freq[i];
      cos[p * half + i] = Math.cos(a);
      sin[p * half + i] = Math.sin(a);
    }
  }
  return { length, half, cos, sin };
}

function checkRope(
  x: Float32Array,
  batch: number,
  seq: number,
  heads: number,
  table: RopeTable,
  start: number,
): void {
  const dim = 2 * table.half;
  if (start + seq > table.length) {
    throw new RangeError(
      `Cannot apply RoPE at positions ${start}..${
        start + seq - 1
      }: the table covers ${table.length}`,
    );
  }
  if (x.length !== batch * seq * heads * dim) {
    throw new RangeError(
      `Cannot apply RoPE: ${x.length} values is not ${batch}×${seq}×${heads}×${dim}`,
    );
  }
}

/**
 * Rotates query or key rows in place. `x` holds `batch × seq` rows of
 * `heads × headDim` values (the output of a q or k projection); row
 * `(b, t)` is at position `start + t`.
 *
 * Runs the WebAssembly SIMD kernel (`rope_neox` / `rope_interleaved`, the
 * kernels of `fastRope`) with the table's cos/sin rows, in F32 (error about
 * 1 ulp of the rotated values), where WebAssembly SIMD is available and the
 * head size allows it (`"neox"`: `headDim/2` a multiple of 4;
 * `"interleaved"`: `headDim` a multiple of 4); otherwise
 * {@link applyRopeRef}. The choice never depends on `batch` or `seq`, so
 * a token rotated alone equals the same token rotated in a prefill.
 *
 * @param x The rows, modified in place.
 * @param batch Number of sequences.
 * @param seq Tokens per sequence.
 * @param heads Heads per row.
 * @param table A table covering positions up to `start + seq − 1`; its
 *   `half` fixes the head size (`2 · half`).
 * @param style Which elements are rotated together.
 * @param start Position of the first token of every sequence. @default 0
 * @throws {RangeError} When the table is too short or `x` has the wrong length.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { applyRope, ropeFrequencies, ropeTable } from "./rope.ts";
 * const x = new Float32Array(8).fill(1); // one head of size 8, position 2
 * applyRope(x, 1, 1, 1, ropeTable(ropeFrequencies(8), 3), "neox", 2);
 * assert(Math.abs(x[0] - (Math.cos(2) - Math.sin(2))) < 1e-6);
 * ```
 */
export function applyRope(
  x: Float32Array,
  batch: number,
  seq: number,
  heads: number,
  table: RopeTable,
  style: RopeStyle,
  start = 0,
): void {
  checkRope(x, batch, seq, heads, table, start);
  const half = table.half;
  const dim = 2 * half;
  const neox = style === "neox";
  const e = (neox ? half % 4 === 0 : dim % 4 === 0) && x.length > 0
    ? getEngine()
    : null;
  if (!e) return applyRopeRef(x, batch, seq, heads, table, style, start);
  // The cos/sin rows of positions start … start+seq−1, in the kernel's
  // layout: [seq][half] (neox), or [seq][dim] with cos repeated per pair
  // and (−sin, sin) (interleaved).
  const width = neox ? half : dim;
  const pc = e.scratch("rope_cos", seq * width * 4 + 64);
  const ps = e.scratch("rope_sin", seq * width * 4 + 64);
  const f = e.f32;
  const from = start * half, to = (start + seq) * half;
  if (neox) {
    f.set(table.cos.subarray(from, to), pc >> 2);
    f.set(table.sin.subarray(from, to), ps >> 2);
  } else {
    for (let i = from, o = 0; i < to; i++, o += 2) {
      const cv = table.cos[i], sv = table.sin[i];
      f[(pc >> 2) + o] = cv;
      f[(pc >> 2) + o + 1] = cv;
      f[(ps >> 2) + o] = -sv;
      f[(ps >> 2) + o + 1] = sv;
    }
  }
  const px = e.scratch("x", x.byteLength + 64);
  f.set(x, px >> 2);
  const kernel = e.fn[neox ? "rope_neox" : "rope_interleaved"];
  const rowBytes = seq * heads * dim * 4;
  for (let b = 0; b < batch; b++) {
    kernel(px + b * rowBytes, pc, ps, seq, heads, dim, dim);
  }
  x.set(f.subarray(px >> 2, (px >> 2) + x.length));
}

/**
 * Reference rotation of query or key rows in place (F64 arithmetic, one
 * rounding per stored value): the scalar twin of {@link applyRope}. `x` holds `batch × seq` rows of
 * `heads × headDim` values (the output of a q or k projection); row
 * `(b, t)` is at position `start + t`.
 *
 * @param x The rows, modified in place.
 * @param batch Number of sequences.
 * @param seq Tokens per sequence.
 * @param heads Heads per row.
 * @param table A table covering positions up to `start + seq − 1`; its
 *   `half` fixes the head size (`2 · half`).
 * @param style Which elements are rotated together.
 * @param start Position of the first token of every sequence. @default 0
 * @throws {RangeError} When the table is too short or `x` has the wrong length.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { applyRopeRef, ropeFrequencies, ropeTable } from "./rope.ts";
 * const x = new Float32Array([1, 0]); // one head of size 2, position 1
 * applyRopeRef(x, 1, 1, 1, ropeTable(ropeFrequencies(2), 2), "neox", 1);
 * assert(Math.abs(x[0] - Math.cos(1)) < 1e-7 && Math.abs(x[1] - Math.sin(1)) < 1e-7);
 * ```
 */
export function applyRopeRef(
  x: Float32Array,
  batch: number,
  seq: number,
  heads: number,
  table: RopeTable,
  style: RopeStyle,
  start = 0,
): void {
  checkRope(x, batch, seq, heads, table, start);
  const half = table.half;
  const dim = 2 * half;
  const { cos, sin } = table;
  // Offsets of the two members of pair i, relative to the head's start.
  const stepA = style === "neox" ? 1 : 2;
  const offB = style === "neox" ? half : 1;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < seq; t++) {
      const tb = (start + t) * half;
      const row = (b * seq + t) * heads * dim;
      for (let h = 0; h < heads; h++) {
        const base = row + h * dim;
        for (let i = 0; i < half; i++) {
          const ia = base + i * stepA;
          const ib = ia + offB;
          const c = cos[tb + i], s = sin[tb + i];
          const x1 = x[ia], x2 = x[ib];
          x[ia] = x1 * c - x2 * s;
          x[ib] = x2 * c + x1 * s;
        }
      }
    }
  }
}
