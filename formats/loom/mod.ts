/**
 * Reading models saved by Loom (github.com/openfluke/loom), the Go framework
 * the bundle format comes from. A Loom bundle has the same envelope as ours
 * (`{"type": "modelhost/bundle", "version": 1 | 2, "models": [...]}`), but
 * each model's `weights` is `{"fmt": ..., "data": base64}`:
 *
 * - `jsonModelB64`: base64 of JSON `{"type", "dtype", "layers": [...]}`, one
 *   entry per grid slot with plain float arrays (`kernel`, `biases`,
 *   `q_weights`, `gamma`, `branch_weights` for nested layers, ...).
 * - `multiPrecisionB64`: base64 of JSON `{"dtype", "scale", "layers"}`, each
 *   array itself base64 of little-endian values in that dtype, decoded with
 *   Loom's own formulas (`int8` is `code / scale`, `uint8` is
 *   `code / 127.5 − 1`, its `float4` is a 16-level linear code, ...).
 *
 * Conversion turns Loom's config fields (`input_height` / `output_height`,
 * `norm_size`, `softmax_variant`, `branches`, ...) into ours, transposes its
 * `[in][out]` matrices to our `[out, in]`, renames weights to the names of
 * CONVENTIONS (`kernel` → `weight`, `q_weights` → `q_proj.weight`, ...) and
 * maps activation names to functions that compute what the name says (see
 * {@link LOOM_ACTIVATIONS}); where Loom's own code computes something else
 * (its `relu` is `max(0, 1.1·x)`), the README says so.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { convertLoomConfig } from "@modelhost/modelhost/formats/loom";
 * const cfg = convertLoomConfig({
 *   grid_rows: 1, grid_cols: 1, layers_per_cell: 1,
 *   layers: [{ type: "dense", activation: "leaky_relu", input_height: 8, output_height: 4 }],
 * });
 * assert(cfg.layers[0].negative_slope === 0.1 && cfg.input_size === 8);
 * ```
 *
 * @module
 */
export {
  convertLoomConfig,
  LOOM_ACTIVATIONS,
  type LoomReadOptions,
} from "./config.ts";
export { LOOM_WEIGHT_FORMATS, readLoomModel } from "./read.ts";
