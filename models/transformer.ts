/**
 * A Llama-family model ready to run: a network of registered layers
 * (`embedding → N × transformer_block → rms_norm → dense`) bound to the
 * checkpoint's tensors in their stored dtypes, its tokenizer and its
 * generation defaults.
 *
 * - {@link transformerFromFiles}: a Hugging Face checkpoint already opened
 *   (the SafeTensors ModelFile plus the parsed `config.json`,
 *   `tokenizer.json`, `tokenizer_config.json`, `generation_config.json`).
 * - {@link transformerFromGguf}: a GGUF ModelFile (`llama` or `qwen2`).
 * - {@link buildTransformer}: hyperparameters plus tensors under network
 *   names.
 *
 * Nothing here touches the file system: `io/transformer.ts` opens folders
 * and files in Deno; in a browser, open the files with the SafeTensors or
 * GGUF readers and call these.
 *
 * Weights keep their stored dtype (F32, F16, BF16, Q8_0, Q4_0 ...): the
 * projections and the lm_head go through `linear()`, and the embedding
 * widens only the rows it looks up. A tied lm_head shares the embedding's
 * bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const reg = createRegistry().use(LAYER_PLUGINS);
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 2, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(reg, transformerNetwork(cfg), 1));
 * const state = model.createState();
 * const logits = model.forward([1, 5, 7], state); // last position only
 * assert(logits.length === 16 && state.tokens.length === 3);
 * ```
 *
 * @module
 */

import type { ModelFile, TensorIndex } from "../core/model.ts";
import {
  buildNetwork,
  checkNetworkTensors,
  type LayerLookup,
  type Network,
  type NetworkState,
} from "../core/network.ts";
import {
  type FloatTensor,
  floatTensor,
  type Tensor,
  toFloat32,
} from "../core/tensor.ts";
import { isFastDType } from "../kernels/quant_ref.ts";
import {
  allocateKernelBytes,
  kernelCopyBytes,
} from "../kernels/fast/runtime.ts";
import { LAYER_PLUGINS } from "../layers/mod.ts";
import { createRegistry } from "../registry.ts";
import type {
  GenerationConfigJson,
  TokenizerConfigJson,
  TokenizerJson,
} from "../tokenizers/hf.ts";
import { createTokenizer } from "../tokenizers/mod.ts";
import type { Tokenizer } from "../tokenizers/tokenizer.ts";
import {
  configFromHf,
  type HfConfigJson,
  type TransformerConfig,
  transformerNetwork,
} from "./config.ts";
import {
  ggufExtraValues,
  loadGgufTensors,
  loadHfTensors,
} from "./families/mod.ts";
import { configFromGguf } from "./gguf_config.ts";
import { splitExperts } from "./families/_experts.ts";
import { familyRename, planTensors } from "./_tensor_plan.ts";
import { checkTransformerTensors, tensorCheckProblems } from "./check.ts";
import { tensorName, type TensorRole } from "./names.ts";

/** Per-sequence state: the layers' KV caches and the tokens seen so far. */
export interface TransformerState extends NetworkState {
  /** Every token id fed so far, in order (their count is the next position). */
  tokens: number[];
}

/** Sampling defaults a checkpoint ships (`generation_config.json`). */
export interface GenerationDefaults {
  /** Sample (true) or take the most likely token (false). */
  doSample?: boolean;
  /** Softmax temperature. */
  temperature?: number;
  /** Keep the k most likely tokens. */
  topK?: number;
  /** Keep the most likely tokens up to this probability mass. */
  topP?: number;
  /** Penalty for tokens already seen. */
  repetitionPenalty?: number;
}

/** What {@link Transformer.memory} reports. */
export interface TransformerMemory {
  /** Number of weights (a tied matrix counted once). */
  parameters: number;
  /** Bytes of the stored weights held (a tied matrix counted once). */
  weightBytes: number;
  /** `8 · weightBytes / parameters`. */
  bitsPerWeight: number;
  /**
   * Bytes of the copies the fast kernels keep of these weights in their
   * own memory, made on first use: F32/F16/BF16 matrices packed into
   * panels, and quantized blocks that were not loaded into kernel memory.
   * The loaders place Q8_0, Q4_0, Q4_K and Q6_K weights in kernel memory,
   * where they are used in place (0 here).
   */
  kernelCopyBytes: number;
  /** `8 · (weightBytes + kernelCopyBytes) / parameters`: what the process holds per weight. */
  totalBitsPerWeight: number;
  /** The same, per stored dtype. */
  byDtype: Record<
    string,
    { tensors: number; parameters: number; bytes: number }
  >;
}

/** Options of {@link Transformer.forward}. */
export interface ForwardOptions {
  /** Logits at every position (`T × vocab`) instead of the last one only. @default {false} */
  allPositions?: boolean;
  /**
   * What to return: `"logits"`, or `"hidden"`, the last hidden states
   * (after the final norm, before the lm_head; `d` values per position),
   * what decoder-model embeddings pool. @default {"logits"}
   */
  output?: "logits" | "hidden";
}

/** One sequence's part of {@link Transformer.forwardBatch}. */
export interface BatchItem {
  /** Token ids to feed (at least one). */
  ids: ArrayLike<number>;
  /** The sequence's state; the ids are appended to its caches. */
  state: TransformerState;
}

/** A Llama-family model bound to its weights. */
export interface Transformer {
  /** The hyperparameters. */
  readonly config: TransformerConfig;
  /** The network of registered layers. */
  readonly network: Network;
  /** The weights by network name (`layers.0.weight` …), in stored dtypes. */
  readonly tensors: ReadonlyMap<string, Tensor>;
  /** The tokenizer, when the checkpoint has one. */
  readonly tokenizer: Tokenizer | undefined;
  /** Sampling defaults from the checkpoint. */
  readonly generationDefaults: GenerationDefaults;
  /** A display name (GGUF `general.name`, or what the loader was told). */
  readonly name: string;
  /** A fresh, empty state (KV caches, token history). */
  createState(): TransformerState;
  /**
   * Feeds tokens, appending them to the state's caches, and returns
   * logits. All tokens go through the network in one batch (prefill).
   *
   * @param ids Token ids.
   * @param state The sequence state; without one, the call starts at position 0 and keeps nothing.
   * @param options Which positions to return logits for.
   * @returns `vocab` logits of the last position, or `T × vocab` with `allPositions`.
   */
  forward(
    ids: ArrayLike<number>,
    state?: TransformerState,
    options?: ForwardOptions,
  ): Float32Array;
  /**
   * Feeds several independent sequences in one pass (continuous
   * batching): the rows of all of them go through each projection
   * together, so the weights are read once per call, while each
   * sequence's attention runs against its own KV cache. Returns each
   * sequence's logits at its last fed position, the same values
   * {@link Transformer.forward} gives for that sequence alone.
   *
   * @param items The sequences: ids to feed and their states (distinct).
   * @returns `vocab` logits per item, in order.
   */
  forwardBatch(items: readonly BatchItem[]): Float32Array[];
  /** Bytes and bits per weight of the stored weights. */
  memory(): TransformerMemory;
}

/** Options of {@link buildTransformer} and the loaders. */
export interface TransformerOptions {
  /** Where the layer plugins come from. @default {a registry of the built-in layers} */
  registry?: LayerLookup;
  /** The tokenizer (the loaders build it from the checkpoint). */
  tokenizer?: Tokenizer;
  /** Sampling defaults. */
  generationDefaults?: GenerationDefaults;
  /** A display name. @default {"model"} */
  name?: string;
}

function defaultLookup(): LayerLookup {
  return createRegistry().use(LAYER_PLUGINS);
}

/**
 * Binds hyperparameters to tensors named as the network names them
 * (`layers.0.weight`, `layers.{n+1}.self_attn.q_proj.weight`, …). A tied
 * lm_head may be left out: it then shares the embedding's tensor.
 *
 * @param config The hyperparameters.
 * @param tensors Weights by network name, in any dtype with a decoder.
 * @param options Registry, tokenizer, defaults, name.
 * @returns The model.
 * @throws {TypeError} When a weight is missing or has the wrong shape (the
 * message names it).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2, tie_word_embeddings: true,
 * });
 * const w = initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 3);
 * w.delete("layers.3.weight"); // tied: the lm_head is the embedding
 * const m = buildTransformer(cfg, w);
 * assert(m.memory().parameters === 16 * 8 + 8 * 8 * 4 + 3 * 8 * 16 + 2 * 8 + 8);
 * ```
 */
export function buildTransformer(
  config: TransformerConfig,
  tensors: ReadonlyMap<string, Tensor>,
  options: TransformerOptions = {},
): Transformer {
  const lookup = options.registry ?? defaultLookup();
  const netConfig = transformerNetwork(config);
  const n = config.numLayers;
  const headName = tensorName(
    "network",
    { role: "lm_head", kind: "weight" },
    n,
  );
  const all = new Map(tensors);
  if (!all.has(headName)) {
    const emb = all.get(
      tensorName("network", { role: "embedding", kind: "weight" }, n),
    );
    if (config.tieWordEmbeddings && emb) {
      all.set(headName, { ...emb, name: headName });
    }
  }
  const check = checkNetworkTensors(lookup, netConfig, all);
  const parts = tensorCheckProblems(check);
  if (parts.length > 0) {
    throw new TypeError(
      `Cannot build ${
        options.name ?? "the model"
      } (${config.family}, ${n} blocks, hidden ${config.hiddenSize}): ${
        parts.join("; ")
      }`,
    );
  }
  const network = buildNetwork(lookup, netConfig, all);
  const layers = network.layers;
  const normIndex = n + 1, headIndex = n + 2;
  const vocab = config.vocabSize, d = config.hiddenSize;
  // Gemma 2's final soft-capping: c·tanh(logit / c).
  const cap = config.variant?.finalSoftcap ?? null;
  const softcap = (l: Float32Array): Float32Array => {
    if (cap !== null) {
      for (let i = 0; i < l.length; i++) l[i] = cap * Math.tanh(l[i] / cap);
    }
    return l;
  };

  // Phi-3's LongRoPE: the first call that takes a cached sequence past the
  // original context runs the whole sequence again (with the long factors),
  // as transformers' Phi-3 generation drops its cache there; the keys
  // cached with the short factors would be rotated for another model.
  const longAfter = config.variant?.longrope?.original ?? null;
  const crossesLongRope = (state: TransformerState, t: number): boolean =>
    longAfter !== null && state.tokens.length > 0 &&
    state.tokens.length <= longAfter && state.tokens.length + t > longAfter;
  const restart = (state: TransformerState): number[] => {
    const past = state.tokens.splice(0);
    state.layers.splice(
      0,
      state.layers.length,
      ...network.createState().layers,
    );
    return past;
  };

  const forward = (
    ids: ArrayLike<number>,
    state?: TransformerState,
    opts: ForwardOptions = {},
  ): Float32Array => {
    const t = ids.length;
    if (t === 0) {
      throw new RangeError("Cannot run the model on 0 tokens");
    }
    if (state && state.layers?.length !== layers.length) {
      throw new TypeError(
        `Transformer state has ${
          state.layers?.length ?? 0
        } layer states, the model has ${layers.length}; use createState()`,
      );
    }
    if (state && crossesLongRope(state, t)) {
      const past = restart(state);
      const all = forward([...past, ...Array.from(ids)], state, opts);
      if (!opts.allPositions) return all;
      const width = all.length / (past.length + t);
      return all.subarray(past.length * width);
    }
    const x = new Float32Array(t);
    for (let i = 0; i < t; i++) x[i] = ids[i];
    let h: FloatTensor = layers[0].forward(
      floatTensor(x, [1, t]),
      state?.layers[0],
    );
    for (let i = 1; i <= n; i++) h = layers[i].forward(h, state?.layers[i]);
    if (!opts.allPositions && t > 1) {
      h = floatTensor(h.data.slice((t - 1) * d), [1, 1, d]);
    }
    h = layers[normIndex].forward(h);
    if (state) { for (let i = 0; i < t; i++) state.tokens.push(x[i]); }
    if (opts.output === "hidden") return h.data;
    const logits = softcap(layers[headIndex].forward(h).data);
    return logits.length === vocab || opts.allPositions
      ? logits
      : logits.subarray(logits.length - vocab);
  };

  const forwardBatch = (given: readonly BatchItem[]): Float32Array[] => {
    if (given.length === 0) return [];
    const items = longAfter === null
      ? given
      : given.map((it) =>
        it.state.layers?.length === layers.length &&
          crossesLongRope(it.state, it.ids.length)
          ? { ...it, ids: [...restart(it.state), ...Array.from(it.ids)] }
          : it
      );
    const seen = new Set<TransformerState>();
    let t = 0;
    for (const [i, it] of items.entries()) {
      if (it.ids.length === 0) {
        throw new RangeError(`forwardBatch: item ${i} has no tokens`);
      }
      if (it.state.layers?.length !== layers.length) {
        throw new TypeError(
          `forwardBatch: item ${i}'s state has ${
            it.state.layers?.length ?? 0
          } layer states, the model has ${layers.length}; use createState()`,
        );
      }
      if (seen.has(it.state)) {
        throw new TypeError(`forwardBatch: item ${i} repeats a state`);
      }
      seen.add(it.state);
      t += it.ids.length;
    }
    const x = new Float32Array(t);
    let at = 0;
    for (const it of items) {
      for (let i = 0; i < it.ids.length; i++) x[at++] = it.ids[i];
    }
    let h: FloatTensor = layers[0].forward(floatTensor(x, [1, t]), undefined, {
      sequences: items.map((it) => ({
        rows: it.ids.length,
        state: it.state.layers[0],
      })),
    });
    h = floatTensor(h.data, [t, d]);
    for (let i = 1; i <= n; i++) {
      h = layers[i].forward(h, undefined, {
        sequences: items.map((it) => ({
          rows: it.ids.length,
          state: it.state.layers[i],
        })),
      });
    }
    // The last row of each sequence goes on through the norm and the head.
    const last = new Float32Array(items.length * d);
    at = 0;
    for (const [k, it] of items.entries()) {
      at += it.ids.length;
      last.set(h.data.subarray((at - 1) * d, at * d), k * d);
    }
    at = 0;
    for (const it of items) {
      for (let i = 0; i < it.ids.length; i++) it.state.tokens.push(x[at++]);
    }
    const logits = softcap(
      layers[headIndex].forward(
        layers[normIndex].forward(floatTensor(last, [1, items.length, d])),
      ).data,
    );
    return items.map((_, k) => logits.subarray(k * vocab, (k + 1) * vocab));
  };

  const memory = (): TransformerMemory => {
    const seen = new Set<Uint8Array>();
    const byDtype: TransformerMemory["byDtype"] = {};
    let parameters = 0, weightBytes = 0, kernelCopies = 0;
    for (const t of all.values()) {
      if (seen.has(t.bytes)) continue;
      seen.add(t.bytes);
      kernelCopies += kernelCopyBytes(t.bytes);
      const count = t.shape.reduce((a, b) => a * b, 1);
      const row = byDtype[t.dtype] ??= { tensors: 0, parameters: 0, bytes: 0 };
      row.tensors++;
      row.parameters += count;
      row.bytes += t.bytes.byteLength;
      parameters += count;
      weightBytes += t.bytes.byteLength;
    }
    return {
      parameters,
      weightBytes,
      bitsPerWeight: parameters === 0 ? 0 : (8 * weightBytes) / parameters,
      kernelCopyBytes: kernelCopies,
      totalBitsPerWeight: parameters === 0
        ? 0
        : (8 * (weightBytes + kernelCopies)) / parameters,
      byDtype,
    };
  };

  return {
    config,
    network,
    tensors: all,
    tokenizer: options.tokenizer,
    generationDefaults: options.generationDefaults ?? {},
    name: options.name ?? "model",
    createState: () => ({ ...network.createState(), tokens: [] }),
    forward,
    forwardBatch,
    memory,
  };
}

/** A Hugging Face checkpoint, opened: tensors plus the parsed JSON files. */
export interface HfModelFiles {
  /** The parsed `config.json`. */
  config: HfConfigJson;
  /** The weights (`model.safetensors`, or the shards read as one model). */
  model: ModelFile;
  /** The parsed `tokenizer.json`, when there is one. */
  tokenizer?: TokenizerJson;
  /** The parsed `tokenizer_config.json`. */
  tokenizerConfig?: TokenizerConfigJson;
  /** The parsed `generation_config.json`. */
  generationConfig?: GenerationConfigJson;
}

function singleModel(file: ModelFile, what: string): TensorIndex {
  if (file.models.length !== 1) {
    throw new TypeError(
      `${what}: expected one model, the file holds ${file.models.length}`,
    );
  }
  return file.models[0].tensors;
}

/** Block types the fast kernels read in place from kernel memory (F32/F16/BF16 they pack into panels). */
const IN_PLACE = new Set([
  "Q8_0",
  "Q4_0",
  "Q5_0",
  "Q4_K",
  "Q6_K",
  "IQ4_NL",
  "MXFP4",
  "IQ4_XS",
  "IQ3_S",
  "IQ2_XS",
]);

/**
 * Where a loaded tensor's bytes are kept. Q8_0 / Q4_0 / Q4_K / Q6_K
 * weights go into kernel memory, where `linear()` uses them in place
 * instead of keeping a second copy (a Q4_0 model holds ~4.5 bits per
 * weight in all); other bytes that are views into a larger buffer (a whole
 * file read at once) are copied out, so that buffer can be freed.
 * Not re-exported from `mod.ts`; the decode benchmark keeps its tensors
 * the same way.
 */
export function keep(t: Tensor): Tensor {
  if (IN_PLACE.has(t.dtype) && isFastDType(t.dtype) && !t.quant) {
    let b: Uint8Array | undefined;
    try {
      b = allocateKernelBytes(t.bytes.byteLength);
    } catch (e) {
      // the 4 GiB kernel memory is full: keep the bytes outside, where the
      // kernels copy them in on use (evicting other copies as needed)
      if (!(e instanceof RangeError)) throw e;
    }
    if (b) {
      b.set(t.bytes);
      return { ...t, bytes: b };
    }
  }
  if (t.bytes.buffer.byteLength > 2 * t.bytes.byteLength) {
    return { ...t, bytes: t.bytes.slice() };
  }
  return t;
}

/**
 * Loads the tensors of `index` that have a network name, renamed; `rename`
 * first maps a family's own names to the trunk's; stacked GGUF experts are
 * split into one tensor per expert.
 */
async function loadRenamed(
  index: TensorIndex,
  numLayers: number,
  skip: (role: TensorRole) => boolean,
  rename?: (name: string) => string,
): Promise<Map<string, Tensor>> {
  const out = new Map<string, Tensor>();
  let split: { from: string; parts: Tensor[] } | undefined;
  for (const p of planTensors(index, numLayers, skip, rename)) {
    let t: Tensor;
    if (p.expert !== undefined) {
      if (split?.from !== p.from) {
        split = { from: p.from, parts: splitExperts(await index.load(p.from)) };
      }
      t = split.parts[p.expert];
    } else t = await index.load(p.from);
    out.set(p.to, { ...keep(t), name: p.to });
  }
  return out;
}

function defaultsFromJson(
  g: GenerationConfigJson | undefined,
): GenerationDefaults {
  if (!g) return {};
  const out: GenerationDefaults = {};
  if (typeof g.do_sample === "boolean") out.doSample = g.do_sample;
  if (typeof g.temperature === "number") out.temperature = g.temperature;
  if (typeof g.top_k === "number") out.topK = g.top_k;
  if (typeof g.top_p === "number") out.topP = g.top_p;
  if (typeof g.repetition_penalty === "number") {
    out.repetitionPenalty = g.repetition_penalty;
  }
  return out;
}

/**
 * Builds a model from an opened Hugging Face checkpoint (browser-safe: the
 * caller reads the files). Tensor names are the Hugging Face ones
 * (`model.layers.{n}.self_attn.q_proj.weight` …, with or without the
 * `model.` prefix); q/k rows are in the Hugging Face (half-split) layout.
 *
 * @param files Weights and parsed JSON files.
 * @param options Registry, name; a tokenizer to use instead of `tokenizer.json`.
 * @returns The model.
 * @throws {TypeError} For an unsupported `model_type` (the message lists the
 * supported families) or a missing / mis-shaped weight.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { transformerFromFiles } from "@modelhost/modelhost/models";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const d = 4, v = 6, f = 8;
 * const t = (name: string, shape: number[]) =>
 *   tensorFromF32(name, Float32Array.from({ length: shape.reduce((a, b) => a * b) }, (_, i) => Math.sin(i)), shape);
 * const L = "model.layers.0.";
 * const tensors = memoryTensorIndex([
 *   t("model.embed_tokens.weight", [v, d]), t("model.norm.weight", [d]),
 *   t(L + "input_layernorm.weight", [d]), t(L + "post_attention_layernorm.weight", [d]),
 *   ...["q", "k", "v", "o"].map((p) => t(`${L}self_attn.${p}_proj.weight`, [d, d])),
 *   t(L + "mlp.gate_proj.weight", [f, d]), t(L + "mlp.up_proj.weight", [f, d]), t(L + "mlp.down_proj.weight", [d, f]),
 * ]);
 * const model = await transformerFromFiles({
 *   config: { model_type: "llama", vocab_size: v, hidden_size: d, intermediate_size: f,
 *     num_hidden_layers: 1, num_attention_heads: 2, tie_word_embeddings: true },
 *   model: { models: [{ id: "m", metadata: {}, tensors }] },
 * });
 * assert(model.forward([0, 3]).length === v);
 * ```
 */
export async function transformerFromFiles(
  files: HfModelFiles,
  options: TransformerOptions = {},
): Promise<Transformer> {
  const config = configFromHf(files.config);
  const index = singleModel(files.model, "Hugging Face checkpoint");
  checkTransformerTensors(config, index, options.name ?? "the checkpoint");
  const tensors = config.variant
    ? await loadHfTensors(config, index, keep)
    : await loadRenamed(
      index,
      config.numLayers,
      (role) =>
        role === "rope_freqs" ||
        (config.tieWordEmbeddings && role === "lm_head"),
      familyRename(config.family, "hf"),
    );
  const tokenizer = options.tokenizer ??
    (files.tokenizer
      ? createTokenizer(files.tokenizer, {
        config: files.tokenizerConfig,
        generationConfig: files.generationConfig,
      })
      : undefined);
  const nameOf = files.config._name_or_path;
  return buildTransformer(config, tensors, {
    ...options,
    tokenizer,
    generationDefaults: options.generationDefaults ??
      defaultsFromJson(files.generationConfig),
    name: options.name ??
      (typeof nameOf === "string" && nameOf !== "" ? nameOf : config.family),
  });
}

/**
 * Builds a model from a GGUF file (browser-safe: pass any ModelFile read by
 * the GGUF reader). `llama` files run with their q/k rows as stored
 * (interleaved rotary); `qwen2` files keep the half-split layout. The
 * tokenizer comes from the `tokenizer.ggml.*` metadata.
 *
 * @param file The GGUF ModelFile.
 * @param options Registry, name; a tokenizer to use instead of the metadata's.
 * @returns The model.
 * @throws {TypeError} For another `general.architecture` (the message lists
 * the supported ones) or a missing / mis-shaped weight.
 *
 * @example
 * ```ts ignore
 * import { transformerFromGguf } from "@modelhost/modelhost/models";
 * import { readGguf } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource } from "@modelhost/modelhost/core";
 * const file = await readGguf(memorySource(await Deno.readFile("stories260K.gguf")));
 * const model = await transformerFromGguf(file);
 * console.log(model.config.numLayers, model.tokenizer?.vocabSize);
 * ```
 */
export async function transformerFromGguf(
  file: ModelFile,
  options: TransformerOptions = {},
): Promise<Transformer> {
  const index = singleModel(file, "GGUF file");
  const md = file.models[0].metadata;
  const names = index.names();
  const ropeFreqs = index.has("rope_freqs.weight")
    ? toFloat32(await index.load("rope_freqs.weight"))
    : undefined;
  const config = configFromGguf(md, names, {
    tensorValues: await ggufExtraValues(index),
    ropeFreqs,
    embeddingRows: index.has("token_embd.weight")
      ? index.info("token_embd.weight").shape[0]
      : undefined,
  });
  checkTransformerTensors(config, index, options.name ?? "the GGUF file");
  const tensors = config.variant
    ? await loadGgufTensors(config, index, keep)
    : await loadRenamed(
      index,
      config.numLayers,
      (role) => role === "rope_freqs",
      familyRename(config.family, "gguf"),
    );
  let tokenizer = options.tokenizer;
  if (!tokenizer && "tokenizer.ggml.model" in md) {
    tokenizer = createTokenizer(md, { name: "GGUF metadata" });
  }
  const gname = md["general.name"];
  return buildTransformer(config, tensors, {
    ...options,
    tokenizer,
    name: options.name ??
      (typeof gname === "string" && gname !== "" ? gname : config.family),
  });
}
