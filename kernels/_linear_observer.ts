/**
 * Where the observer of `linear`'s inputs (`observeLinearInputs` in
 * kernels/linear.ts) is kept, so the other paths that run a layer's
 * product (kernels/_linear_into.ts) show it their inputs too.
 *
 * @module
 */

import type { Tensor } from "../core/tensor.ts";

/** Sees the input rows of a product with the weight they meet. */
export type LinearObserverFn = (
  w: Tensor,
  x: Float32Array,
  rows: number,
) => void;

let observer: LinearObserverFn | undefined;

/**
 * The installed observer, if any.
 *
 * @returns The observer, or undefined.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linearObserver } from "./_linear_observer.ts";
 * assert(linearObserver() === undefined); // none installed
 * ```
 */
export function linearObserver(): LinearObserverFn | undefined {
  return observer;
}

/**
 * Installs (or, with undefined, removes) the observer.
 *
 * @param fn The observer, or undefined.
 * @returns The observer installed before.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linearObserver, setLinearObserver } from "./_linear_observer.ts";
 * const fn = () => {};
 * const before = setLinearObserver(fn);
 * assert(linearObserver() === fn);
 * setLinearObserver(before);
 * ```
 */
export function setLinearObserver(
  fn: LinearObserverFn | undefined,
): LinearObserverFn | undefined {
  const prev = observer;
  observer = fn;
  return prev;
}
