/**
 * The WebAssembly scale search of the Q4_K and Q5_K encoders: runs ggml's
 * `make_qkx2_quants` for four sub-blocks at once (one per SIMD lane, each
 * lane the same F32 operations in the same order as C), bit-identical to
 * `makeQkx2Quants` of `_k_search.ts`. The module (`_k_wasm_bytes.ts`) is
 * generated from `kernels/wasm/_kernels_quantize_k.ts`. Where WebAssembly
 * SIMD is missing, {@link k4SearchWasm} returns false and the callers use
 * the scalar code.
 *
 * @module
 */

import { F_0_1, GROUP_MAX_EPS, makeQkx2Quants } from "./_k_search.ts";
import { K_QUANT_WASM_BASE64 } from "./_k_wasm_bytes.ts";

/** Blocks searched per WebAssembly call. */
export const K_WASM_CHUNK = 64;

const GROUP_BYTES = 32 * 16; // one group: 32 values × 4 lanes × 4 bytes
const PX = 0;
const PW = PX + K_WASM_CHUNK * 2 * GROUP_BYTES;
const PL = PW + K_WASM_CHUNK * 2 * GROUP_BYTES;
const PO = PL + K_WASM_CHUNK * 2 * GROUP_BYTES;
const PS = PO + K_WASM_CHUNK * 4 * 32; // Q4_K: 2 groups × 48 bytes, Q6_K: 4 × 32
const PIN = PS + 6 * GROUP_BYTES; // qkx2 scratch: x − min and codes of a pair
const POUT = PIN + K_WASM_CHUNK * 1024; // the caller's values, blocks in order
const END = POUT + K_WASM_CHUNK * 192; // packed codes

interface Engine {
  f32: Float32Array;
  i32: Int32Array;
  qkx2: (...args: number[]) => void;
  qx: (...args: number[]) => void;
  requant: (...args: number[]) => void;
  k4prep: (...args: number[]) => void;
  q6prep: (...args: number[]) => void;
  k4pack: (...args: number[]) => void;
  q6pack: (...args: number[]) => void;
  u8: Uint8Array;
}

let engine: Engine | null | undefined;

/**
 * Switch for tests and benchmarks: with `enabled` false the encoders use
 * the scalar search.
 *
 * @example
 * ```ts
 * import { kWasmState } from "./_k_wasm.ts";
 * kWasmState.enabled = true;
 * ```
 */
export const kWasmState: { enabled: boolean } = { enabled: true };

function start(): Engine | null {
  if (engine !== undefined) return engine;
  try {
    const bin = atob(K_QUANT_WASM_BASE64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const memory = new WebAssembly.Memory({
      initial: Math.ceil(END / 65536),
      maximum: 16,
    });
    const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
      env: { memory },
    });
    engine = {
      f32: new Float32Array(memory.buffer),
      i32: new Int32Array(memory.buffer),
      qkx2: inst.exports.qkx2 as (...args: number[]) => void,
      qx: inst.exports.qx as (...args: number[]) => void,
      requant: inst.exports.requant as (...args: number[]) => void,
      k4prep: inst.exports.k4prep as (...args: number[]) => void,
      q6prep: inst.exports.q6prep as (...args: number[]) => void,
      k4pack: inst.exports.k4pack as (...args: number[]) => void,
      q6pack: inst.exports.q6pack as (...args: number[]) => void,
      u8: new Uint8Array(memory.buffer),
    };
  } catch {
    engine = null;
  }
  return engine;
}

/**
 * Runs the Q4_K / Q5_K scale search of `nb` blocks starting at `x[s]`
 * (weights `avX + |x|` per 32-value sub-block, as ggml's
 * `quantize_row_q4_K_ref` builds them): scales, negated mins and codes
 * per sub-block, the same bits as `makeQkx2Quants`.
 *
 * @param x The values.
 * @param s First value of the first block.
 * @param nb Blocks (at most {@link K_WASM_CHUNK}).
 * @param nmax Largest code (15 or 31).
 * @param rmin First candidate's offset.
 * @param rdelta Step between candidates (an F32 value).
 * @param nstep Candidate steps.
 * @param scales Receives 8 scales per block.
 * @param mins Receives 8 negated mins per block.
 * @param L Receives 256 codes per block when given (the codes also stay in
 *   the module's memory for {@link k4RequantWasm}).
 * @returns False when WebAssembly is unavailable (nothing written).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { k4SearchWasm } from "./_k_wasm.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const sc = new Float32Array(8), mn = new Float32Array(8);
 * const L = new Int32Array(256);
 * if (k4SearchWasm(x, 0, 1, 15, -1, Math.fround(0.1), 20, sc, mn, L)) {
 *   assert(sc[0] > 0);
 * }
 * ```
 */
export function k4SearchWasm(
  x: Float32Array,
  s: number,
  nb: number,
  nmax: number,
  rmin: number,
  rdelta: number,
  nstep: number,
  scales: Float32Array,
  mins: Float32Array,
  L?: Int32Array,
): boolean {
  const e = kWasmState.enabled ? start() : null;
  if (!e) return false;
  const { f32, i32 } = e;
  const wx = PW >> 2;
  // the values as given; k4prep lays them out and computes the weights
  f32.set(x.subarray(s, s + 256 * nb), PIN >> 2);
  e.k4prep(PIN, PX, PW, nb);
  e.qkx2(PX, PW, PL, PO, 2 * nb, nmax, rmin, rdelta, nstep, PS);
  const lx = PL >> 2;
  const ox = PO >> 2;
  let weights: Float32Array | undefined;
  for (let b = 0; b < nb; b++) {
    for (let j = 0; j < 8; j++) {
      const g = b * 2 + (j >> 2);
      const k = j & 3;
      const r = ox + g * 12;
      if (i32[r + 8 + k] !== 0) {
        // all values equal: the scalar code's early exit
        weights ??= new Float32Array(32);
        let o = g * 128 + k;
        for (let l = 0; l < 32; l++, o += 4) weights[l] = f32[wx + o];
        const mi = new Float32Array(1);
        const codes = new Int32Array(32);
        scales[b * 8 + j] = makeQkx2Quants(
          32,
          nmax,
          x,
          s + 256 * b + 32 * j,
          weights,
          codes,
          0,
          mi,
          0,
          new Int32Array(32),
          new Float32Array(32),
          rmin,
          rdelta,
          nstep,
          false,
        );
        mins[b * 8 + j] = mi[0];
        o = lx + g * 128 + k;
        for (let l = 0; l < 32; l++, o += 4) i32[o] = codes[l];
      } else {
        scales[b * 8 + j] = f32[r + k];
        mins[b * 8 + j] = f32[r + 4 + k];
      }
      if (!L) continue;
      let o = lx + g * 128 + k;
      for (let l = 0, d = 256 * b + 32 * j; l < 32; l++, o += 4) {
        L[d + l] = i32[o];
      }
    }
  }
  return true;
}

/**
 * Runs the Q6_K scale search (ggml's `make_qx_quants` with `nmax` 32 on
 * each 16-value sub-block) of `nb` blocks starting at `x[s]`: the same bits
 * as `makeQxQuants`.
 *
 * @param x The values.
 * @param s First value of the first block.
 * @param nb Blocks (at most {@link K_WASM_CHUNK}).
 * @param scales Receives 16 scales per block.
 * @param L Receives 256 codes (in `[0, 64)`) per block when given (they
 *   also stay in the module's memory for {@link q6RequantWasm}).
 * @returns False when WebAssembly is unavailable (nothing written).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { q6SearchWasm } from "./_k_wasm.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const sc = new Float32Array(16);
 * if (q6SearchWasm(x, 0, 1, sc, new Int32Array(256))) assert(sc[0] !== 0);
 * ```
 */
export function q6SearchWasm(
  x: Float32Array,
  s: number,
  nb: number,
  scales: Float32Array,
  L?: Int32Array,
): boolean {
  const e = kWasmState.enabled ? start() : null;
  if (!e) return false;
  const { f32, i32 } = e;
  f32.set(x.subarray(s, s + 256 * nb), PIN >> 2);
  e.q6prep(PIN, PX, nb);
  e.qx(PX, PL, PO, 4 * nb, 32, GROUP_MAX_EPS, F_0_1, PS);
  const lx = PL >> 2;
  const ox = PO >> 2;
  for (let b = 0; b < nb; b++) {
    for (let j = 0; j < 16; j++) {
      const g = b * 4 + (j >> 2);
      const k = j & 3;
      const d = 256 * b + 16 * j;
      let o = lx + g * 64 + k;
      if (i32[ox + g * 8 + 4 + k] !== 0) {
        // all below GROUP_MAX_EPS: zero codes, zero scale
        scales[b * 16 + j] = 0;
        for (let l = 0; l < 16; l++, o += 4) i32[o] = 0;
        o = lx + g * 64 + k;
      } else {
        scales[b * 16 + j] = f32[ox + g * 8 + k];
      }
      if (!L) continue;
      for (let l = 0; l < 16; l++, o += 4) L[d + l] = i32[o];
    }
  }
  return true;
}

/**
 * The final Q4_K / Q5_K codes of the blocks of the last
 * {@link k4SearchWasm} call: `nearest_int((x + dm) / d)` clamped to
 * `[0, nmax]` with `d = dd[16b + j]` and `dm = dd[16b + 8 + j]` per
 * sub-block; where `d` is 0 the search's codes stay, as in ggml.
 *
 * @param nb Blocks (as in the search call).
 * @param nmax Largest code.
 * @param dd `d` and `dm` of each sub-block, 16 per block.
 * @param L Receives 256 codes per block.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { k4RequantWasm, k4SearchWasm } from "./_k_wasm.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const sc = new Float32Array(8), mn = new Float32Array(8);
 * if (k4SearchWasm(x, 0, 1, 15, -1, Math.fround(0.1), 20, sc, mn)) {
 *   const dd = new Float32Array(16).fill(0.1, 0, 8).fill(1, 8);
 *   const L = new Int32Array(256);
 *   k4RequantWasm(1, 15, dd, L);
 *   assert(L[0] === 10); // (sin 0 + 1) / 0.1
 * }
 * ```
 */
export function k4RequantWasm(
  nb: number,
  nmax: number,
  dd: Float32Array,
  L: Int32Array,
): void {
  const e = start()!;
  const { f32, i32 } = e;
  k4SetDd(f32, nb, dd);
  e.requant(PX, PL, PO, 2 * nb, 32, 0, nmax, 0);
  const lx = PL >> 2;
  for (let b = 0; b < nb; b++) {
    for (let j = 0; j < 8; j++) {
      let o = lx + (2 * b + (j >> 2)) * 128 + (j & 3);
      for (let l = 0, d = 256 * b + 32 * j; l < 32; l++, o += 4) {
        L[d + l] = i32[o];
      }
    }
  }
}

/**
 * The final Q6_K codes of the blocks of the last {@link q6SearchWasm}
 * call: `nearest_int(x / d)` clamped to `[-32, 31]`, plus 32, with
 * `d = dd[16b + j]` per sub-block; where `d` is 0 the search's codes stay.
 *
 * @param nb Blocks (as in the search call).
 * @param dd `d` of each sub-block, 16 per block.
 * @param L Receives 256 codes per block.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { q6RequantWasm, q6SearchWasm } from "./_k_wasm.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * if (q6SearchWasm(x, 0, 1, new Float32Array(16))) {
 *   const L = new Int32Array(256);
 *   q6RequantWasm(1, new Float32Array(16).fill(0.5), L);
 *   assert(L[1] === 34); // round(sin 1 / 0.5) + 32
 * }
 * ```
 */
export function q6RequantWasm(
  nb: number,
  dd: Float32Array,
  L: Int32Array,
): void {
  const e = start()!;
  const { f32, i32 } = e;
  q6SetDd(f32, nb, dd);
  e.requant(PX, PL, PO, 4 * nb, 16, -32, 31, 32);
  const lx = PL >> 2;
  for (let b = 0; b < nb; b++) {
    for (let j = 0; j < 16; j++) {
      let o = lx + (4 * b + (j >> 2)) * 64 + (j & 3);
      for (let l = 0, d = 256 * b + 16 * j; l < 16; l++, o += 4) {
        L[d + l] = i32[o];
      }
    }
  }
}

/**
 * The final Q4_K codes of the blocks of the last {@link k4SearchWasm}
 * call (as {@link k4RequantWasm} with `nmax` 15), packed: each block's 128
 * code bytes go to `out[o + 144·b + 16 ..]`.
 *
 * @param nb Blocks (as in the search call).
 * @param dd `d` and `dm` of each sub-block, 16 per block.
 * @param out The Q4_K blocks.
 * @param o Byte offset of the first block.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { k4RequantPackWasm, k4SearchWasm } from "./_k_wasm.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const sc = new Float32Array(8), mn = new Float32Array(8);
 * if (k4SearchWasm(x, 0, 1, 15, -1, Math.fround(0.1), 20, sc, mn)) {
 *   const dd = new Float32Array(16).fill(0.1, 0, 8).fill(1, 8);
 *   const out = new Uint8Array(144);
 *   k4RequantPackWasm(1, dd, out, 0);
 *   assert((out[16] & 15) === 10); // (sin 0 + 1) / 0.1
 * }
 * ```
 */
export function k4RequantPackWasm(
  nb: number,
  dd: Float32Array,
  out: Uint8Array,
  o: number,
): void {
  const e = start()!;
  k4SetDd(e.f32, nb, dd);
  e.requant(PX, PL, PO, 2 * nb, 32, 0, 15, 0);
  e.k4pack(PL, POUT, nb);
  for (let b = 0; b < nb; b++) {
    out.set(
      e.u8.subarray(POUT + 128 * b, POUT + 128 * (b + 1)),
      o + 144 * b + 16,
    );
  }
}

/**
 * The final Q6_K codes of the blocks of the last {@link q6SearchWasm}
 * call (as {@link q6RequantWasm}), packed: the 192 code bytes of block `b`
 * go to `out[o + 210·b ..]` where `kept[b]` is non-zero (the others stay
 * zero, as ggml leaves blocks whose scales are all below its epsilon).
 *
 * @param nb Blocks (as in the search call).
 * @param dd `d` of each sub-block, 16 per block.
 * @param out The Q6_K blocks.
 * @param o Byte offset of the first block.
 * @param kept Per block: whether to store its codes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { q6RequantPackWasm, q6SearchWasm } from "./_k_wasm.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * if (q6SearchWasm(x, 0, 1, new Float32Array(16))) {
 *   const out = new Uint8Array(210);
 *   q6RequantPackWasm(1, new Float32Array(16).fill(0.5), out, 0, [1]);
 *   assert((out[1] & 15) === 2); // round(sin 1 / 0.5) + 32 = 34, low nibble 2
 * }
 * ```
 */
export function q6RequantPackWasm(
  nb: number,
  dd: Float32Array,
  out: Uint8Array,
  o: number,
  kept: ArrayLike<number>,
): void {
  const e = start()!;
  q6SetDd(e.f32, nb, dd);
  e.requant(PX, PL, PO, 4 * nb, 16, -32, 31, 32);
  e.q6pack(PL, POUT, nb);
  for (let b = 0; b < nb; b++) {
    if (!kept[b]) continue;
    out.set(
      e.u8.subarray(POUT + 192 * b, POUT + 192 * (b + 1)),
      o + 210 * b,
    );
  }
}

/** `d` then `dm` of group g (lane k) at 8·g + k and 8·g + 4 + k, for Q4_K / Q5_K. */
function k4SetDd(f32: Float32Array, nb: number, dd: Float32Array): void {
  const px = PO >> 2;
  for (let b = 0; b < nb; b++) {
    for (let j = 0; j < 8; j++) {
      const o = px + (2 * b + (j >> 2)) * 8 + (j & 3);
      f32[o] = dd[16 * b + j];
      f32[o + 4] = dd[16 * b + 8 + j];
    }
  }
}

/** `d` of group g (lane k) at 8·g + k, dm (zero) at 8·g + 4 + k, for Q6_K. */
function q6SetDd(f32: Float32Array, nb: number, dd: Float32Array): void {
  const px = PO >> 2;
  for (let b = 0; b < nb; b++) {
    for (let j = 0; j < 16; j++) {
      const o = px + (4 * b + (j >> 2)) * 8 + (j & 3);
      f32[o] = dd[16 * b + j];
      f32[o + 4] = 0;
    }
  }
}
