// Would this model build? A cheap check run before an upload is linked into
// the registry and when the folder is listed: a Llama-family file's
// hyperparameters are read from its metadata and compared with its tensor
// index (names and shapes), without reading any weights and before anything
// is sized by a number from the file. The library half of issue 18 exports
// its own check from models/; this one is meant to be swapped for it at one
// call site (`modelBuildProblem`).

import type { ModelFile, TensorInfo } from "../core/model.ts";
import type { TransformerConfig } from "../models/config.ts";
import { configFromGguf, GGUF_ARCHITECTURES } from "../models/gguf_config.ts";
import {
  type NameScheme,
  tensorName,
  type TensorRole,
} from "../models/names.ts";
import { createTokenizer } from "../tokenizers/mod.ts";
import { checkVariantTensors, trunkFamilyView } from "./_buildable_families.ts";

/** Most transformer blocks a served model may have (the largest open models have under 130). */
export const MAX_SERVED_LAYERS = 1024;
/** Largest hidden size (embedding length) a served model may have. */
export const MAX_SERVED_HIDDEN = 1 << 16;
/** Most attention heads a served model may have. */
export const MAX_SERVED_HEADS = 1024;
/** Largest vocabulary a served model may have. */
export const MAX_SERVED_VOCAB = 1 << 22;

const BLOCK_ROLES: readonly TensorRole[] = [
  "attn_norm",
  "attn_q",
  "attn_k",
  "attn_v",
  "attn_o",
  "mlp_norm",
  "mlp_gate",
  "mlp_up",
  "mlp_down",
];

/**
 * Checks a transformer config against a tensor index: sizes under the
 * limits, one set of block tensors per declared block (no more, no less),
 * every tensor's shape what the config says. Throws a `TypeError` (or
 * `RangeError` for a size over a limit) naming the key, tensor and numbers.
 * The block count is compared with the tensors before any loop runs over it.
 */
export function checkTransformerTensors(
  cfg: TransformerConfig,
  allInfos: ReadonlyMap<string, TensorInfo>,
  scheme: NameScheme,
  where: string,
): void {
  const { infos, skip } = trunkFamilyView(cfg, allInfos, scheme);
  const limit = (what: string, v: number, max: number) => {
    if (!(Number.isSafeInteger(v) && v >= 1 && v <= max)) {
      throw new RangeError(
        `${where}: ${what} is ${v}; a served model needs 1 to ${max}`,
      );
    }
  };
  // Which blocks have tensors, counted from the names (bounded by the file).
  const blockRe = scheme === "gguf"
    ? /^blk\.(\d+)\./
    : /^model\.layers\.(\d+)\./;
  const blocks = new Set<number>();
  for (const n of infos.keys()) {
    const m = n.match(blockRe);
    if (m) blocks.add(Number(m[1]));
  }
  const top = blocks.size ? Math.max(...blocks) + 1 : 0;
  // decoder_block families (GPT-2's h.N, multimodal Gemma 3) count their
  // blocks in checkVariantTensors
  if (!cfg.variant && (cfg.numLayers !== blocks.size || top !== blocks.size)) {
    throw new TypeError(
      `${where}: the config declares ${cfg.numLayers} blocks but the file has tensors for ${blocks.size} block${
        blocks.size === 1 ? "" : "s"
      }${blocks.size ? ` (highest index ${top - 1})` : ""}`,
    );
  }
  limit("the block count", cfg.numLayers, MAX_SERVED_LAYERS);
  limit("the hidden size", cfg.hiddenSize, MAX_SERVED_HIDDEN);
  limit("the head count", cfg.numHeads, MAX_SERVED_HEADS);
  limit("the key/value head count", cfg.numKvHeads, MAX_SERVED_HEADS);
  limit("the head size", cfg.headDim, MAX_SERVED_HIDDEN);
  limit("the feed-forward size", cfg.intermediateSize, MAX_SERVED_HIDDEN * 8);
  limit("the vocabulary size", cfg.vocabSize, MAX_SERVED_VOCAB);
  if (cfg.numHeads % cfg.numKvHeads !== 0) {
    throw new TypeError(
      `${where}: ${cfg.numHeads} attention heads do not split into ${cfg.numKvHeads} key/value groups`,
    );
  }
  if (cfg.variant) return checkVariantTensors(cfg, infos, scheme, where);
  const q = cfg.numHeads * cfg.headDim, kv = cfg.numKvHeads * cfg.headDim;
  const h = cfg.hiddenSize, f = cfg.intermediateSize;
  const weights: Record<string, number[]> = {
    attn_norm: [h],
    attn_q: [q, h],
    attn_k: [kv, h],
    attn_v: [kv, h],
    attn_o: [h, q],
    mlp_norm: [h],
    mlp_gate: [f, h],
    mlp_up: [f, h],
    mlp_down: [h, f],
  };
  const biases: Record<string, [boolean, number]> = {
    attn_q: [cfg.attentionBias.q, q],
    attn_k: [cfg.attentionBias.k, kv],
    attn_v: [cfg.attentionBias.v, kv],
    attn_o: [cfg.attentionBias.o, h],
    mlp_gate: [cfg.mlpBias, f],
    mlp_up: [cfg.mlpBias, f],
    mlp_down: [cfg.mlpBias, h],
  };
  const expect = (name: string, shape: number[]) => {
    const info = infos.get(name);
    if (!info) {
      throw new TypeError(`${where}: tensor ${name} is missing`);
    }
    if (
      info.shape.length !== shape.length ||
      info.shape.some((d, i) => d !== shape[i])
    ) {
      throw new TypeError(
        `${where}: tensor ${name} is [${
          info.shape.join(", ")
        }] but the config makes it [${shape.join(", ")}]`,
      );
    }
  };
  const nameOf = (role: TensorRole, kind: "weight" | "bias", layer?: number) =>
    tensorName(scheme, { role, kind, layer });
  expect(nameOf("embedding", "weight"), [cfg.vocabSize, h]);
  expect(nameOf("final_norm", "weight"), [h]);
  if (!cfg.tieWordEmbeddings) {
    expect(nameOf("lm_head", "weight"), [cfg.vocabSize, h]);
  }
  for (let l = 0; l < cfg.numLayers; l++) {
    for (const role of BLOCK_ROLES) {
      if (skip.has(role)) continue;
      expect(nameOf(role, "weight", l), weights[role]);
      const b = biases[role];
      if (b?.[0]) expect(nameOf(role, "bias", l), [b[1]]);
    }
  }
  if (scheme === "gguf" && infos.has("rope_freqs.weight")) {
    expect("rope_freqs.weight", [cfg.headDim / 2]);
  }
}

/**
 * Why a model file would not build as a served model, or `undefined` when
 * it would (or when it is nothing the server builds from hyperparameters).
 * Llama-family GGUF files: `configFromGguf` on the metadata, then
 * {@link checkTransformerTensors}, then the vocabulary (as loading builds it). Networks with a config are checked by
 * the folder's own tensor check.
 */
export function modelBuildProblem(
  file: ModelFile,
  where: string,
): string | undefined {
  const m = file.models[0];
  if (!m || m.config) return undefined;
  const arch = m.metadata["general.architecture"];
  if (typeof arch !== "string" || !GGUF_ARCHITECTURES.includes(arch)) {
    return undefined;
  }
  try {
    const names = m.tensors.names();
    const infos = new Map(names.map((n) => [n, m.tensors.info(n)]));
    const cfg = configFromGguf(m.metadata, names, {
      name: where,
      embeddingRows: infos.get("token_embd.weight")?.shape[0],
    });
    checkTransformerTensors(cfg, infos, "gguf", where);
    // The vocabulary is built as loading builds it (no weights involved).
    if ("tokenizer.ggml.model" in m.metadata) {
      createTokenizer(m.metadata, { name: `${where}: GGUF metadata` });
    }
    return undefined;
  } catch (e) {
    if (
      e instanceof TypeError || e instanceof RangeError ||
      e instanceof SyntaxError
    ) return e.message;
    throw e;
  }
}
