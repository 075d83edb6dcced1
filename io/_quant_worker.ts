// A worker of the quantization pool (io/quant_pool.ts): encodes the rows it
// is sent and sends the bytes back.

import type { DTypeName } from "../core/dtypes.ts";
import { decodeToF32, dtypeInfo } from "../core/dtypes.ts";
import { quantizeGguf } from "../core/quants/mod.ts";
import { quantizeWithImatrix } from "../core/quants/k_encode_imatrix.ts";

interface Job {
  id: number;
  type: DTypeName;
  /** Values, or stored bytes of type `from` (widened here). */
  values: Float32Array | Uint8Array;
  from?: DTypeName;
  perRow: number;
  imatrix?: Float32Array;
  rowsPerMatrix?: number;
}

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<Job>) => void) | null;
  postMessage(m: unknown, transfer?: Transferable[]): void;
};

scope.onmessage = (e) => {
  const j = e.data;
  try {
    const values = j.from
      ? decodeToF32(
        j.from,
        j.values as Uint8Array,
        j.values.length / dtypeInfo(j.from).blockBytes,
      )
      : j.values as Float32Array;
    const bytes = j.imatrix
      ? quantizeWithImatrix(
        j.type,
        values,
        j.perRow,
        j.imatrix,
        j.rowsPerMatrix,
      )
      : quantizeGguf(j.type, values);
    scope.postMessage({ id: j.id, bytes }, [bytes.buffer as ArrayBuffer]);
  } catch (err) {
    scope.postMessage({
      id: j.id,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  }
};
