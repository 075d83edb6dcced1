/**
 * Quantization across worker threads: a tensor's rows are cut into chunks
 * of about a million values (whole rows; whole matrices for expert
 * tensors), queued, and taken by whichever worker is free (a chunk is
 * copied for its worker only then, so besides the tensors the writer holds
 * only the chunks in flight take memory), each encoded by
 * the same encoders as on the main thread; the bytes are placed at their
 * rows' offsets, so the file is the same byte for byte. The queue spans
 * tensors: while one tensor's last chunks run, the next tensor's are
 * already waiting, so no worker waits for a tensor boundary. Used by
 * `quantize -t N` / `convert --quantize … -t N` through the GGUF writer's
 * `encode` option.
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

/** Options of {@link createQuantPool}. */
export interface QuantPoolOptions {
  /**
   * Values per queued chunk (rounded to whole rows, or whole matrices for
   * expert tensors; at least one). Smaller chunks balance better, larger
   * ones cost fewer messages.
   * @default {1048576}
   */
  chunkValues?: number;
}

interface Reply {
  id: number;
  bytes?: Uint8Array;
  error?: string;
}

interface Job {
  msg: {
    type: DTypeName;
    perRow: number;
    imatrix?: Float32Array;
    rowsPerMatrix?: number;
  };
  /** The chunk's values, copied when a worker takes it (so only the chunks in flight are copies). */
  values: () => Float32Array;
  done: (r: Reply) => void;
}

/**
 * Starts `threads` module workers that quantize row chunks from one queue.
 *
 * @param threads Workers (at least 1).
 * @param options Chunk size.
 * @returns The pool; call `close()` when done.
 * @throws {RangeError} When `threads` or `chunkValues` is not a positive integer.
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
export function createQuantPool(
  threads: number,
  options: QuantPoolOptions = {},
): QuantPool {
  if (!Number.isInteger(threads) || threads < 1) {
    throw new RangeError(`Cannot start ${threads} quantization workers`);
  }
  const chunkValues = options.chunkValues ?? 1 << 20;
  if (!Number.isInteger(chunkValues) || chunkValues < 1) {
    throw new RangeError(
      `Cannot cut quantization work into chunks of ${chunkValues} values`,
    );
  }
  const url = new URL("./_quant_worker.ts", import.meta.url).href;
  const workers = Array.from(
    { length: threads },
    () => new Worker(url, { type: "module" }),
  );
  const queue: Job[] = [];
  const busy = new Map<Worker, Job>();
  let closed = false;
  const feed = (w: Worker) => {
    const job = queue.shift();
    if (!job) return;
    busy.set(w, job);
    const values = job.values();
    const transfer = [values.buffer as ArrayBuffer];
    if (job.msg.imatrix) transfer.push(job.msg.imatrix.buffer as ArrayBuffer);
    w.postMessage({ id: 0, ...job.msg, values }, transfer);
  };
  for (const w of workers) {
    w.onmessage = (e: MessageEvent<Reply>) => {
      const job = busy.get(w);
      busy.delete(w);
      feed(w);
      job?.done(e.data);
    };
  }
  const submit = (
    msg: Job["msg"],
    values: Job["values"],
  ): Promise<Uint8Array> =>
    new Promise((resolve, reject) => {
      if (closed) {
        reject(new Error("the quantization pool was closed"));
        return;
      }
      queue.push({
        msg,
        values,
        done: (r) =>
          r.error !== undefined
            ? reject(new Error(r.error))
            : resolve(r.bytes!),
      });
      for (const w of workers) {
        if (!busy.has(w)) feed(w);
      }
    });
  return {
    encode(type, values, perRow, imatrix, rowsPerMatrix) {
      const rows = values.length / perRow;
      const info = dtypeInfo(type);
      const rowBytes = (perRow / info.blockSize) * info.blockBytes;
      // chunks of whole matrices for expert tensors, of rows otherwise
      const unit = rowsPerMatrix ?? 1;
      const per = Math.max(1, Math.floor(chunkValues / (perRow * unit))) *
        unit;
      const rpm = rowsPerMatrix ?? rows;
      const out = new Uint8Array(rows * rowBytes);
      const parts: Promise<void>[] = [];
      for (let r0 = 0; r0 < rows; r0 += per) {
        const r1 = Math.min(rows, r0 + per);
        const m0 = Math.floor(r0 / rpm), m1 = Math.floor((r1 - 1) / rpm);
        parts.push(
          submit(
            {
              type,
              perRow,
              imatrix: imatrix?.slice(m0 * perRow, (m1 + 1) * perRow),
              rowsPerMatrix,
            },
            // a copy the worker owns (the caller's array stays usable)
            () => values.slice(r0 * perRow, r1 * perRow),
          ).then((b) => out.set(b, r0 * rowBytes)),
        );
      }
      return Promise.all(parts).then(() => out);
    },
    close() {
      closed = true;
      for (const w of workers) w.terminate();
      const jobs = [...busy.values(), ...queue.splice(0)];
      busy.clear();
      for (const j of jobs) {
        j.done({ id: -1, error: "the quantization pool was closed" });
      }
    },
  };
}
