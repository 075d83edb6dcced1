/**
 * A modelhost format plugin for NumPy's `.npy` arrays and `.npz` archives,
 * written against the package's public exports only: an example of a
 * third-party plugin (see README.md).
 *
 * - Read and write every NumPy type modelhost has a dtype for: `<f2 <f4 <f8
 *   |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1`. Big-endian arrays are byte-swapped
 *   and Fortran-order arrays transposed when read; writing is always
 *   little-endian, C order, byte for byte what `np.save` writes.
 * - `.npz`: stored (`np.savez`) and deflated (`np.savez_compressed`)
 *   entries, inflated through the web `DecompressionStream`; written stored
 *   or deflated (`compress`). Zip64 archives are refused.
 * - Tensors with a dtype NumPy lacks (BF16, F8, F4, GGUF blocks) or with
 *   quantization params are written widened to `<f4` unless `strictDtypes`.
 *
 * ```sh
 * deno run -A jsr:@modelhost/modelhost/cli inspect weights.npz --plugin jsr:@example/modelhost-npy
 * ```
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createRegistry, memorySource, memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost";
 * import { collectBytes } from "@modelhost/modelhost/testing";
 * import plugins from "./mod.ts";
 *
 * const reg = createRegistry().use(plugins);
 * const npz = reg.formatForPath("weights.npz");
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array([1, 2]), [2])]);
 * const bytes = await collectBytes(npz.write!({ models: [{ id: "m", metadata: {}, tensors }] }));
 * const back = await npz.read!(memorySource(bytes, "w.npz"));
 * assert(back.models[0].tensors.names()[0] === "w");
 * ```
 *
 * @module
 */

import type { FormatPlugin, OptionSpec } from "@modelhost/modelhost";
import { NPY_MAGIC, readNpy, writeNpy } from "./npy.ts";
import { readNpz, writeNpz } from "./npz.ts";

export {
  dtypeFromDescr,
  encodeNpy,
  NPY_MAGIC,
  NPY_MAX_DIMS,
  NPY_MAX_HEADER_BYTES,
  npyDataOffset,
  type NpyHeader,
  type NpyReadOptions,
  npyWriteDefaults,
  type NpyWriteOptions,
  numpyDescr,
  parseNpyHeader,
  readNpy,
  toLittleEndianCOrder,
  writeNpy,
} from "./npy.ts";
export {
  npzWriteDefaults,
  type NpzWriteOptions,
  readNpz,
  writeNpz,
} from "./npz.ts";

const STRICT: OptionSpec = {
  name: "strictDtypes",
  type: "boolean",
  description:
    "refuse dtypes NumPy lacks (BF16, F8, F4, quantized) instead of widening them to float32",
  default: false,
};

/**
 * Whether bytes start like a `.npy` file.
 *
 * @param head The first bytes of a file.
 * @returns Whether they begin with `\x93NUMPY`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectNpy } from "./mod.ts";
 * assert(detectNpy(Uint8Array.of(0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0)));
 * ```
 */
export function detectNpy(head: Uint8Array): boolean {
  return NPY_MAGIC.every((b, i) => head[i] === b);
}

/**
 * Whether bytes start like a `.npz` archive: a ZIP local header whose
 * entry name ends with `.npy` (so other ZIP files, like PyTorch's, are
 * not claimed). An archive with no entries is recognized by extension only.
 *
 * @param head The first bytes of a file (64 are plenty for names up to 34 bytes).
 * @returns Whether the first entry is a `.npy` file.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectNpz } from "./mod.ts";
 * assert(!detectNpz(new TextEncoder().encode("PK\x03\x04")));
 * ```
 */
export function detectNpz(head: Uint8Array): boolean {
  if (
    head.byteLength < 30 || head[0] !== 0x50 || head[1] !== 0x4b ||
    head[2] !== 3 || head[3] !== 4
  ) {
    return false;
  }
  const n = head[26] | (head[27] << 8);
  if (n < 4 || 30 + n > head.byteLength) return false;
  const tail = head.subarray(30 + n - 4, 30 + n);
  return tail[0] === 0x2e && tail[1] === 0x6e && tail[2] === 0x70 &&
    tail[3] === 0x79;
}

/**
 * The `.npy` format plugin: one array per file, read as a model with one
 * tensor (named by the `tensorName` read option, default `arr_0`); writes a
 * model holding exactly one tensor.
 *
 * @returns The plugin, named `"npy"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { npyFormat } from "./mod.ts";
 * assert(npyFormat().extensions[0] === ".npy");
 * ```
 */
export function npyFormat(): FormatPlugin {
  return {
    kind: "format",
    name: "npy",
    description:
      "NumPy .npy array (one tensor; every numeric dtype, either byte order, Fortran order)",
    extensions: [".npy"],
    detect: detectNpy,
    read: (src, options) =>
      readNpy(src, { tensorName: options?.tensorName as string | undefined }),
    write: (file, options) =>
      writeNpy(file, { strictDtypes: options?.strictDtypes === true }),
    options: [STRICT],
  };
}

/**
 * The `.npz` format plugin: a ZIP archive of `.npy` arrays, one tensor each.
 *
 * @returns The plugin, named `"npz"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { npzFormat } from "./mod.ts";
 * assert(npzFormat().options?.some((o) => o.name === "compress"));
 * ```
 */
export function npzFormat(): FormatPlugin {
  return {
    kind: "format",
    name: "npz",
    description:
      "NumPy .npz archive of arrays (stored or deflated; zip64 refused)",
    extensions: [".npz"],
    detect: detectNpz,
    read: (src) => readNpz(src),
    write: (file, options) =>
      writeNpz(file, {
        compress: options?.compress === true,
        strictDtypes: options?.strictDtypes === true,
      }),
    options: [{
      name: "compress",
      type: "boolean",
      description: "deflate each array, as np.savez_compressed does",
      default: false,
    }, STRICT],
  };
}

/**
 * The `.npy` plugin factory under its old name.
 *
 * @deprecated Use {@link npyFormat}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { npy, npyFormat } from "./mod.ts";
 * assert(npy === npyFormat);
 * ```
 */
export const npy: typeof npyFormat = npyFormat;

/**
 * The `.npz` plugin factory under its old name.
 *
 * @deprecated Use {@link npzFormat}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { npz, npzFormat } from "./mod.ts";
 * assert(npz === npzFormat);
 * ```
 */
export const npz: typeof npzFormat = npzFormat;

/** Both plugins, for `registry.use(...)` and the CLI's `--plugin`. */
const plugins: FormatPlugin[] = [npyFormat(), npzFormat()];
export default plugins;
