/**
 * The grids of the lattice types as ggml's quantizers see them
 * (`iq2xs_init_impl` / `iq3xs_init_impl`), shared by the IQ1, IQ2 and IQ3
 * encoders: each entry's coordinates as odd numbers `2l + 1`, the map from
 * packed levels to entry, and for a point off the grid the list of its
 * neighbours (the grid entries at the `nwant` smallest squared distances,
 * ordered by distance then by grid index). The lists are built here on
 * first use of each point (the same lists; ggml builds all of them up
 * front). Also the input checks the encoders share.
 *
 * @module
 */

import { checkValues } from "./_common.ts";
import { QUANT_BLOCKS, type QuantTypeName } from "./blocks.ts";
import {
  IQ1S_GRID,
  IQ2S_GRID,
  IQ2XS_GRID,
  IQ2XXS_GRID,
  IQ3S_GRID,
  IQ3XXS_GRID,
} from "./_iq_tables.ts";

const fround = Math.fround;

/** A grid with its map and neighbour lists. */
export interface Lattice {
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
 *
 * @param g The lattice.
 * @param u The packed levels of a point off the grid.
 * @returns The entries.
 */
export function neighbours(g: Lattice, u: number): Uint16Array {
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
 *
 * @param g The lattice.
 * @param u The packed levels of a point off the grid.
 * @param xval The values (magnitudes).
 * @param xo Where the group starts in `xval`, `weight` and `L`.
 * @param weight The weights.
 * @param scale The scale.
 * @param L Receives the chosen entry's levels.
 * @returns The chosen entry.
 */
export function bestNeighbour(
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

const L2 = (v: number) => v === 0x08 ? 0 : v === 0x19 ? 1 : 2;
const cache = new Map<string, Lattice>();
function cached(key: string, make: () => Lattice): Lattice {
  let g = cache.get(key);
  if (!g) cache.set(key, g = make());
  return g;
}

/**
 * The lattice of a type, built on first use.
 *
 * @param type The type.
 * @returns Its grid, map and neighbour lists.
 */
export function latticeOf(
  type: "IQ1_S" | "IQ2_XXS" | "IQ2_XS" | "IQ2_S" | "IQ3_XXS" | "IQ3_S",
): Lattice {
  return cached(type, () => {
    switch (type) {
      case "IQ1_S": // IQ1_M shares it
        return lattice(IQ1S_GRID, 8, 2, (v) => v + 1, 43692, 3);
      case "IQ2_XXS":
        return lattice(IQ2XXS_GRID, 8, 2, L2, 43692, 2);
      case "IQ2_XS":
        return lattice(IQ2XS_GRID, 8, 2, L2, 43692, 2);
      case "IQ2_S":
        return lattice(IQ2S_GRID, 8, 2, L2, 43692, 1);
      case "IQ3_XXS":
        return lattice(
          IQ3XXS_GRID,
          4,
          3,
          (v) => [0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e].indexOf(v),
          4096,
          2,
        );
      case "IQ3_S":
        return lattice(IQ3S_GRID, 4, 3, (v) => (v - 1) >> 1, 4096, 3);
    }
  });
}

/**
 * The importance matrix, checked: present and one weight per column.
 *
 * @param what The type, for messages.
 * @param nPerRow Values per row.
 * @param imatrix The weights.
 * @returns The weights.
 * @throws {TypeError} Without weights.
 * @throws {RangeError} When the count differs from the row length.
 */
export function checkImatrix(
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

/**
 * The number of 256-value super-blocks, checked against whole rows.
 *
 * @param type The type.
 * @param x The values.
 * @param nPerRow Values per row.
 * @returns The super-block count.
 * @throws {RangeError} When the rows are not whole super-blocks.
 */
export function rowsOf(
  type: QuantTypeName,
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
