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
 * its scalar twin (F64 arithmetic) and the one RoPE reference (`fastRope`
 * is tested against it too). Both take either a table (cos/sin rounded to
 * F32) or the frequencies themselves (the reference then computes every
 * angle and its cos/sin in F64: the exact rotation), and rotate all of a
 * head or its leading part (partial rotary, `headDim` option).
 *
 * @module
 */

import { getEngine } from "./wasm/_engine.ts";
import { runSplit } from "./fast/_dispatch.ts";

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
 * import { ropeFrequencies } from "@modelhost/modelhost/kernels";
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
 * import { ropeFrequencies, ropeTable } from "@modelhost/modelhost/kernels";
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

/**
 * Options of {@link applyRope} and {@link applyRopeRef}.
 */
export interface ApplyRopeOptions {
  /**
   * Values per head. The leading `2 · half` of each head rotate (`half`:
   * the table's, or the number of frequencies); the rest pass through
   * unchanged (partial rotary embedding, as GPT-NeoX and Phi use).
   * @default {2 · half}
   */
  headDim?: number;
}

/** The pairs per head (`half`) and values per head (`hd`) of a call. */
interface RopeDims {
  half: number;
  hd: number;
}

function checkRope(
  x: Float32Array,
  batch: number,
  seq: number,
  heads: number,
  angles: RopeTable | Float64Array,
  start: number,
  options: ApplyRopeOptions,
): RopeDims {
  const half = angles instanceof Float64Array ? angles.length : angles.half;
  const rot = 2 * half;
  const hd = options.headDim ?? rot;
  if (!Number.isInteger(hd) || hd < rot) {
    throw new RangeError(
      `Cannot apply RoPE: head size ${hd} is smaller than the ${rot} rotated values (or not an integer)`,
    );
  }
  if (!(angles instanceof Float64Array) && start + seq > angles.length) {
    throw new RangeError(
      `Cannot apply RoPE at positions ${start}..${
        start + seq - 1
      }: the table covers ${angles.length}`,
    );
  }
  if (x.length !== batch * seq * heads * hd) {
    throw new RangeError(
      `Cannot apply RoPE: ${x.length} values is not ${batch}×${seq}×${heads}×${hd}`,
    );
  }
  return { half, hd };
}

/**
 * Rotates query or key rows in place. `x` holds `batch × seq` rows of
 * `heads × headDim` values (the output of a q or k projection); row
 * `(b, t)` is at position `start + t`.
 *
 * Runs the WebAssembly SIMD kernel (`rope_neox` / `rope_interleaved`, the
 * kernels of `fastRope`) in F32 (error about 1 ulp of the rotated values)
 * with the table's cos/sin rows, or with cos/sin of the frequencies'
 * angles computed in F64 and rounded to F32, where WebAssembly SIMD is
 * available and the rotated size allows it (`"neox"`: `half` a multiple of
 * 4; `"interleaved"`: `2 · half` a multiple of 4); otherwise
 * {@link applyRopeRef}. The choice never depends on `batch` or `seq`, so
 * a token rotated alone equals the same token rotated in a prefill.
 *
 * @param x The rows, modified in place.
 * @param batch Number of sequences.
 * @param seq Tokens per sequence.
 * @param heads Heads per row.
 * @param angles A table covering positions up to `start + seq − 1`, or the
 *   frequencies (from {@link ropeFrequencies}); its `half` (or length) is
 *   the number of rotated pairs per head.
 * @param style Which elements are rotated together.
 * @param start Position of the first token of every sequence. @default 0
 * @param options Head size, when only part of each head rotates.
 * @throws {RangeError} When the table is too short or `x` has the wrong length.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { applyRope, ropeFrequencies, ropeTable } from "@modelhost/modelhost/kernels";
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
  angles: RopeTable | Float64Array,
  style: RopeStyle,
  start = 0,
  options: ApplyRopeOptions = {},
): void {
  const { half, hd } = checkRope(x, batch, seq, heads, angles, start, options);
  const rot = 2 * half;
  const neox = style === "neox";
  const e = (neox ? half % 4 === 0 : rot % 4 === 0) && x.length > 0
    ? getEngine()
    : null;
  if (!e) {
    return applyRopeRef(x, batch, seq, heads, angles, style, start, options);
  }
  // The cos/sin rows of positions start … start+seq−1, in the kernel's
  // layout: [seq][half] (neox), or [seq][rot] with cos repeated per pair
  // and (−sin, sin) (interleaved).
  const width = neox ? half : rot;
  const pc = e.scratch("rope_cos", seq * width * 4 + 64);
  const ps = e.scratch("rope_sin", seq * width * 4 + 64);
  const f = e.f32;
  const c0 = pc >> 2, s0 = ps >> 2;
  if (angles instanceof Float64Array) {
    for (let t = 0; t < seq; t++) {
      const pos = start + t;
      for (let i = 0; i < half; i++) {
        const a = pos * angles[i];
        const cv = Math.cos(a), sv = Math.sin(a);
        if (neox) {
          f[c0 + t * width + i] = cv;
          f[s0 + t * width + i] = sv;
        } else {
          f[c0 + t * width + 2 * i] = f[c0 + t * width + 2 * i + 1] = cv;
          f[s0 + t * width + 2 * i] = -sv;
          f[s0 + t * width + 2 * i + 1] = sv;
        }
      }
    }
  } else {
    const from = start * half, to = (start + seq) * half;
    if (neox) {
      f.set(angles.cos.subarray(from, to), c0);
      f.set(angles.sin.subarray(from, to), s0);
    } else {
      for (let i = from, o = 0; i < to; i++, o += 2) {
        const cv = angles.cos[i], sv = angles.sin[i];
        f[c0 + o] = cv;
        f[c0 + o + 1] = cv;
        f[s0 + o] = -sv;
        f[s0 + o + 1] = sv;
      }
    }
  }
  const px = e.scratch("x", x.byteLength + 64);
  f.set(x, px >> 2);
  const name = neox ? "rope_neox" : "rope_interleaved";
  const tokBytes = heads * hd * 4, rowBytes = seq * tokBytes;
  for (let b = 0; b < batch; b++) {
    // tokens are independent: a prefill's split over the kernel threads
    runSplit(e, name, seq * heads * rot * 4, seq, (t0, t1) => [
      px + b * rowBytes + t0 * tokBytes,
      pc + t0 * width * 4,
      ps + t0 * width * 4,
      t1 - t0,
      heads,
      hd,
      rot,
    ]);
  }
  x.set(f.subarray(px >> 2, (px >> 2) + x.length));
}

/**
 * Reference rotation of query or key rows in place (F64 arithmetic, one
 * rounding per stored value): the scalar twin of {@link applyRope} and the
 * one RoPE reference. `x` holds `batch × seq` rows of `heads × headDim`
 * values (the output of a q or k projection); row `(b, t)` is at position
 * `start + t`. With a table, cos and sin are the table's (F32); with the
 * frequencies, each angle `(start + t) · freq[i]` and its cos and sin are
 * computed in F64 (the exact rotation).
 *
 * @param x The rows, modified in place.
 * @param batch Number of sequences.
 * @param seq Tokens per sequence.
 * @param heads Heads per row.
 * @param angles A table covering positions up to `start + seq − 1`, or the
 *   frequencies (from {@link ropeFrequencies}); its `half` (or length) is
 *   the number of rotated pairs per head.
 * @param style Which elements are rotated together.
 * @param start Position of the first token of every sequence. @default 0
 * @param options Head size, when only part of each head rotates.
 * @throws {RangeError} When the table is too short or `x` has the wrong length.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { applyRopeRef, ropeFrequencies, ropeTable } from "@modelhost/modelhost/kernels";
 * const x = new Float32Array([1, 0]); // one head of size 2, position 1
 * applyRopeRef(x, 1, 1, 1, ropeTable(ropeFrequencies(2), 2), "neox", 1);
 * assert(Math.abs(x[0] - Math.cos(1)) < 1e-7 && Math.abs(x[1] - Math.sin(1)) < 1e-7);
 * // the frequencies instead of a table: exact F64 angles, and a partial rotation
 * const y = new Float32Array([1, 0, 5, 6]); // head of 4, the first 2 rotate
 * applyRopeRef(y, 1, 1, 1, ropeFrequencies(2), "neox", 1, { headDim: 4 });
 * assert(y[0] === Math.fround(Math.cos(1)) && y[2] === 5 && y[3] === 6);
 * ```
 */
export function applyRopeRef(
  x: Float32Array,
  batch: number,
  seq: number,
  heads: number,
  angles: RopeTable | Float64Array,
  style: RopeStyle,
  start = 0,
  options: ApplyRopeOptions = {},
): void {
  const { half, hd } = checkRope(x, batch, seq, heads, angles, start, options);
  // Offsets of the two members of pair i, relative to the head's start.
  const stepA = style === "neox" ? 1 : 2;
  const offB = style === "neox" ? half : 1;
  const freq = angles instanceof Float64Array ? angles : null;
  const cs = new Float64Array(half), sn = new Float64Array(half);
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < seq; t++) {
      const pos = start + t;
      for (let i = 0; i < half; i++) {
        if (freq) {
          const a = pos * freq[i];
          cs[i] = Math.cos(a);
          sn[i] = Math.sin(a);
        } else {
          cs[i] = (angles as RopeTable).cos[pos * half + i];
          sn[i] = (angles as RopeTable).sin[pos * half + i];
        }
      }
      const row = (b * seq + t) * heads * hd;
      for (let h = 0; h < heads; h++) {
        const base = row + h * hd;
        for (let i = 0; i < half; i++) {
          const ia = base + i * stepA;
          const ib = ia + offB;
          const c = cs[i], s = sn[i];
          const x1 = x[ia], x2 = x[ib];
          x[ia] = x1 * c - x2 * s;
          x[ib] = x2 * c + x1 * s;
        }
      }
    }
  }
}
