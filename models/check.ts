/**
 * Checks that a Llama-family checkpoint would build, from its header alone:
 * hyperparameters within named limits and in agreement with the tensors the
 * file holds (block count, every shape), before any weight is read or any
 * per-block structure is allocated.
 *
 * @module
 */

import { checkNetworkTensors, type LayerLookup } from "../core/network.ts";
import type { ModelFile, TensorIndex } from "../core/model.ts";
import { LAYER_PLUGINS } from "../layers/mod.ts";
import { createRegistry } from "../registry.ts";
import {
  configFromHf,
  type HfConfigJson,
  type TransformerConfig,
  transformerNetwork,
} from "./config.ts";
import { configFromGguf, GGUF_ARCHITECTURES } from "./gguf_config.ts";
import { parseTensorName, tensorName } from "./names.ts";
import { parseStackedExperts } from "./families/_experts.ts";
import { blocksNamed, familyRename, planTensors } from "./_tensor_plan.ts";
import { checkVariantTensors } from "./families/_decoder_check.ts";

/**
 * Most transformer blocks a model may declare (the largest released Llama has 126).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_BLOCKS } from "@modelhost/modelhost/models";
 * assert(MAX_BLOCKS > 0);
 * ```
 */
export const MAX_BLOCKS = 1024;
/**
 * Widest residual stream accepted (Llama 3.1 405B uses 16384).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_HIDDEN_SIZE } from "@modelhost/modelhost/models";
 * assert(MAX_HIDDEN_SIZE > 0);
 * ```
 */
export const MAX_HIDDEN_SIZE = 65536;
/**
 * Most attention heads accepted (query or key/value).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_HEADS } from "@modelhost/modelhost/models";
 * assert(MAX_HEADS > 0);
 * ```
 */
export const MAX_HEADS = 1024;
/**
 * Largest head size accepted.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_HEAD_DIM } from "@modelhost/modelhost/models";
 * assert(MAX_HEAD_DIM > 0);
 * ```
 */
export const MAX_HEAD_DIM = 4096;
/**
 * Largest MLP width accepted (Llama 3.1 405B uses 53248).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_INTERMEDIATE_SIZE } from "@modelhost/modelhost/models";
 * assert(MAX_INTERMEDIATE_SIZE > 0);
 * ```
 */
export const MAX_INTERMEDIATE_SIZE = 1 << 20;
/**
 * Largest vocabulary accepted (Gemma's 256000 fits many times).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_VOCAB_SIZE } from "@modelhost/modelhost/models";
 * assert(MAX_VOCAB_SIZE > 0);
 * ```
 */
export const MAX_VOCAB_SIZE = 1 << 22;
/**
 * Longest trained context accepted.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_CONTEXT_LENGTH } from "@modelhost/modelhost/models";
 * assert(MAX_CONTEXT_LENGTH > 0);
 * ```
 */
export const MAX_CONTEXT_LENGTH = 1 << 24;

/** Which file keys hold each hyperparameter, for messages. */
interface KeyNames {
  blocks: string;
  hidden: string;
  heads: string;
  kvHeads: string;
  headDim: string;
  ffn: string;
  vocab: string;
  context: string;
}

const HF_KEYS: KeyNames = {
  blocks: "num_hidden_layers",
  hidden: "hidden_size",
  heads: "num_attention_heads",
  kvHeads: "num_key_value_heads",
  headDim: "head_dim",
  ffn: "intermediate_size",
  vocab: "vocab_size",
  context: "max_position_embeddings",
};

function ggufKeys(arch: string): KeyNames {
  return {
    blocks: `${arch}.block_count`,
    hidden: `${arch}.embedding_length`,
    heads: `${arch}.attention.head_count`,
    kvHeads: `${arch}.attention.head_count_kv`,
    headDim: `${arch}.attention.key_length`,
    ffn: `${arch}.feed_forward_length`,
    vocab: `${arch}.vocab_size`,
    context: `${arch}.context_length`,
  };
}

function keysFor(cfg: TransformerConfig, scheme: "hf" | "gguf"): KeyNames {
  return scheme === "hf"
    ? HF_KEYS
    : ggufKeys(cfg.family === "qwen2" ? "qwen2" : "llama");
}

/**
 * Throws when a hyperparameter is past its named limit or the head layout
 * does not divide.
 *
 * @param cfg The hyperparameters.
 * @param where The file, for messages. @default "model"
 * @param scheme Which key names the messages use. @default "hf"
 * @throws {RangeError} For a size past its limit (`MAX_BLOCKS` …).
 * @throws {TypeError} When the key/value heads do not divide the query heads.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkConfigLimits, configFromHf } from "@modelhost/modelhost/models";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 8, hidden_size: 8, intermediate_size: 8,
 *   num_hidden_layers: 2 ** 31 - 1, num_attention_heads: 2,
 * }, "config.json");
 * assertThrows(() => checkConfigLimits(cfg, "config.json"), RangeError, "num_hidden_layers");
 * ```
 */
export function checkConfigLimits(
  cfg: TransformerConfig,
  where = "model",
  scheme: "hf" | "gguf" = "hf",
): void {
  const k = keysFor(cfg, scheme);
  const limit = (key: string, v: number, max: number, name: string) => {
    if (v > max) {
      throw new RangeError(
        `Cannot build ${where}: ${key} is ${v}, above the limit ${max} (${name})`,
      );
    }
  };
  limit(k.blocks, cfg.numLayers, MAX_BLOCKS, "MAX_BLOCKS");
  limit(k.hidden, cfg.hiddenSize, MAX_HIDDEN_SIZE, "MAX_HIDDEN_SIZE");
  limit(k.heads, cfg.numHeads, MAX_HEADS, "MAX_HEADS");
  limit(k.kvHeads, cfg.numKvHeads, MAX_HEADS, "MAX_HEADS");
  limit(k.headDim, cfg.headDim, MAX_HEAD_DIM, "MAX_HEAD_DIM");
  limit(
    k.ffn,
    cfg.intermediateSize,
    MAX_INTERMEDIATE_SIZE,
    "MAX_INTERMEDIATE_SIZE",
  );
  limit(k.vocab, cfg.vocabSize, MAX_VOCAB_SIZE, "MAX_VOCAB_SIZE");
  limit(
    k.context,
    cfg.maxPositionEmbeddings,
    MAX_CONTEXT_LENGTH,
    "MAX_CONTEXT_LENGTH",
  );
  if (cfg.numHeads % cfg.numKvHeads !== 0) {
    throw new TypeError(
      `Cannot build ${where}: ${k.heads} ${cfg.numHeads} is not a multiple of ${k.kvHeads} ${cfg.numKvHeads}`,
    );
  }
}

/**
 * What a network tensor check found, as message parts: the missing names
 * (the first 8, with the count) and each wrong shape (the first 8); empty
 * when every tensor is there with its shape. Shared by the build check and
 * the loaders, so both name problems the same way.
 */
export function tensorCheckProblems(
  check: ReturnType<typeof checkNetworkTensors>,
): string[] {
  const parts: string[] = [];
  if (check.missing.length > 0) {
    parts.push(
      `missing ${check.missing.length}: ${
        check.missing.slice(0, 8).join(", ")
      }${check.missing.length > 8 ? ", …" : ""}`,
    );
  }
  for (const w of check.wrongShape.slice(0, 8)) {
    parts.push(
      `${w.name} has shape [${w.actual.join(", ")}], expected [${
        w.expected.join(", ")
      }]`,
    );
  }
  return parts;
}

/** The part of a tensor index {@link checkTransformerTensors} reads. */
export type TensorShapes = Pick<TensorIndex, "names" | "info">;

/**
 * Throws unless the tensors agree with the hyperparameters: limits first,
 * then the block count against the block indices the names carry, then
 * every shape against the network the config stands for. Reads names and
 * shapes only.
 *
 * @param cfg The hyperparameters.
 * @param index The tensors (Hugging Face or GGUF names).
 * @param where The file, for messages. @default "model"
 * @throws {RangeError} For a size past its limit.
 * @throws {TypeError} For a block count that disagrees with the tensors, a
 * missing tensor or a wrong shape.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkTransformerTensors, configFromHf } from "@modelhost/modelhost/models";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 4, hidden_size: 4, intermediate_size: 4,
 *   num_hidden_layers: 3, num_attention_heads: 2, tie_word_embeddings: true,
 * });
 * const index = memoryTensorIndex([
 *   tensorFromF32("model.embed_tokens.weight", new Float32Array(16), [4, 4]),
 * ]);
 * assertThrows(() => checkTransformerTensors(cfg, index, "m"), TypeError, "3 blocks");
 * ```
 */
export function checkTransformerTensors(
  cfg: TransformerConfig,
  index: TensorShapes,
  where = "model",
): void {
  // GGUF names parse as such; anything else is read as Hugging Face's.
  const scheme =
    index.names().some((n) =>
        parseTensorName(n)?.scheme === "gguf" || parseStackedExperts(n)
      )
      ? "gguf"
      : "hf";
  checkConfigLimits(cfg, where, scheme);
  if (cfg.variant) {
    // A decoder_block family names its tensors its own way: its check maps
    // every network tensor to those names (limits above bound its loops).
    const infos = new Map(index.names().map((n) => [n, index.info(n)]));
    const own = index.names().some((n) =>
        n.startsWith("blk.") || n.startsWith("token_embd.")
      )
      ? "gguf"
      : "hf";
    checkVariantTensors(cfg, infos, own, where);
    return;
  }
  const k = keysFor(cfg, scheme);
  const rename = familyRename(cfg.family, scheme);
  const blocksSeen = blocksNamed(index, rename);
  if (blocksSeen !== cfg.numLayers) {
    throw new TypeError(
      `Cannot build ${where}: ${k.blocks} says ${cfg.numLayers} blocks, the tensors have ${
        blocksSeen === 0
          ? "none"
          : blocksSeen > MAX_BLOCKS
          ? `block index ${blocksSeen - 1}`
          : `${blocksSeen} blocks`
      }`,
    );
  }
  const shapes = new Map<string, { shape: readonly number[] }>();
  const plan = planTensors(
    index,
    cfg.numLayers,
    (role) =>
      role === "rope_freqs" || (cfg.tieWordEmbeddings && role === "lm_head"),
    rename,
  );
  for (const p of plan) shapes.set(p.to, { shape: p.shape });
  const n = cfg.numLayers;
  const head = tensorName("network", { role: "lm_head", kind: "weight" }, n);
  const emb = tensorName("network", { role: "embedding", kind: "weight" }, n);
  if (!shapes.has(head) && cfg.tieWordEmbeddings && shapes.has(emb)) {
    shapes.set(head, shapes.get(emb)!);
  }
  const check = checkNetworkTensors(
    createRegistry().use(LAYER_PLUGINS),
    transformerNetwork(cfg),
    shapes,
  );
  const parts = tensorCheckProblems(check);
  if (parts.length > 0) {
    throw new TypeError(
      `Cannot build ${where} (${cfg.family}, ${n} blocks, hidden ${cfg.hiddenSize}, ${cfg.numHeads} heads of ${cfg.headDim}): ${
        parts.join("; ")
      }`,
    );
  }
}

/** Options of {@link checkTransformerFile}. */
export interface CheckTransformerOptions {
  /** The parsed `config.json` of a Hugging Face checkpoint; without it the file is read as GGUF. */
  config?: HfConfigJson;
  /** The file, for messages. @default "model" */
  name?: string;
}

/**
 * Says whether a checkpoint would build as a Llama-family model, without
 * reading its weights: the hyperparameters (GGUF metadata, or `config.json`
 * when given) are parsed, held to the named limits and checked against the
 * names and shapes of the file's tensors. Cheap: header facts only.
 *
 * @param file The opened file (weights are not loaded).
 * @param options The Hugging Face config, a name for messages.
 * @returns The hyperparameters the model would build with.
 * @throws {RangeError} For a size past its limit.
 * @throws {TypeError} For an unsupported architecture, a bad or missing
 * hyperparameter, or tensors that contradict it (the message names the key,
 * the tensor and the numbers).
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkTransformerFile } from "@modelhost/modelhost/models";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const tensors = memoryTensorIndex([
 *   tensorFromF32("token_embd.weight", new Float32Array(16), [4, 4]),
 * ]);
 * const md = {
 *   "general.architecture": "llama", "llama.block_count": 2 ** 31 - 1,
 *   "llama.embedding_length": 4, "llama.attention.head_count": 2,
 *   "llama.feed_forward_length": 4, "llama.vocab_size": 4,
 * };
 * assertThrows(
 *   () => checkTransformerFile({ models: [{ id: "m", metadata: md, tensors }] }, { name: "x.gguf" }),
 *   RangeError,
 *   "llama.block_count is 2147483647",
 * );
 * ```
 */
export function checkTransformerFile(
  file: ModelFile,
  options: CheckTransformerOptions = {},
): TransformerConfig {
  const where = options.name ?? "model";
  if (file.models.length !== 1) {
    throw new TypeError(
      `Cannot build ${where}: expected one model, the file holds ${file.models.length}`,
    );
  }
  const m = file.models[0];
  const embRows = (n: string) =>
    m.tensors.has(n) ? m.tensors.info(n).shape[0] : undefined;
  const cfg = options.config
    ? configFromHf(options.config, where)
    : configFromGguf(m.metadata, m.tensors.names(), {
      name: where,
      embeddingRows: embRows("token_embd.weight"),
    });
  checkTransformerTensors(cfg, m.tensors, where);
  return cfg;
}

/** Options of {@link checkModelBuilds}. */
export interface CheckModelOptions {
  /** The parsed `config.json` of a Hugging Face checkpoint. @default {undefined} */
  config?: HfConfigJson;
  /** The file, for messages. @default "model" */
  name?: string;
  /** Where network layer types are looked up. @default {a registry of the built-in layers} */
  registry?: LayerLookup;
}

/**
 * Says whether every model of an opened file would build, from headers
 * alone: a Llama-family checkpoint (a GGUF whose `general.architecture` is
 * supported, or tensors with a `config.json`) through
 * {@link checkTransformerFile}; a stored network (a model with a config)
 * through its layer specs against its tensors' shapes. Plain tensor files
 * pass. For a server to call before accepting an upload.
 *
 * @param file The opened file (weights are not loaded).
 * @param options The Hugging Face config, a name for messages, the registry.
 * @throws {RangeError} For a size past its limit.
 * @throws {TypeError} For a config that does not parse, or tensors that are
 * missing or mis-shaped for it (the message names them).
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkModelBuilds } from "@modelhost/modelhost/models";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const tensors = memoryTensorIndex([tensorFromF32("layers.0.weight", new Float32Array(6), [3, 2])]);
 * const config = { input_size: 2, layers: [{ type: "dense", output_size: 4, bias: false }] };
 * assertThrows(
 *   () => checkModelBuilds({ models: [{ id: "net", metadata: {}, config, tensors }] }),
 *   TypeError,
 *   "layers.0.weight has shape [3, 2], expected [4, 2]",
 * );
 * ```
 */
export function checkModelBuilds(
  file: ModelFile,
  options: CheckModelOptions = {},
): void {
  const where = options.name ?? "model";
  if (options.config) {
    checkTransformerFile(file, { config: options.config, name: where });
    return;
  }
  for (const m of file.models) {
    const arch = m.metadata["general.architecture"];
    if (typeof arch === "string" && GGUF_ARCHITECTURES.includes(arch)) {
      checkTransformerFile({ models: [m] }, { name: where });
      continue;
    }
    if (m.config === undefined) continue;
    const lookup = options.registry ?? createRegistry().use(LAYER_PLUGINS);
    const shapes = new Map(
      m.tensors.names().map((n) => [n, m.tensors.info(n)]),
    );
    const check = checkNetworkTensors(lookup, m.config, shapes);
    const parts = tensorCheckProblems(check);
    if (parts.length > 0) {
      throw new TypeError(
        `Cannot build model "${m.id}" of ${where}: ${parts.join("; ")}`,
      );
    }
  }
}
