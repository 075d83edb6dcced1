/**
 * The format-neutral core: dtypes, tensors, models, byte sources, plugin
 * contracts, seeded randomness and errors. No Deno API is used here, so these
 * modules run in browsers too.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dtypeInfo, toFloat32 } from "@modelhost/modelhost/core";
 * const t = { name: "x", dtype: "U8" as const, shape: [2], bytes: new Uint8Array([3, 4]) };
 * assert(toFloat32(t)[1] === 4 && dtypeInfo("U8").blockBytes === 1);
 * ```
 *
 * @module
 */

export * from "./dtypes.ts";
export * from "./errors.ts";
export * from "./model.ts";
export * from "./network.ts";
export * from "./plugin.ts";
export * from "./quantize.ts";
export * from "./rng.ts";
export * from "./scope.ts";
export * from "./sources.ts";
export * from "./tensor.ts";
