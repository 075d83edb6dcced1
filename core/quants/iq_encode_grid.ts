/**
 * Encoders of the lattice types IQ2_XS and IQ3_S, byte-identical to ggml's
 * `quantize_iq2_xs` / `quantize_iq3_s` (what `llama-quantize` writes with
 * an importance matrix). Every float operation is rounded to F32 in C's
 * order, as in `iq_encode.ts`.
 *
 * Both search a scale per group of values, round each group to the nearest
 * lattice point and, when that point is not in the type's grid, take the
 * best of its grid neighbours. The neighbour lists are ggml's
 * (`iq2xs_init_impl` / `iq3xs_init_impl`): for a point off the grid, the
 * grid entries at the smallest and the second smallest squared distance,
 * ordered by distance then by grid index. They are built here on first use
 * of each point (the same lists; ggml builds all of them up front).
 *
 * @module
 */

import { checkValues, nearestInt } from "./_common.ts";
import { QUANT_BLOCKS } from "./blocks.ts";
import { f32ToHalfBits } from "./f16.ts";
import { IQ2XS_GRID, IQ3S_GRID, IQ3XXS_GRID } from "./_iq_tables.ts";

const fround = Math.fround;
const GROUP_MAX_EPS = fround(1e-15);
const TENTH = fround(0.1);
const FIFTH = fround(0.2);
/** IQ3_S stores its super-block scale stretched by this (ggml's 1.033f). */
const D_STRETCH = fround(1.033);
/** IQ3_XXS's (ggml's 1.0125f). */
const D_STRETCH_XXS = fround(1.0125);
const EPS_IQ3_XXS = fround(1e-8);

/**
 * A grid as ggml's quantizers see it: each entry's coordinates as odd
 * numbers `2l + 1`, the map from packed levels to entry (−1 off the
 * grid), and the neighbour lists of points off the grid.
 */
interface Lattice {
  /** Coordinates per entry. */
  dim: number;
  /** Bits per packed level. */
  bits: number;
  /** `2l + 1` per coordinate, `dim` per entry. */
  pos: Int8Array;
  /** Packed levels → entry, or −1. */
  map: Int32Array;
  /** How many of the smallest distances a neighbour list spans. */
  nwant: number;
  /** The neighbour lists computed so far, by packed levels. */
  near: Map<number, Uint16Array>;
}

function lattice(
  grid: Int8Array,
  dim: number,
  bits: number,
  level: (v: number) => number,
  mapSize: number,
  nwant: number,
): Lattice {
  const n = grid.length / dim;
  const pos = new Int8Array(grid.length);
  const map = new Int32Array(mapSize).fill(-1);
  for (let k = 0; k < n; k++) {
    let index = 0;
    for (let i = 0; i < dim; i++) {
      const l = level(grid[k * dim + i]);
      pos[k * dim + i] = 2 * l + 1;
      index |= l << (bits * i);
    }
    map[index] = k;
  }
  return { dim, bits, pos, map, nwant, near: new Map() };
}

/**
 * ggml's neighbour list of the off-grid point `u`: the entries at the
 * `nwant` smallest squared distances, by distance then index.
 */
function neighbours(g: Lattice, u: number): Uint16Array {
  let list = g.near.get(u);
  if (list) return list;
  const { dim, bits, pos } = g;
  const n = pos.length / dim;
  const mask = (1 << bits) - 1;
  const p = new Int32Array(dim);
  for (let k = 0; k < dim; k++) p[k] = 2 * ((u >> (bits * k)) & mask) + 1;
  const d2 = new Int32Array(n);
  for (let j = 0; j < n; j++) {
    let s = 0;
    for (let k = 0; k < dim; k++) {
      const t = pos[j * dim + k] - p[k];
      s += t * t;
    }
    d2[j] = s;
  }
  const levels = [...new Set(d2)].sort((a, b) => a - b).slice(0, g.nwant);
  const out: number[] = [];
  for (const d of levels) {
    for (let j = 0; j < n; j++) if (d2[j] === d) out.push(j);
  }
  list = Uint16Array.from(out);
  g.near.set(u, list);
  return list;
}

/**
 * ggml's `iq2_find_best_neighbour` / `iq3_find_best_neighbour`: the
 * neighbour of `u` closest to `xval` (weighted) at `scale`; writes its
 * levels into `L` and returns its index.
 */
function bestNeighbour(
  g: Lattice,
  u: number,
  xval: Float32Array,
  xo: number,
  weight: Float32Array,
  scale: number,
  L: Int8Array,
): number {
  const list = neighbours(g, u), dim = g.dim;
  let best = Number.MAX_VALUE, index = -1;
  for (const j of list) {
    let d2 = 0;
    for (let i = 0; i < dim; i++) {
      const diff = fround(fround(scale * g.pos[j * dim + i]) - xval[xo + i]);
      d2 = fround(d2 + fround(fround(weight[xo + i] * diff) * diff));
    }
    if (d2 < best) {
      best = d2;
      index = j;
    }
  }
  for (let i = 0; i < dim; i++) L[xo + i] = (g.pos[index * dim + i] - 1) >> 1;
  return index;
}

let iq2xs: Lattice | undefined;
const iq2xsLattice = (): Lattice =>
  iq2xs ??= lattice(
    IQ2XS_GRID,
    8,
    2,
    (v) => v === 0x08 ? 0 : v === 0x19 ? 1 : 2,
    43692,
    2,
  );

let iq3xxs: Lattice | undefined;
const iq3xxsLattice = (): Lattice =>
  iq3xxs ??= lattice(
    IQ3XXS_GRID,
    4,
    3,
    (v) => [0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e].indexOf(v),
    4096,
    2,
  );

let iq3s: Lattice | undefined;
const iq3sLattice = (): Lattice =>
  iq3s ??= lattice(IQ3S_GRID, 4, 3, (v) => (v - 1) >> 1, 4096, 3);

function checkImatrix(
  what: string,
  nPerRow: number,
  imatrix: Float32Array | undefined,
): Float32Array {
  if (!imatrix) {
    throw new TypeError(`${what} needs an importance matrix (as in ggml)`);
  }
  if (imatrix.length !== nPerRow) {
    throw new RangeError(
      `${what}: the importance matrix has ${imatrix.length} weights, the rows ${nPerRow} values`,
    );
  }
  return imatrix;
}

function rowsOf(
  type: "IQ2_XS" | "IQ3_S" | "IQ3_XXS",
  x: Float32Array,
  nPerRow: number,
): number {
  const nb = checkValues(QUANT_BLOCKS[type], x);
  if (nPerRow <= 0 || nPerRow % 256 !== 0 || x.length % nPerRow !== 0) {
    throw new RangeError(
      `${type}: a row of ${nPerRow} values does not divide ${x.length} values into whole 256-value blocks`,
    );
  }
  return nb;
}

/**
 * Encodes IQ2_XS as ggml's `quantize_iq2_xs` (what `llama-quantize` writes
 * with an importance matrix, which the type requires).
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256).
 * @param imatrix One importance weight per column.
 * @returns The super-blocks (74 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 * @throws {TypeError} Without an importance matrix.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ2_XS } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ2_XS", quantizeIQ2_XS(x, 256, new Float32Array(256).fill(1)), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.5);
 * ```
 */
export function quantizeIQ2_XS(
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array,
): Uint8Array {
  const nb = rowsOf("IQ2_XS", x, nPerRow);
  const qwAll = checkImatrix("IQ2_XS", nPerRow, imatrix);
  const g = iq2xsLattice();
  const out = new Uint8Array(nb * 74);
  const dv = new DataView(out.buffer);
  const kMaxQ = 3;
  const scales = new Float32Array(16);
  const weight = new Float32Array(16), waux = new Float32Array(16);
  const xval = new Float32Array(16);
  const L = new Int8Array(16), Laux = new Int8Array(16);
  const onGrid = [true, true], onGridAux = [true, true];
  const signs = [0, 0];
  const q2 = new Uint16Array(32);
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = 74 * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    q2.fill(0);
    let maxScale = 0;
    let sumx2 = 0;
    for (let i = 0; i < 256; i++) {
      sumx2 = fround(sumx2 + fround(x[xo + i] * x[xo + i]));
    }
    const sigma2 = fround(sumx2 / 256);
    for (let ib = 0; ib < 16; ib++) {
      const xb = xo + 16 * ib;
      for (let i = 0; i < 16; i++) {
        weight[i] = fround(
          qwAll[qo + 16 * ib + i] *
            fround(Math.sqrt(fround(sigma2 + fround(x[xb + i] * x[xb + i])))),
        );
        waux[i] = fround(Math.sqrt(weight[i]));
      }
      for (let k = 0; k < 2; k++) {
        let nflip = 0, s = 0;
        for (let i = 0; i < 8; i++) {
          const v = x[xb + 8 * k + i];
          if (v >= 0) xval[8 * k + i] = v;
          else {
            xval[8 * k + i] = -v;
            nflip++;
            s |= 1 << i;
          }
        }
        if (nflip % 2) {
          let imin = 0;
          let min = fround(
            fround(weight[8 * k] * x[xb + 8 * k]) * x[xb + 8 * k],
          );
          for (let i = 1; i < 8; i++) {
            const v = x[xb + 8 * k + i];
            const ax = fround(fround(weight[8 * k + i] * v) * v);
            if (ax < min) {
              min = ax;
              imin = i;
            }
          }
          xval[8 * k + imin] = -xval[8 * k + imin];
          s ^= 1 << imin;
        }
        signs[k] = s & 127;
      }
      let max = xval[0];
      for (let i = 1; i < 16; i++) max = Math.max(max, xval[i]);
      L.fill(0);
      if (max < GROUP_MAX_EPS) {
        scales[ib] = 0;
        continue;
      }
      let best = 0;
      let scale = fround(max / (2 * kMaxQ - 1));
      onGrid[0] = onGrid[1] = true;
      for (let is = -9; is <= 9; is++) {
        const id = fround(fround(2 * kMaxQ - 1 + fround(is * TENTH)) / max);
        const thisScale = fround(1 / id);
        for (let k = 0; k < 2; k++) {
          let u = 0;
          for (let i = 0; i < 8; i++) {
            const l = nearestInt(
              fround(0.5 * fround(fround(id * xval[8 * k + i]) - 1)),
            );
            Laux[8 * k + i] = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= Laux[8 * k + i] << (2 * i);
          }
          onGridAux[k] = true;
          if (g.map[u] < 0) {
            onGridAux[k] = false;
            bestNeighbour(g, u, xval, 8 * k, waux, thisScale, Laux);
          }
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 16; i++) {
          const w = weight[i], q = 2 * Laux[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (
          sumq2 > 0 && fround(sumqx * sumqx) > fround(best * sumq2)
        ) {
          scale = fround(sumqx / sumq2);
          best = fround(scale * sumqx);
          L.set(Laux);
          onGrid[0] = onGridAux[0];
          onGrid[1] = onGridAux[1];
        }
      }
      if ((!onGrid[0] || !onGrid[1]) && scale > 0) {
        const id = fround(1 / scale);
        for (let k = 0; k < 2; k++) {
          if (onGrid[k]) continue;
          let u = 0;
          for (let i = 0; i < 8; i++) {
            let l = nearestInt(
              fround(0.5 * fround(fround(id * xval[8 * k + i]) - 1)),
            );
            l = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= l << (2 * i);
            L[8 * k + i] = l;
          }
          if (g.map[u] < 0) bestNeighbour(g, u, xval, 8 * k, waux, scale, L);
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 16; i++) {
          const w = weight[i], q = 2 * L[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (sumq2 > 0) scale = fround(sumqx / sumq2);
      }
      if (scale < 0) {
        scale = -scale;
        signs[0] = ~signs[0] & 127;
        signs[1] = ~signs[1] & 127;
      }
      for (let k = 0; k < 2; k++) {
        let u = 0;
        for (let i = 0; i < 8; i++) u |= L[8 * k + i] << (2 * i);
        const index = g.map[u];
        if (index < 0) {
          throw new RangeError(`IQ2_XS: levels ${u} are not on the grid`);
        }
        q2[2 * ib + k] = index | (signs[k] << 9);
      }
      scales[ib] = scale;
      maxScale = Math.max(maxScale, scale);
    }
    if (!maxScale) continue; // d = 0, qs and scales 0
    const d = fround(maxScale / 31);
    dv.setUint16(o, f32ToHalfBits(d), true);
    const id = fround(1 / d);
    for (let ib = 0; ib < 16; ib++) {
      let l = nearestInt(fround(0.5 * fround(fround(id * scales[ib]) - 1)));
      l = Math.max(0, Math.min(15, l));
      out[o + 66 + (ib >> 1)] |= ib % 2 ? l << 4 : l;
    }
    for (let i = 0; i < 32; i++) dv.setUint16(o + 2 + 2 * i, q2[i], true);
  }
  return out;
}

/**
 * Encodes IQ3_S as ggml's `quantize_iq3_s` (what `llama-quantize` writes),
 * optionally weighted by an importance matrix.
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The super-blocks (110 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ3_S } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ3_S", quantizeIQ3_S(x), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.25);
 * ```
 */
export function quantizeIQ3_S(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  return iq3Impl(false, x, nPerRow, imatrix);
}

/**
 * Encodes IQ3_XXS as ggml's `quantize_iq3_xxs` (what `llama-quantize`
 * writes), optionally weighted by an importance matrix.
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The super-blocks (98 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ3_XXS } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ3_XXS", quantizeIQ3_XXS(x), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.3);
 * ```
 */
export function quantizeIQ3_XXS(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  return iq3Impl(true, x, nPerRow, imatrix);
}

/**
 * ggml's `quantize_row_iq3_s_impl` and, with `xxs`, the 256-entry grid of
 * `quantize_row_iq3_xxs_impl` (signs as 7-bit codes with a parity flip, a
 * wider scale search, on-grid groups kept in the last pass, scale and signs
 * packed in one u32 per sub-block).
 */
function iq3Impl(
  xxs: boolean,
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array | undefined,
): Uint8Array {
  const type = xxs ? "IQ3_XXS" : "IQ3_S";
  const nb = rowsOf(type, x, nPerRow);
  const qwAll = imatrix && checkImatrix(type, nPerRow, imatrix);
  const g = xxs ? iq3xxsLattice() : iq3sLattice();
  const bb = xxs ? 98 : 110;
  const out = new Uint8Array(nb * bb);
  const dv = new DataView(out.buffer);
  const kMaxQ = 8;
  const scales = new Float32Array(8);
  const weight = new Float32Array(32), waux = new Float32Array(32);
  const xval = new Float32Array(32);
  const L = new Int8Array(32), Laux = new Int8Array(32);
  const onGrid = new Array<boolean>(8), onGridAux = new Array<boolean>(8);
  const signs = new Uint8Array(4);
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = bb * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    let maxScale = 0;
    let sumx2 = 0;
    for (let i = 0; i < 256; i++) {
      sumx2 = fround(sumx2 + fround(x[xo + i] * x[xo + i]));
    }
    const sigma2 = fround(fround(2 * sumx2) / 256);
    // ggml moves its qs and signs pointers past written sub-blocks only: an
    // all-zero sub-block leaves its place to the next one (qh and scales
    // stay by sub-block)
    let qsAt = o + 2, signsAt = o + 74;
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      for (let i = 0; i < 32; i++) {
        const v = x[xb + i];
        weight[i] = qwAll
          ? fround(
            qwAll[qo + 32 * ib + i] *
              fround(Math.sqrt(fround(sigma2 + fround(v * v)))),
          )
          : fround(v * v);
        waux[i] = fround(Math.sqrt(weight[i]));
      }
      for (let k = 0; k < 4; k++) {
        let s = 0, nflip = 0;
        for (let i = 0; i < 8; i++) {
          const v = x[xb + 8 * k + i];
          if (v >= 0) xval[8 * k + i] = v;
          else {
            xval[8 * k + i] = -v;
            nflip++;
            s |= 1 << i;
          }
        }
        if (xxs && nflip % 2) {
          let imin = 0;
          let min = fround(
            fround(weight[8 * k] * x[xb + 8 * k]) * x[xb + 8 * k],
          );
          for (let i = 1; i < 8; i++) {
            const v = x[xb + 8 * k + i];
            const ax = fround(fround(weight[8 * k + i] * v) * v);
            if (ax < min) {
              min = ax;
              imin = i;
            }
          }
          xval[8 * k + imin] = -xval[8 * k + imin];
          s ^= 1 << imin;
        }
        signs[k] = xxs ? s & 127 : s;
      }
      let max = xval[0];
      for (let i = 1; i < 32; i++) max = Math.max(max, xval[i]);
      L.fill(0);
      if (xxs ? max < EPS_IQ3_XXS : !max) {
        scales[ib] = 0;
        continue;
      }
      let best = 0;
      let scale = fround(max / (2 * kMaxQ - 1));
      onGrid.fill(xxs);
      const isMax = xxs ? 15 : 9;
      for (let is = -isMax; is <= isMax; is++) {
        const id = fround(fround(2 * kMaxQ - 1 + fround(is * FIFTH)) / max);
        const thisScale = fround(1 / id);
        for (let k = 0; k < 8; k++) {
          let u = 0;
          for (let i = 0; i < 4; i++) {
            const l = nearestInt(
              fround(0.5 * fround(fround(id * xval[4 * k + i]) - 1)),
            );
            Laux[4 * k + i] = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= Laux[4 * k + i] << (3 * i);
          }
          onGridAux[k] = true;
          if (g.map[u] < 0) {
            onGridAux[k] = false;
            bestNeighbour(g, u, xval, 4 * k, waux, thisScale, Laux);
          }
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 32; i++) {
          const w = weight[i], q = 2 * Laux[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (sumq2 > 0 && fround(sumqx * sumqx) > fround(best * sumq2)) {
          scale = fround(sumqx / sumq2);
          best = fround(scale * sumqx);
          L.set(Laux);
          for (let k = 0; k < 8; k++) onGrid[k] = onGridAux[k];
        }
      }
      if (onGrid.includes(false) && scale > 0) {
        const id = fround(1 / scale);
        for (let k = 0; k < 8; k++) {
          if (xxs && onGrid[k]) continue;
          let u = 0;
          for (let i = 0; i < 4; i++) {
            let l = nearestInt(
              fround(0.5 * fround(fround(id * xval[4 * k + i]) - 1)),
            );
            l = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= l << (3 * i);
          }
          let index = g.map[u];
          if (index < 0) {
            index = bestNeighbour(g, u, xval, 4 * k, waux, scale, L);
          }
          for (let i = 0; i < 4; i++) {
            L[4 * k + i] = (g.pos[4 * index + i] - 1) >> 1;
          }
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 32; i++) {
          const w = weight[i], q = 2 * L[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (sumq2 > 0) scale = fround(sumqx / sumq2);
      }
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) signs[k] = ~signs[k] & (xxs ? 127 : 255);
      }
      for (let k = 0; k < 8; k++) {
        let u = 0;
        for (let i = 0; i < 4; i++) u |= L[4 * k + i] << (3 * i);
        const index = g.map[u];
        if (index < 0) {
          throw new RangeError(`${type}: levels ${u} are not on the grid`);
        }
        if (xxs) out[o + 2 + 8 * ib + k] = index;
        else {
          out[qsAt + k] = index & 255;
          out[o + 66 + ib] |= (index >> 8) << k;
        }
      }
      if (xxs) {
        dv.setUint32(
          o + 66 + 4 * ib,
          signs[0] | (signs[1] << 7) | (signs[2] << 14) | (signs[3] << 21),
          true,
        );
      } else {
        qsAt += 8;
        out.set(signs, signsAt);
        signsAt += 4;
      }
      scales[ib] = scale;
      maxScale = Math.max(maxScale, scale);
    }
    if (!maxScale) {
      // ggml clears IQ3_XXS's qs (the signs too), leaves IQ3_S's as written
      if (xxs) out.fill(0, o, o + bb);
      continue;
    }
    const d = fround(maxScale / 31);
    dv.setUint16(
      o,
      f32ToHalfBits(fround(d * (xxs ? D_STRETCH_XXS : D_STRETCH))),
      true,
    );
    const id = fround(1 / d);
    if (xxs) {
      for (let ib = 0; ib < 8; ib++) {
        const l = Math.max(
          0,
          Math.min(
            15,
            nearestInt(fround(0.5 * fround(fround(id * scales[ib]) - 1))),
          ),
        );
        const at = o + 66 + 4 * ib;
        dv.setUint32(at, (dv.getUint32(at, true) | (l << 28)) >>> 0, true);
      }
      continue;
    }
    for (let ib = 0; ib < 8; ib += 2) {
      const l1 = Math.max(
        0,
        Math.min(
          15,
          nearestInt(fround(0.5 * fround(fround(id * scales[ib]) - 1))),
        ),
      );
      const l2 = Math.max(
        0,
        Math.min(
          15,
          nearestInt(fround(0.5 * fround(fround(id * scales[ib + 1]) - 1))),
        ),
      );
      out[o + 106 + (ib >> 1)] = l1 | (l2 << 4);
    }
  }
  return out;
}
