/**
 * Fast CPU kernels in WebAssembly SIMD (relaxed-SIMD fused multiply-add
 * where the runtime has it), split across worker threads when configured,
 * each tested against the one scalar reference of its op:
 *
 * - {@link fastLinear} / {@link linearRef}: `y = x · Wᵀ + b` for weights
 *   `[out, in]` in F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K, kept in their
 *   stored dtype; {@link fastMatmulF32} on plain arrays.
 * - {@link fastSoftmax}, {@link fastRmsNorm}, {@link fastRope},
 *   {@link fastSwiglu}, whose references are {@link softmaxRef},
 *   {@link rmsNormRef}, {@link applyRopeRef} (with {@link ropeFrequencies}
 *   or a {@link ropeTable}) and {@link siluMulRef}, re-exported here from
 *   `kernels/`; `fastSoftmaxRef`, `fastRmsNormRef`, `fastRopeRef` and
 *   `fastSwigluRef` are deprecated aliases of them.
 * - {@link fastAttention} / {@link fastAttentionRef} over a
 *   {@link createKvCache} cache, prefill and decode (the reference is
 *   `attendRef` of `kernels/attention.ts` after the append).
 * - {@link configureKernels}, {@link kernelInfo}, {@link shutdownKernels}:
 *   threads and backend.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configureKernels, fastLinear, shutdownKernels } from "@modelhost/modelhost/kernels/fast";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * await configureKernels({ threads: 2 });
 * const w = tensorFromF32("w", new Float32Array([1, 2, 3, 4]), [2, 2]);
 * const y = fastLinear(new Float32Array([1, 1]), 1, w);
 * assert(y[0] === 3 && y[1] === 7);
 * await shutdownKernels();
 * ```
 *
 * @module
 */

export * from "./attention.ts";
export * from "./backend.ts";
export * from "./matmul.ts";
export * from "./ops.ts";
export {
  type ActivationBlocks,
  activationBlocksOf,
  BLOCKS as FAST_BLOCKS,
  dequantizeRowRef,
  FAST_DTYPES,
  type FastDType,
  halfToFloat,
  isFastDType,
  quantizeActivationsRef,
  type QuantizedActivations,
  quantizedDotRef,
  roundToF16,
  rowBytes,
} from "../quant_ref.ts";
export * from "./runtime.ts";
export { siluMulRef } from "../activations.ts";
export { rmsNormRef } from "../norms.ts";
export {
  type ApplyRopeOptions,
  applyRopeRef,
  ropeFrequencies,
  type RopeScaling,
  type RopeStyle,
  type RopeTable,
  ropeTable,
} from "../rope.ts";
export { softmaxRef } from "../softmax.ts";
