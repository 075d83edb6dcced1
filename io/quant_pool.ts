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

/**
 * The GGUF writer's `encodeStored` hook: rows given as their stored bytes
 * (F32, F16 or BF16, `from`), widened by the workers themselves.
 */
export type StoredQuantEncoder = (
  type: DTypeName,
  from: DTypeName,
  bytes: Uint8Array,
  perRow: number,
) => Promise<Uint8Array>;

/** A pool of quantization workers. */
export interface QuantPool {
  /** Encodes rows across the workers (see {@link QuantEncoder}). */
  encode: QuantEncoder;
  /**
   * Encodes rows from their stored F32 / F16 / BF16 bytes across the
   * workers, each widening its own chunk (see {@link StoredQuantEncoder}):
   * the same bytes as {@link QuantPool.encode} of the widened values,
   * without a widened copy of the whole tensor on this thread.
   */
  encodeStored: StoredQuantEncoder;
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
    /** Stored type of `values` when it is bytes (`from` F32 / F16 / BF16). */
    from?: DTypeName;
  };
  /** The chunk's values (or stored bytes), copied when a worker takes it (so only the chunks in flight are copies). */
  values: () => Float32Array | Uint8Array;
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
  // rows cut into chunks of whole units (rows, or matrices), queued; the
  // encoded bytes placed at their rows' offsets
  const split = (
    type: DTypeName,
    rows: number,
    perRow: number,
    unit: number,
    chunk: (r0: number, r1: number) => Promise<Uint8Array>,
  ): Promise<Uint8Array> => {
    const info = dtypeInfo(type);
    const rowBytes = (perRow / info.blockSize) * info.blockBytes;
    const per = Math.max(1, Math.floor(chunkValues / (perRow * unit))) * unit;
    const out = new Uint8Array(rows * rowBytes);
    const parts: Promise<void>[] = [];
    for (let r0 = 0; r0 < rows; r0 += per) {
      const r1 = Math.min(rows, r0 + per);
      parts.push(chunk(r0, r1).then((b) => out.set(b, r0 * rowBytes)));
    }
    return Promise.all(parts).then(() => out);
  };
  return {
    encode(type, values, perRow, imatrix, rowsPerMatrix) {
      const rpm = rowsPerMatrix ?? values.length / perRow;
      return split(
        type,
        values.length / perRow,
        perRow,
        rowsPerMatrix ?? 1,
        (r0, r1) => {
          const m0 = Math.floor(r0 / rpm), m1 = Math.floor((r1 - 1) / rpm);
          return submit(
            {
              type,
              perRow,
              imatrix: imatrix?.slice(m0 * perRow, (m1 + 1) * perRow),
              rowsPerMatrix,
            },
            // a copy the worker owns (the caller's array stays usable)
            () => values.slice(r0 * perRow, r1 * perRow),
          );
        },
      );
    },
    encodeStored(type, from, bytes, perRow) {
      const size = dtypeInfo(from);
      if (size.kind !== "float" || size.blockSize !== 1) {
        return Promise.reject(
          new TypeError(
            `Cannot quantize rows stored as ${from} in the pool: only F32, F16 and BF16 are widened by the workers`,
          ),
        );
      }
      const rowBytes = perRow * size.blockBytes;
      return split(
        type,
        bytes.length / rowBytes,
        perRow,
        1,
        (r0, r1) =>
          submit(
            { type, perRow, from },
            () => bytes.slice(r0 * rowBytes, r1 * rowBytes),
          ),
      );
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
