/**
 * Mixture-of-experts tensors between GGUF, where llama.cpp stacks a block's
 * experts in one 3-D tensor (`blk.{n}.ffn_{gate,up,down}_exps.weight`,
 * shape `[experts, rows, cols]`), and the per-expert matrices of Hugging
 * Face checkpoints and of the network (`mlp.branches.{j}.…`). A stacked
 * tensor splits into views of its bytes (each expert's rows are whole
 * blocks, so quantized experts stay in their block type and go through the
 * fast kernels); stacking copies the experts' bytes one after another.
 *
 * @module
 */

import { dtypeInfo } from "../../core/dtypes.ts";
import type { Tensor } from "../../core/tensor.ts";
import type { TensorRole } from "../names.ts";

const STACKED = /^blk\.(\d+)\.ffn_(gate|up|down)_exps\.weight$/;

/** The block and role of a stacked GGUF expert tensor, or undefined. */
export function parseStackedExperts(
  name: string,
): { layer: number; role: TensorRole } | undefined {
  const m = name.match(STACKED);
  if (!m) return undefined;
  return {
    layer: Number(m[1]),
    role: m[2] === "gate" ? "mlp_gate" : m[2] === "up" ? "mlp_up" : "mlp_down",
  };
}

/** The GGUF name of a block's stacked experts for a role. */
export function stackedExpertsName(layer: number, role: TensorRole): string {
  const part = role === "mlp_gate" ? "gate" : role === "mlp_up" ? "up" : "down";
  return `blk.${layer}.ffn_${part}_exps.weight`;
}

/**
 * Splits a stacked `[experts, rows, cols]` tensor into one `[rows, cols]`
 * view per expert.
 *
 * @throws {RangeError} When the shape is not 3-D or the bytes do not split
 * evenly (the message names the tensor and the numbers).
 */
export function splitExperts(t: Tensor): Tensor[] {
  if (t.shape.length !== 3 || t.quant) {
    throw new RangeError(
      `Cannot split "${t.name}" into experts: expected a [experts, rows, cols] tensor without extra quantization, got shape [${
        t.shape.join(", ")
      }]`,
    );
  }
  const [e, rows, cols] = t.shape;
  const info = dtypeInfo(t.dtype);
  if (cols % info.blockSize !== 0) {
    throw new RangeError(
      `Cannot split "${t.name}": rows of ${cols} values are not whole ${t.dtype} blocks of ${info.blockSize}`,
    );
  }
  const per = rows * (cols / info.blockSize) * info.blockBytes;
  if (per * e !== t.bytes.byteLength) {
    throw new RangeError(
      `Cannot split "${t.name}": ${e} experts × ${per} bytes, the tensor has ${t.bytes.byteLength}`,
    );
  }
  return Array.from({ length: e }, (_, j) => ({
    name: `${t.name}#${j}`,
    dtype: t.dtype,
    shape: [rows, cols],
    bytes: t.bytes.subarray(j * per, (j + 1) * per),
  }));
}

/**
 * Stacks per-expert `[rows, cols]` tensors of one dtype into a
 * `[experts, rows, cols]` tensor.
 *
 * @throws {TypeError} When the experts differ in dtype or shape.
 */
export function stackExperts(name: string, experts: Tensor[]): Tensor {
  const first = experts[0];
  for (const [j, t] of experts.entries()) {
    if (
      t.dtype !== first.dtype || t.shape.join() !== first.shape.join() ||
      t.quant
    ) {
      throw new TypeError(
        `Cannot stack experts into "${name}": expert ${j} is ${t.dtype} [${
          t.shape.join(", ")
        }], expert 0 is ${first.dtype} [${first.shape.join(", ")}]`,
      );
    }
  }
  const per = first.bytes.byteLength;
  const bytes = new Uint8Array(per * experts.length);
  experts.forEach((t, j) => bytes.set(t.bytes, j * per));
  return {
    name,
    dtype: first.dtype,
    shape: [experts.length, ...first.shape],
    bytes,
  };
}
