/**
 * The format-neutral model: a {@link ModelFile} holds one or more
 * {@link Model}s, each with metadata, an optional network config and a lazy
 * {@link TensorIndex}.
 *
 * @module
 */

import type { DTypeName } from "./dtypes.ts";
import type { Tensor } from "./tensor.ts";

/** Where and how a tensor is stored, known without reading its bytes. */
export interface TensorInfo {
  /** Tensor name. */
  name: string;
  /** Element type. */
  dtype: DTypeName;
  /** Dimensions, outermost first (row-major, PyTorch order). */
  shape: number[];
  /** Byte length of the stored data. */
  byteLength: number;
  /** Offset of the data in its source, when the format has one. */
  byteOffset?: number;
}

/**
 * A lazy index of tensors: names, dtypes and shapes are known up front;
 * bytes are read on the first {@link TensorIndex.load}.
 */
export interface TensorIndex {
  /** Tensor names in the order the source lists them. */
  names(): string[];
  /** Whether a tensor of this name exists. */
  has(name: string): boolean;
  /** Facts about one tensor; throws `RangeError` naming known tensors when absent. */
  info(name: string): TensorInfo;
  /** Reads one tensor's bytes. */
  load(name: string): Promise<Tensor>;
}

/** One JSON layer definition inside a network config. */
export interface LayerConfig {
  /** The layer type a registered layer plugin answers to (`"dense"`). */
  type: string;
  /** Type-specific fields. */
  [field: string]: unknown;
}

/**
 * The JSON architecture of a network: a grid of cells, each with
 * `layers_per_cell` layers, executed row, then column, then layer.
 */
export interface NetworkConfig {
  /** Rows of the grid. @default {1} */
  grid_rows?: number;
  /** Columns of the grid. @default {1} */
  grid_cols?: number;
  /** Layers per cell. @default {layers.length} */
  layers_per_cell?: number;
  /** Size of one input row (features), when the first layer cannot infer it. */
  input_size?: number;
  /** The layers, row-major: row, then column, then layer. */
  layers: LayerConfig[];
  /** Other fields (id, dtype, seed, ...), kept as they are. */
  [field: string]: unknown;
}

/** One model: metadata, an optional architecture, and its tensors. */
export interface Model {
  /** Identifier (bundles hold several models, told apart by id). */
  id: string;
  /** The network architecture, when the file carries one. */
  config?: NetworkConfig;
  /** Free-form metadata (format-specific keys keep their names). */
  metadata: Record<string, unknown>;
  /** The tensors. */
  tensors: TensorIndex;
}

/** What a format plugin reads into and writes from. */
export interface ModelFile {
  /** Name of the format plugin that read it, when read from a file. */
  format?: string;
  /** The models (one for SafeTensors and GGUF, one or more for bundles). */
  models: Model[];
}

function missing(name: string, known: string[]): RangeError {
  const list = known.length > 20
    ? `${known.slice(0, 20).join(", ")}, …`
    : known.join(", ");
  return new RangeError(
    `No tensor named "${name}" (${known.length} tensors: ${list || "none"})`,
  );
}

/**
 * Builds a {@link TensorIndex} over tensors already in memory.
 *
 * @param tensors The tensors; names must be unique.
 * @returns The index.
 * @throws {TypeError} On a duplicate name.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const idx = memoryTensorIndex([tensorFromF32("w", new Float32Array(4), [2, 2])]);
 * assert(idx.info("w").byteLength === 16);
 * ```
 */
export function memoryTensorIndex(tensors: Iterable<Tensor>): TensorIndex {
  const map = new Map<string, Tensor>();
  for (const t of tensors) {
    if (map.has(t.name)) {
      throw new TypeError(`Duplicate tensor name "${t.name}"`);
    }
    map.set(t.name, t);
  }
  return {
    names: () => [...map.keys()],
    has: (name) => map.has(name),
    info(name) {
      const t = map.get(name);
      if (!t) throw missing(name, [...map.keys()]);
      return {
        name,
        dtype: t.dtype,
        shape: [...t.shape],
        byteLength: t.bytes.byteLength,
      };
    },
    load(name) {
      const t = map.get(name);
      if (!t) return Promise.reject(missing(name, [...map.keys()]));
      return Promise.resolve(t);
    },
  };
}

/**
 * Builds a lazy {@link TensorIndex} from infos and a loader that reads one
 * tensor's bytes on demand. Bytes are not cached: each `load` reads again,
 * so a caller that needs a tensor twice keeps it.
 *
 * @param infos The tensors' facts, in source order.
 * @param read Reads the bytes of one tensor.
 * @returns The index.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { lazyTensorIndex } from "@modelhost/modelhost/core";
 * const idx = lazyTensorIndex(
 *   [{ name: "b", dtype: "U8", shape: [2], byteLength: 2, byteOffset: 0 }],
 *   (info) => Promise.resolve(new Uint8Array(info.byteLength)),
 * );
 * const t = await idx.load("b");
 * assert(t.bytes.length === 2);
 * ```
 */
export function lazyTensorIndex(
  infos: readonly TensorInfo[],
  read: (info: TensorInfo) => Promise<Uint8Array>,
): TensorIndex {
  const map = new Map<string, TensorInfo>();
  for (const i of infos) {
    if (map.has(i.name)) {
      throw new TypeError(`Duplicate tensor name "${i.name}"`);
    }
    map.set(i.name, i);
  }
  return {
    names: () => [...map.keys()],
    has: (name) => map.has(name),
    info(name) {
      const i = map.get(name);
      if (!i) throw missing(name, [...map.keys()]);
      return { ...i, shape: [...i.shape] };
    },
    async load(name) {
      const i = map.get(name);
      if (!i) throw missing(name, [...map.keys()]);
      const bytes = await read(i);
      return { name, dtype: i.dtype, shape: [...i.shape], bytes };
    },
  };
}

/**
 * Reads every tensor of an index into memory.
 *
 * @param index The index.
 * @returns A map from name to tensor, in index order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { loadAllTensors, memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const all = await loadAllTensors(memoryTensorIndex([tensorFromF32("w", new Float32Array(2), [2])]));
 * assert(all.has("w"));
 * ```
 */
export async function loadAllTensors(
  index: TensorIndex,
): Promise<Map<string, Tensor>> {
  const out = new Map<string, Tensor>();
  for (const name of index.names()) out.set(name, await index.load(name));
  return out;
}
