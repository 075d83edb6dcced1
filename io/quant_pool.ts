/**
 * Quantization across worker threads: a tensor's rows are cut into one
 * slice per worker, each encoded by the same encoders as on the main
 * thread, and the bytes joined in order, so the file is the same byte for
 * byte. Used by `quantize -t N` / `convert --quantize … -t N` through the
 * GGUF writer's `encode` option.
 *
 * @module
 */

import type { DTypeName } from "../core/dtypes.ts";
import { dtypeInfo } from "../core/dtypes.ts";

/** The GGUF writer's `encode` hook, as a pool provides it. */
export type QuantEncoder = (
  type: DTypeName,
  values: Float32Array,
  perRow: number,
  imatrix?: Float32Array,
  rowsPerMatrix?: number,
) => Promise<Uint8Array>;

/** A pool of quantization workers. */
export interface QuantPool {
  /** Encodes rows across the workers (see {@link QuantEncoder}). */
  encode: QuantEncoder;
  /** Stops the workers. */
  close(): void;
}

interface Reply {
  id: number;
  bytes?: Uint8Array;
  error?: string;
}

/**
 * Starts `threads` module workers that quantize row slices.
 *
 * @param threads Workers (at least 1).
 * @returns The pool; call `close()` when done.
 * @throws {RangeError} When `threads` is not a positive integer.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { createQuantPool } from "@modelhost/modelhost/io";
 * import { quantizeGguf } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 4 * 256 }, (_, i) => Math.sin(i));
 * const pool = createQuantPool(2);
 * try {
 *   assertEquals(await pool.encode("Q4_K", x, 256), quantizeGguf("Q4_K", x));
 * } finally {
 *   pool.close();
 * }
 * ```
 */
export function createQuantPool(threads: number): QuantPool {
  if (!Number.isInteger(threads) || threads < 1) {
    throw new RangeError(`Cannot start ${threads} quantization workers`);
  }
  const url = new URL("./_quant_worker.ts", import.meta.url).href;
  const workers = Array.from(
    { length: threads },
    () => new Worker(url, { type: "module" }),
  );
  let next = 0;
  const waiting = new Map<number, (r: Reply) => void>();
  for (const w of workers) {
    w.onmessage = (e: MessageEvent<Reply>) => {
      const done = waiting.get(e.data.id);
      waiting.delete(e.data.id);
      done?.(e.data);
    };
  }
  const run = (w: Worker, job: Record<string, unknown>): Promise<Uint8Array> =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(
        id,
        (r) =>
          r.error !== undefined
            ? reject(new Error(r.error))
            : resolve(r.bytes!),
      );
      w.postMessage({ id, ...job }, [
        (job.values as Float32Array).buffer as ArrayBuffer,
      ]);
    });
  return {
    async encode(type, values, perRow, imatrix, rowsPerMatrix) {
      const rows = values.length / perRow;
      const info = dtypeInfo(type);
      const rowBytes = (perRow / info.blockSize) * info.blockBytes;
      // slices of whole matrices for expert tensors, of rows otherwise
      const unit = rowsPerMatrix ?? 1;
      const per = Math.ceil(rows / unit / workers.length) * unit;
      const rpm = rowsPerMatrix ?? rows;
      const jobs: Promise<Uint8Array>[] = [];
      for (let k = 0, r0 = 0; r0 < rows; k++, r0 += per) {
        const r1 = Math.min(rows, r0 + per);
        const m0 = Math.floor(r0 / rpm), m1 = Math.floor((r1 - 1) / rpm);
        jobs.push(run(workers[k], {
          type,
          values: values.slice(r0 * perRow, r1 * perRow),
          perRow,
          imatrix: imatrix?.slice(m0 * perRow, (m1 + 1) * perRow),
          rowsPerMatrix,
        }));
      }
      const parts = await Promise.all(jobs);
      const out = new Uint8Array(rows * rowBytes);
      let o = 0;
      for (const p of parts) {
        out.set(p, o);
        o += p.length;
      }
      return out;
    },
    close() {
      for (const w of workers) w.terminate();
      for (const done of waiting.values()) {
        done({ id: -1, error: "the quantization pool was closed" });
      }
      waiting.clear();
    },
  };
}
