/**
 * The two plugin contracts: {@link FormatPlugin} (reads and writes model
 * files) and {@link LayerPlugin} (parses, initializes and runs one layer
 * type). The registry holds both; the CLI is generated from them.
 *
 * @module
 */

import type { LayerConfig, ModelFile, NetworkConfig } from "./model.ts";
import type { ByteSource } from "./sources.ts";
import type { FloatTensor, Tensor } from "./tensor.ts";
import type { Rng } from "./rng.ts";

/** One option a plugin accepts; the CLI turns each into a flag. */
export interface OptionSpec {
  /** Option name in camelCase (`opsetVersion`); the CLI flag is kebab-case. */
  name: string;
  /** Value type. */
  type: "string" | "number" | "boolean";
  /** One line for help text. */
  description: string;
  /** Default value, shown in help. */
  default?: string | number | boolean;
  /** Allowed values, when the option is an enumeration. */
  choices?: readonly string[];
  /**
   * Which side takes the option: `"read"` for readers only, `"write"` for
   * writers only; absent when both do. `convert` lists only the options a
   * writer takes.
   */
  use?: "read" | "write";
}

/** Options every reader understands; plugins add their own fields. */
export interface ReadOptions {
  /**
   * Opens a file next to the one being read, by relative path (shards of a
   * checkpoint, a tokenizer beside a model). Absent when reading from memory.
   */
  resolve?: (relativePath: string) => Promise<ByteSource>;
  /** Plugin-specific options. */
  [option: string]: unknown;
}

/** Options passed to writers; each plugin documents its own fields. */
export interface WriteOptions {
  /** Plugin-specific options. */
  [option: string]: unknown;
}

/** What a writer produces: all bytes at once, or chunks streamed in order. */
export type WriteResult = Promise<Uint8Array> | AsyncIterable<Uint8Array>;

/** One output file of a multi-file write. */
export interface WrittenFile {
  /** File name, relative to the output's folder. */
  name: string;
  /** The bytes, or chunks streamed in order. */
  data: Uint8Array | AsyncIterable<Uint8Array>;
}

/** A format plugin: reads files into a {@link ModelFile} and/or writes them. */
export interface FormatPlugin {
  /** Discriminates plugin kinds in `registry.use`. */
  readonly kind: "format";
  /** Unique name (`"gguf"`); what lists, looks up and blames. */
  readonly name: string;
  /** One line for `formats` listings. */
  readonly description?: string;
  /** File extensions with the dot (`[".gguf"]`), lower case. */
  readonly extensions: readonly string[];
  /** Whether the first bytes of a file look like this format (magic bytes). */
  detect?(head: Uint8Array): boolean;
  /** Reads a file. */
  read?(src: ByteSource, options?: ReadOptions): Promise<ModelFile>;
  /**
   * Given the file names of a folder, the one file to read for a model stored
   * as a folder (`model.safetensors.index.json` for a sharded checkpoint), or
   * `undefined` when this format does not recognize the folder.
   */
  folderEntry?(fileNames: readonly string[]): string | undefined;
  /**
   * Checks a file against every structural rule of the format and its
   * checksums, returning every problem found (empty when valid).
   */
  validate?(src: ByteSource, options?: ReadOptions): Promise<string[]>;
  /** Writes a model file. */
  write?(file: ModelFile, options?: WriteOptions): WriteResult;
  /**
   * Writes a model as one or more files (shards and an index, a graph and
   * its external data). `options.baseName` is the output's file name
   * without its extension. When there is exactly one file it goes to the
   * requested path whatever its name; otherwise every file goes beside it.
   * Writers use this instead of `write` when present.
   */
  writeFiles?(
    file: ModelFile,
    options: WriteOptions & { baseName: string },
  ): Promise<WrittenFile[]>;
  /** Option specs for `read`/`write`, listed by `convert --help`. */
  readonly options?: readonly OptionSpec[];
}

/** Describes one parameter tensor a layer needs. */
export interface ParamSpec {
  /** Name relative to the layer's scope (`"weight"`, `"branches.0.bias"`). */
  name: string;
  /** Expected shape. */
  shape: number[];
  /** How `init` fills it when the plugin has no `init` of its own. */
  init?: "zeros" | "ones" | "normal" | "uniform";
  /** Whether the layer runs without it. */
  optional?: boolean;
}

/** Per-layer mutable state (a KV cache, a position counter). */
export interface LayerState {
  /** Whatever the layer keeps between calls, under keys it chooses. */
  [key: string]: unknown;
}

/**
 * What the layer's container knows about the call, beside the input: passed
 * as the third argument of {@link Layer.forward}.
 */
export interface ForwardContext {
  /**
   * The input of the layer that ran just before this one in execution order
   * (what a `residual` layer without sub-layers adds to its input).
   */
  previousInput?: FloatTensor;
  /**
   * Set when the input's rows belong to several independent sequences
   * (continuous batching): sequence i owns the next `sequences[i].rows`
   * rows, in order, and keeps its own state (the `state` argument is then
   * undefined). Layers that work row by row ignore it; layers that keep
   * per-sequence state (attention's KV cache) run each sequence's rows
   * against that sequence's state, so every row gets what it would get
   * in a call of its own.
   */
  sequences?: readonly SequenceRows[];
  /**
   * A key-padding mask for a `[batch, seq, …]` input of rows padded to one
   * length: `batch × seq` entries, row-major, 1 for a real token and 0 for
   * padding. Attention hides padded keys from every query (a query that
   * sees no key at all gets zeros); layers that work row by row ignore it.
   */
  attentionMask?: ArrayLike<number>;
}

/** One sequence's share of a batched call (see {@link ForwardContext.sequences}). */
export interface SequenceRows {
  /** How many consecutive rows of the input are this sequence's. */
  rows: number;
  /** This sequence's state for the layer. */
  state: LayerState;
}

/** A built layer, bound to its weights. */
export interface Layer {
  /**
   * Runs the layer. `x` has the feature dimension last; leading dimensions
   * are batch (and sequence, for sequence layers).
   */
  forward(
    x: FloatTensor,
    state?: LayerState,
    context?: ForwardContext,
  ): FloatTensor;
  /**
   * Optional: runs the layer as {@link Layer.forward} does (the same
   * values) with its output written into `scratch(length)`, a buffer that
   * a network reuses on the next call, or returns null where the layer
   * has no such path for this input (the network then calls `forward`).
   * A network calls it for a layer whose output goes only to the next
   * layer, when that next layer has this method too. A layer that has it
   * reads only `x` (no state, no previous input) and never returns `x`'s
   * values or a view of them as its output.
   *
   * @param x The input.
   * @param scratch Gives a buffer of the asked length, sharing no memory
   * with `x`; call it once, only when the output is written there.
   * @returns The output (its data what `scratch` gave), or null.
   */
  forwardInto?(
    x: FloatTensor,
    scratch: (length: number) => Float32Array,
  ): FloatTensor | null;
}

/**
 * Weight access scoped to one layer: names are relative
 * (`scope.at("branches.1").get("weight", [4, 8])` reads
 * `layers.5.branches.1.weight`). A missing tensor or a shape mismatch
 * throws `TypeError` naming the full path and both shapes.
 */
export interface Scope {
  /** The full prefix of this scope (`"layers.5"`), empty at the root. */
  readonly prefix: string;
  /** A child scope. */
  at(child: string): Scope;
  /** Whether a tensor exists under this scope. */
  has(name: string): boolean;
  /** The stored tensor, in its stored dtype; checks the shape when given. */
  get(name: string, shape?: number[]): Tensor;
  /** The tensor widened to F32; checks the shape when given. */
  getF32(name: string, shape?: number[]): Float32Array;
}

/** Passed to {@link LayerPlugin.parse}. */
export interface ParseContext {
  /** Where the layer sits, for messages: `layers[3]`, `layers[5].branches[1]`. */
  readonly path: string;
  /** Feature size of the input (the previous layer's output), when known. */
  readonly inputSize?: number;
  /**
   * Feature size of the input of the layer that runs just before this one
   * (what a `residual` layer without sub-layers adds), when known.
   */
  readonly previousInputSize?: number;
  /**
   * The output size the container needs from this layer (a mixture gate
   * must output one logit per expert), when it needs one. Layers whose
   * output size is a config field use it as the default.
   */
  readonly expectedOutputSize?: number;
  /** Parses a nested layer definition with the registry's plugins. */
  parseChild(
    json: unknown,
    path: string,
    inputSize?: number,
    options?: ChildParseOptions,
  ): ParsedLayer;
}

/** Extra facts a container passes when it parses a child layer. */
export interface ChildParseOptions {
  /** See {@link ParseContext.previousInputSize}. */
  previousInputSize?: number;
  /** See {@link ParseContext.expectedOutputSize}. */
  expectedOutputSize?: number;
}

/** A parsed layer: its plugin and its normalized config. */
export interface ParsedLayer<C = unknown> {
  /** The plugin that parsed it. */
  readonly plugin: LayerPlugin<C>;
  /** The normalized config (defaults filled, sizes inferred). */
  readonly cfg: C;
  /** Where the layer sits (`layers[5].branches[1]`), when parsed in a network. */
  readonly path?: string;
  /** Feature size of its input, when known. */
  readonly inputSize?: number;
  /** Feature size of its output, when known. */
  readonly outputSize?: number;
}

/**
 * A layer plugin: one layer type, from JSON config to a running layer.
 *
 * @typeParam C The normalized config type the plugin works with.
 */
export interface LayerPlugin<C = unknown> {
  /** Discriminates plugin kinds in `registry.use`. */
  readonly kind: "layer";
  /** The `type` string in configs (`"dense"`). */
  readonly type: string;
  /** Other names the type answers to (`["mha"]`). */
  readonly aliases?: readonly string[];
  /** One line for `layers` listings. */
  readonly description?: string;
  /** Validates JSON, fills defaults, infers sizes; throws `TypeError` naming `ctx.path` and the field. */
  parse(json: LayerConfig, ctx: ParseContext): C;
  /**
   * The feature size this layer expects when its config fixes it (a dense
   * layer's `input_size`); lets a network infer its own input size.
   */
  inputSize?(cfg: C): number | undefined;
  /** The feature size this layer outputs, when it is known from the config. */
  outputSize(cfg: C, inputSize?: number): number | undefined;
  /** The normalized config as JSON (what a saved network stores). */
  toJSON(cfg: C): LayerConfig;
  /** Parameter tensors, with names relative to the layer's scope. */
  params(cfg: C): ParamSpec[];
  /** Seeded, deterministic initial weights (names relative to the layer's scope). */
  init?(cfg: C, rng: Rng): Map<string, Float32Array>;
  /** Binds the config to weights. */
  build(cfg: C, weights: Scope): Layer;
  /**
   * Lowers the layer to ONNX operators: adds nodes to `g` that compute the
   * layer's output from the value named `input` and returns the output's
   * value name. A layer that cannot be lowered (or not at `g.opset`) throws
   * `g.refuse(...)`, a `TypeError` naming the layer path and type.
   */
  toOnnx?(
    g: OnnxBuilder,
    cfg: C,
    weights: Scope,
    input: string,
    context: OnnxLowerContext,
  ): string;
}

/** Any plugin the registry accepts. */
export type Plugin = FormatPlugin | LayerPlugin<unknown>;

/** A network built from a config by the registry's layer plugins. */
export interface NetworkLike {
  /** The normalized config. */
  readonly config: NetworkConfig;
  /** Runs the network on a batch. */
  forward(x: FloatTensor, state?: LayerState): FloatTensor;
}

/** Element types of ONNX constants a layer can create. */
export type OnnxConstantDType = "F32" | "F64" | "F16" | "I64" | "I32" | "BOOL";

/** A literal tensor: an ONNX `TENSOR` attribute value or a constant. */
export interface OnnxTensorLiteral {
  /** Element type. */
  readonly dtype: OnnxConstantDType;
  /** Dimensions (empty for a scalar). */
  readonly dims: readonly number[];
  /** Values, row-major (booleans as 0/1). */
  readonly values: ArrayLike<number>;
}

/**
 * An ONNX node attribute value. Plain numbers are `INT` (they must be
 * integers: ONNX tells ints from floats, so floats are written
 * `{ float: 0.5 }`); arrays of numbers are `INTS`.
 */
export type OnnxAttribute =
  | number
  | string
  | readonly number[]
  | { readonly float: number }
  | { readonly floats: readonly number[] }
  | { readonly tensor: OnnxTensorLiteral };

/** What a layer's container tells its lowering, beside the input. */
export interface OnnxLowerContext {
  /** Where the layer sits (`layers[3].branches[1]`), for names and messages. */
  readonly path: string;
  /**
   * The value holding the input of the layer that runs just before this one
   * (what a `residual` layer without sub-layers adds), when there is one.
   */
  readonly previousInput?: string;
}

/** Options of {@link OnnxBuilder.weight}. */
export interface OnnxWeightOptions {
  /** Expected shape (checked, as `Scope.get` does). */
  shape?: number[];
  /**
   * Store a matrix transposed (`[out, in]` → `[in, out]`, what `MatMul`
   * wants), so the graph needs no `Transpose` node.
   */
  transpose?: boolean;
}

/**
 * Builds an ONNX graph while layers lower themselves: it names values and
 * nodes, stores weights as initializers (in their stored dtype, with the
 * `Cast` / `DequantizeLinear` that turns them into F32), and lowers child
 * layers for containers. The exporter in `formats/onnx/export.ts` implements it;
 * layer plugins only see this interface.
 */
export interface OnnxBuilder {
  /** The opset version of the default domain being exported (13 to 23). */
  readonly opset: number;
  /**
   * The exporter's options, for layers that read their own
   * (`gumbelMaxRows`, `maxSequenceLength`).
   */
  readonly options: Readonly<Record<string, unknown>>;
  /**
   * Adds a node.
   *
   * @param opType The operator (`"MatMul"`).
   * @param inputs Input value names; `""` skips an optional input.
   * @param attributes Attributes by name.
   * @param outputs How many outputs to name. @default {1}
   * @returns The fresh output value names.
   */
  node(
    opType: string,
    inputs: readonly string[],
    attributes?: Readonly<Record<string, OnnxAttribute>>,
    outputs?: number,
  ): string[];
  /** Adds a one-output node and returns its output value name. */
  op(
    opType: string,
    inputs: readonly string[],
    attributes?: Readonly<Record<string, OnnxAttribute>>,
  ): string;
  /** Adds a constant initializer (deduplicated by content) and returns its name. */
  constant(
    dtype: OnnxConstantDType,
    dims: readonly number[],
    values: ArrayLike<number>,
  ): string;
  /**
   * A stored weight as an F32 value: the tensor becomes an initializer in
   * its stored dtype where ONNX holds it, followed by the nodes that widen it.
   */
  weight(weights: Scope, name: string, options?: OnnxWeightOptions): string;
  /**
   * A graph input shared by the layers that read it (attention's
   * `attention_mask`): declared on the first request, the same name after.
   */
  sharedInput?(
    name: string,
    elemType: number,
    dims: readonly (number | string)[],
  ): string;
  /** The ONNX element type of a value, when the builder knows it (1 = FLOAT, 7 = INT64). */
  elemType(value: string): number | undefined;
  /** Lowers a child layer (a container's sub-layer) on `input`; returns its output. */
  lower(
    layer: ParsedLayer,
    weights: Scope,
    input: string,
    context: OnnxLowerContext,
  ): string;
  /**
   * The error for a layer that cannot be lowered; throw what it returns.
   *
   * @param path The layer's path (`layers[2]`).
   * @param type The layer type.
   * @param reason Why, in a few words.
   */
  refuse(path: string, type: string, reason: string): TypeError;
}
