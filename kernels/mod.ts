/**
 * The CPU ops the layers run on, each with its one scalar reference (`…Ref`):
 * dense products ({@link linear} / {@link linearRef}), norms
 * ({@link rmsNorm} / {@link rmsNormRef}, {@link layerNorm}), softmax and its
 * sparse variants ({@link softmax} / {@link softmaxRef}, {@link sparsemax},
 * {@link entmax15}), activations ({@link applyActivation},
 * {@link siluMul} / {@link siluMulRef}), rotary embeddings
 * ({@link applyRope} / {@link applyRopeRef}), attention over a KV cache
 * ({@link attend} / {@link attendRef}) and k-means. The fast path runs the
 * WebAssembly kernels of `./kernels/fast` where a row is long enough and falls
 * back to the reference otherwise; layer plugins written outside this package
 * use these functions as the built-in layers do.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { softmax, softmaxRef } from "@modelhost/modelhost/kernels";
 * const x = Float32Array.from({ length: 32 }, (_, i) => Math.cos(i));
 * const fast = softmax(x, 1, 32);
 * const ref = softmaxRef(x, 1, 32);
 * for (let i = 0; i < 32; i++) assertAlmostEquals(fast[i], ref[i], 1e-6);
 * ```
 *
 * @module
 */

export * from "./activations.ts";
export * from "./add_norm.ts";
export * from "./attention.ts";
export * from "./gelu.ts";
export * from "./kmeans.ts";
export * from "./linear.ts";
export * from "./norms.ts";
export * from "./rope.ts";
export * from "./softmax.ts";
