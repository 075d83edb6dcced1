/**
 * Transposed copies of F32 weights for the system BLAS backend (io/blas.ts).
 *
 * `cblas_sgemm` packs its operands into blocks on every call. For
 * `y = x · Wᵀ` with W stored `out × in` (the layout of every weight here),
 * W's packing reads it across rows; stored `in × out` it reads it along
 * rows, and OpenBLAS 0.3.21 runs a batch-64 1024 → 4096 product 15% faster
 * (one thread, AMD EPYC Zen 4: 87 against 75 GFLOP/s). With thousands of
 * rows the packing is a small share of the work and the layout makes no
 * difference, so only calls with few rows use a copy. ONNX Runtime does
 * the same kind of thing: it packs constant weights once per session.
 *
 * @module
 */

/** A byte budget shared by a backend's weight copies (transposed, packed). */
export interface CopyBudget {
  /** Bytes held now. */
  bytes: number;
  /** Most bytes. */
  readonly limit: number;
}

/**
 * Copies made from weights, each kept while its weight's buffer lives
 * (keyed weakly by the buffer, then by byte offset and shape), within a
 * byte budget: the transposed copies here and the packed ones
 * (io/_blas_packed.ts) each keep one, over one shared budget.
 */
export class WeightCopies<T> {
  #copies = new WeakMap<
    ArrayBufferLike,
    Map<string, { copy: T; bytes: number }>
  >();
  /** The budget the copies count against. */
  readonly budget: CopyBudget;

  /** @param budget The budget, shared or this cache's own. */
  constructor(budget: CopyBudget) {
    this.budget = budget;
  }

  /**
   * The copy of W (`outF × inF`), made by `make` on first use; null when
   * `bytes` more would pass the budget.
   */
  get(
    w: Float32Array,
    outF: number,
    inF: number,
    bytes: number,
    make: () => T,
  ): T | null {
    let byKey = this.#copies.get(w.buffer);
    const key = `${w.byteOffset}:${outF}:${inF}`;
    const have = byKey?.get(key);
    if (have) return have.copy;
    if (this.budget.bytes + bytes > this.budget.limit) return null;
    const copy = make();
    if (!byKey) this.#copies.set(w.buffer, byKey = new Map());
    byKey.set(key, { copy, bytes });
    this.budget.bytes += bytes;
    return copy;
  }

  /** Drops the copies made from `w`'s buffer at its offset. */
  forget(w: Float32Array): void {
    const byKey = this.#copies.get(w.buffer);
    if (!byKey) return;
    const prefix = `${w.byteOffset}:`;
    for (const [k, c] of byKey) {
      if (k.startsWith(prefix)) {
        byKey.delete(k);
        this.budget.bytes -= c.bytes;
      }
    }
  }
}

/**
 * `src` (`rows × cols`, row-major) transposed into `dst` (`cols × rows`),
 * in 32 × 32 tiles so both sides stay in cache.
 *
 * @param src The source matrix.
 * @param rows Its rows.
 * @param cols Its columns.
 * @param dst The output, `cols × rows`.
 */
export function transposeF32(
  src: Float32Array,
  rows: number,
  cols: number,
  dst: Float32Array,
): void {
  const T = 32;
  for (let r0 = 0; r0 < rows; r0 += T) {
    const r1 = Math.min(rows, r0 + T);
    for (let c0 = 0; c0 < cols; c0 += T) {
      const c1 = Math.min(cols, c0 + T);
      for (let r = r0; r < r1; r++) {
        const s = r * cols;
        for (let c = c0; c < c1; c++) dst[c * rows + r] = src[s + c];
      }
    }
  }
}

/**
 * The transposed copies of a backend, each kept while its weight's buffer
 * lives (keyed weakly by the buffer), within a byte budget: past it, calls
 * use the weight as stored.
 */
export class TransposedWeights {
  #copies: WeightCopies<Float32Array>;

  /**
   * @param budget Most bytes of copies to make, or a budget shared with
   * the packed weights (io/_blas_packed.ts).
   */
  constructor(budget: number | CopyBudget) {
    this.#copies = new WeightCopies(
      typeof budget === "number" ? { bytes: 0, limit: budget } : budget,
    );
  }

  /** Bytes held by copies made so far (not lowered when a buffer is collected). */
  get bytes(): number {
    return this.#copies.budget.bytes;
  }

  /**
   * W (`outF × inF`) as `inF × outF`, made on first use; null when the
   * budget has no room for it.
   */
  get(w: Float32Array, outF: number, inF: number): Float32Array | null {
    return this.#copies.get(w, outF, inF, outF * inF * 4, () => {
      const t = new Float32Array(outF * inF);
      transposeF32(w, outF, inF, t);
      return t;
    });
  }

  /** Drops the copies made from `w`'s buffer at its offset. */
  forget(w: Float32Array): void {
    this.#copies.forget(w);
  }
}
