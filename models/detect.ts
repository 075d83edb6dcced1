/**
 * Architecture detection for checkpoints of unknown provenance: every
 * tensor gets its role from its name (Hugging Face or GGUF naming), the
 * family is guessed from names and shapes (or read from a config), and
 * when the family is known the hyperparameters and the network config are
 * built, so that `buildTransformer` can run the result.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectArchitecture } from "@modelhost/modelhost/models";
 * const L = "model.layers.0.";
 * const d = detectArchitecture([
 *   { name: "model.embed_tokens.weight", shape: [100, 64] },
 *   { name: L + "self_attn.q_proj.weight", shape: [64, 64] },
 *   { name: L + "self_attn.k_proj.weight", shape: [16, 64] },
 *   { name: L + "self_attn.v_proj.weight", shape: [16, 64] },
 *   { name: L + "self_attn.o_proj.weight", shape: [64, 64] },
 *   { name: L + "mlp.gate_proj.weight", shape: [128, 64] },
 *   { name: L + "mlp.up_proj.weight", shape: [128, 64] },
 *   { name: L + "mlp.down_proj.weight", shape: [64, 128] },
 *   { name: L + "input_layernorm.weight", shape: [64] },
 *   { name: L + "post_attention_layernorm.weight", shape: [64] },
 *   { name: "model.norm.weight", shape: [64] },
 *   { name: "vision.proj", shape: [3] },
 * ]);
 * assert(d.family === "llama" && d.config?.numKvHeads === 1 && d.config.tieWordEmbeddings);
 * assert(d.tensors.at(-1)?.role === "unknown" && d.guessed.includes("headDim"));
 * ```
 *
 * @module
 */

import type { DTypeName } from "../core/dtypes.ts";
import type { NetworkConfig, TensorIndex } from "../core/model.ts";
import {
  configFromHf,
  type HfConfigJson,
  type TransformerConfig,
  type TransformerFamily,
  transformerNetwork,
} from "./config.ts";
import { parseStackedExperts } from "./families/_experts.ts";
import { familyFromNames } from "./families/_decoder_detect.ts";
import {
  decoderFamilyByGguf,
  decoderFamilySpec,
  FAMILY_SPECS,
} from "./families/mod.ts";
import { configFromGguf } from "./gguf_config.ts";
import {
  type NameScheme,
  parseTensorName,
  tensorName,
  type TensorRole,
} from "./names.ts";

/** A tensor as detection sees it. */
export interface TensorShapeInfo {
  /** Name. */
  name: string;
  /** Shape, outermost first ([out, in] for matrices). */
  shape: readonly number[];
  /** Stored dtype, when known. */
  dtype?: DTypeName;
}

/** One tensor with its role. */
export interface DetectedTensor extends TensorShapeInfo {
  /** What it is for (`unknown` when the name fits no Llama-family scheme). */
  role: TensorRole;
  /** Block index, for per-block tensors. */
  layer?: number;
  /** Weight or bias (absent for unknown tensors). */
  kind?: "weight" | "bias";
  /** The naming scheme the name is written in. */
  scheme?: NameScheme;
  /** The expert of a mixture-of-experts matrix; -1 for GGUF's stacked `ffn_*_exps`. */
  expert?: number;
  /** The family the name belongs to, when only one family writes it so (`block_sparse_moe` → mixtral). */
  familyHint?: TransformerFamily;
}

/** What {@link detectArchitecture} found. */
export interface DetectedArchitecture {
  /** The family, or `unknown` when the tensors are not a Llama-family decoder. */
  family: TransformerFamily | "unknown";
  /** The naming scheme most tensors use, or `unknown`. */
  naming: NameScheme | "unknown";
  /** Every tensor, in input order, with its role. */
  tensors: DetectedTensor[];
  /** Hyperparameters, when the family is known and the shapes agree with them. */
  config?: TransformerConfig;
  /** The network config built from `config` (run it with `buildTransformer`). */
  network?: NetworkConfig;
  /** Config fields guessed from shapes because no config said (e.g. `headDim`). */
  guessed: string[];
  /** Why the family is unknown, shapes that disagree, other remarks. */
  notes: string[];
}

function listOf(
  tensors: TensorIndex | Iterable<TensorShapeInfo>,
): TensorShapeInfo[] {
  if ("names" in tensors && typeof tensors.names === "function") {
    const idx = tensors as TensorIndex;
    return idx.names().map((n) => {
      const i = idx.info(n);
      return { name: n, shape: i.shape, dtype: i.dtype };
    });
  }
  return [...(tensors as Iterable<TensorShapeInfo>)];
}

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The shape each role has under a config. */
function expectedShape(
  cfg: TransformerConfig,
  role: TensorRole,
  kind: "weight" | "bias",
): number[] | undefined {
  const d = cfg.hiddenSize, q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim, f = cfg.intermediateSize;
  const w: Partial<Record<TensorRole, number[]>> = {
    embedding: [cfg.vocabSize, d],
    lm_head: [cfg.vocabSize, d],
    attn_q: [q, d],
    attn_k: [kv, d],
    attn_v: [kv, d],
    attn_o: [d, q],
    attn_norm: [d],
    mlp_norm: [d],
    final_norm: [d],
    mlp_gate: [f, d],
    mlp_up: [f, d],
    mlp_down: [d, f],
    rope_freqs: [cfg.headDim / 2],
    attn_q_norm: [cfg.qkNorm === "full" ? q : cfg.headDim],
    attn_k_norm: [cfg.qkNorm === "full" ? kv : cfg.headDim],
    ffn_post_norm: [d],
    moe_router: [cfg.moe?.numExperts ?? 0, d],
  };
  const s = w[role];
  if (!s) return undefined;
  return kind === "bias" ? [s[0]] : s;
}

/**
 * Detects a Llama-family architecture from tensor names and shapes.
 *
 * - Roles come from names (Hugging Face `model.layers.N.self_attn.q_proj`
 *   or GGUF `blk.N.attn_q`); anything else is `unknown`.
 * - With a config (a Hugging Face `config.json` object, or GGUF metadata
 *   with `general.architecture`), the family and sizes come from it and
 *   are checked against the shapes.
 * - Without one, the family is `qwen2` when q/k/v have biases and o has
 *   none, else `llama` (Mistral checkpoints have the same tensors as Llama:
 *   without a config a sliding window cannot be seen); sizes come from the
 *   shapes, and what shapes cannot tell (head size, norm epsilon, rope
 *   base) is guessed and listed in `guessed`.
 *
 * @param tensors A tensor index, or a list of names and shapes.
 * @param config A `config.json` object or GGUF metadata, when there is one.
 * @param options The values of a GGUF `rope_freqs.weight` (llama3 rope scaling).
 * @returns Roles, family, and — when the family is known and the shapes
 * agree — the hyperparameters and network config.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectArchitecture } from "@modelhost/modelhost/models";
 * const d = detectArchitecture([{ name: "encoder.layer.0.attention.self.query.weight", shape: [8, 8] }]);
 * assert(d.family === "unknown" && d.config === undefined);
 * ```
 */
export function detectArchitecture(
  tensors: TensorIndex | Iterable<TensorShapeInfo>,
  config?: HfConfigJson | Record<string, unknown>,
  options: { ropeFreqs?: ArrayLike<number> } = {},
): DetectedArchitecture {
  const list = listOf(tensors);
  const notes: string[] = [];
  const guessed: string[] = [];
  const detected: DetectedTensor[] = list.map((t) => {
    const stacked = parseStackedExperts(t.name);
    if (stacked) {
      return {
        ...t,
        role: stacked.role,
        layer: stacked.layer,
        kind: "weight",
        scheme: "gguf",
        expert: -1,
      };
    }
    let p = parseTensorName(t.name);
    let familyHint: TransformerFamily | undefined;
    for (const [family, spec] of FAMILY_SPECS) {
      if (p) break;
      for (const names of [spec.hfNames, spec.ggufNames]) {
        const renamed = names?.fromFamily(t.name);
        if (renamed !== undefined && renamed !== t.name) {
          p = parseTensorName(renamed);
          if (p) familyHint = family as TransformerFamily;
        }
      }
    }
    return p
      ? {
        ...t,
        role: p.role,
        layer: p.layer,
        kind: p.kind,
        scheme: p.scheme,
        ...(p.expert !== undefined ? { expert: p.expert } : {}),
        ...(familyHint ? { familyHint } : {}),
      }
      : { ...t, role: "unknown" };
  });
  const counts = new Map<NameScheme, number>();
  for (const t of detected) {
    if (t.scheme) counts.set(t.scheme, (counts.get(t.scheme) ?? 0) + 1);
  }
  const naming = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ??
    "unknown";
  // The decoder_block families (Gemma, Phi, GPT-2 …): the family from the
  // config, else from the names; hyperparameters only from a config.
  const gguf = config && "general.architecture" in config;
  const named = config && (gguf || "model_type" in config);
  const variant = named
    ? (gguf
      ? decoderFamilyByGguf(config["general.architecture"])?.info.modelType
      : decoderFamilySpec(config.model_type)?.info.modelType)
    : familyFromNames(detected.map((t) => t.name));
  if (variant) {
    let cfg: TransformerConfig | undefined;
    try {
      if (gguf) {
        cfg = configFromGguf(
          config as Record<string, unknown>,
          detected.map((t) => t.name),
        );
      } else if (named) cfg = configFromHf(config as HfConfigJson);
      else {
        notes.push(
          `${variant} named from its tensor names; its hyperparameters need a config`,
        );
      }
    } catch (e) {
      notes.push((e as Error).message);
    }
    return {
      family: variant,
      naming,
      tensors: detected,
      ...(cfg ? { config: cfg, network: transformerNetwork(cfg) } : {}),
      guessed,
      notes,
    };
  }
  const unknown = detected.filter((t) => t.role === "unknown");
  if (unknown.length > 0) {
    notes.push(
      `${unknown.length} tensor(s) with no Llama-family role: ${
        unknown.slice(0, 5).map((t) => t.name).join(", ")
      }${unknown.length > 5 ? ", …" : ""}`,
    );
  }
  const result = (
    family: DetectedArchitecture["family"],
    cfg?: TransformerConfig,
  ): DetectedArchitecture => ({
    family,
    naming,
    tensors: detected,
    ...(cfg ? { config: cfg, network: transformerNetwork(cfg) } : {}),
    guessed,
    notes,
  });

  const find = (role: TensorRole, layer?: number, kind = "weight") =>
    detected.find((t) =>
      t.role === role && t.layer === layer && t.kind === kind &&
      t.scheme === naming && t.expert === undefined
    );
  const findExpert = (role: TensorRole, layer: number) =>
    detected.find((t) =>
      t.role === role && t.layer === layer && t.kind === "weight" &&
      t.scheme === naming && t.expert !== undefined && t.expert <= 0
    );
  const isMoe = find("moe_router", 0) !== undefined;
  const isPost = find("attn_norm", 0) === undefined &&
    find("ffn_post_norm", 0) !== undefined;
  const layers = new Set(
    detected.filter((t) => t.layer !== undefined && t.scheme === naming).map((
      t,
    ) => t.layer!),
  );
  const numLayers = layers.size === 0 ? 0 : Math.max(...layers) + 1;
  const need: TensorRole[] = [
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_o",
    "mlp_gate",
    "mlp_up",
    "mlp_down",
    "attn_norm",
    "mlp_norm",
  ];
  const lacking: string[] = [];
  if (!find("embedding")) lacking.push("embedding");
  if (!find("final_norm")) lacking.push("final norm");
  for (let i = 0; i < numLayers; i++) {
    for (const r of need) {
      if (r === "attn_norm" && isPost) continue;
      if (r.startsWith("mlp_") && r !== "mlp_norm" && isMoe) {
        if (!findExpert(r, i)) lacking.push(`block ${i} ${r} experts`);
        continue;
      }
      if (!find(r, i)) lacking.push(`block ${i} ${r}`);
    }
  }
  if (numLayers === 0) lacking.push("transformer blocks");
  if (lacking.length > 0) {
    notes.push(
      `not a Llama-family decoder: no ${lacking.slice(0, 6).join(", ")}${
        lacking.length > 6 ? ", …" : ""
      }`,
    );
    return result("unknown");
  }

  let cfg: TransformerConfig;
  const names = detected.map((t) => t.name);
  try {
    if (config && "general.architecture" in config) {
      const rope = detected.find((t) => t.role === "rope_freqs");
      if (rope && !options.ropeFreqs) {
        notes.push(
          "rope_freqs.weight present but its values were not given: the config has no llama3 rope scaling",
        );
      }
      cfg = configFromGguf(config as Record<string, unknown>, names, {
        embeddingRows: find("embedding")!.shape[0],
        ropeFreqs: options.ropeFreqs,
      });
    } else if (config) {
      cfg = configFromHf(config as HfConfigJson);
    } else {
      cfg = fromShapes();
    }
  } catch (e) {
    notes.push((e as Error).message);
    return result("unknown");
  }
  if (naming === "gguf" && !(config && "general.architecture" in config)) {
    // GGUF llama files store q/k permuted for adjacent-pair rotary.
    const spec = FAMILY_SPECS.get(cfg.family);
    if (spec ? spec.permuteQk : cfg.family !== "qwen2") {
      cfg.ropeStyle = "interleaved";
    }
  }
  if (config && !("general.architecture" in config)) {
    // a config.json beside the tensors: ties follow the tensors present
    if (!find("lm_head") && !cfg.tieWordEmbeddings) {
      notes.push(
        "config says tie_word_embeddings false, but there is no lm_head: tied",
      );
      cfg.tieWordEmbeddings = true;
    }
  }
  let bad = 0;
  for (const t of detected) {
    if (t.role === "unknown" || t.scheme !== naming || !t.kind) continue;
    if (t.layer !== undefined && t.layer >= cfg.numLayers) {
      notes.push(
        `${t.name}: block ${t.layer} beyond the config's ${cfg.numLayers}`,
      );
      bad++;
      continue;
    }
    const want = t.expert !== undefined
      ? expertShape(cfg, t.role, t.expert < 0)
      : expectedShape(cfg, t.role, t.kind);
    if (want && !same(want, t.shape)) {
      notes.push(
        `${t.name} has shape [${
          t.shape.join(", ")
        }], the ${cfg.family} config expects [${want.join(", ")}]`,
      );
      bad++;
    }
  }
  if (numLayers !== cfg.numLayers) {
    notes.push(
      `the tensors hold ${numLayers} blocks, the config says ${cfg.numLayers}`,
    );
    bad++;
  }
  if (bad > 0) {
    return { ...result(cfg.family), guessed, notes };
  }
  return result(cfg.family, cfg);

  function fromShapes(): TransformerConfig {
    const emb = find("embedding")!.shape;
    const q = find("attn_q", 0)!.shape, k = find("attn_k", 0)!.shape;
    const gateT = isMoe ? findExpert("mlp_gate", 0)! : find("mlp_gate", 0)!;
    const gate = gateT.expert === -1 ? gateT.shape.slice(1) : gateT.shape;
    const [vocab, d] = emb;
    const qDim = q[0], kvDim = k[0];
    const bias = (r: TensorRole) => find(r, 0, "bias") !== undefined;
    const qkvBias = bias("attn_q") && bias("attn_k") && bias("attn_v");
    const qNorm = find("attn_q_norm", 0)?.shape[0];
    const qkNorm = qNorm === undefined
      ? undefined
      : qNorm === qDim && isPost
      ? "full" as const
      : "head" as const;
    const hint = detected.find((t) => t.familyHint)?.familyHint;
    const family: TransformerFamily = hint ??
      (isPost && qkNorm === "full"
        ? "olmo2"
        : qkNorm && isMoe
        ? "qwen3_moe"
        : qkNorm
        ? "qwen3"
        : isMoe
        ? "mixtral"
        : qkvBias && !bias("attn_o")
        ? "qwen2"
        : "llama");
    if (family === "llama") {
      notes.push(
        "llama, mistral, granite and smollm3 checkpoints have the same tensors; llama assumed (no sliding window, multipliers or RoPE-free blocks)",
      );
    }
    // Head size: the per-head q norm has it; else not in any shape.
    // Llama-family models use 128 from 4096 wide up and 64 below
    // (TinyLlama, SmolLM, Qwen2-0.5B).
    const candidates = d >= 4096 ? [128, 64] : [64, 128, 32, 16, 8];
    const headDim = qkNorm === "head"
      ? qNorm!
      : candidates.find((h) => qDim % h === 0 && kvDim % h === 0) ?? qDim;
    if (qkNorm !== "head") guessed.push("headDim");
    guessed.push("rmsNormEps", "ropeTheta", "maxPositionEmbeddings");
    const hidden = d;
    let moe: TransformerConfig["moe"];
    if (isMoe) {
      const router = find("moe_router", 0)!.shape;
      guessed.push("moe.topK");
      moe = {
        numExperts: router[0],
        topK: Math.min(2, router[0]),
        normalize: true,
        intermediateSize: gate[0],
      };
    }
    const ropeStyle = naming === "gguf" &&
        (FAMILY_SPECS.get(family)?.permuteQk ?? family !== "qwen2")
      ? "interleaved" as const
      : "neox" as const;
    return {
      ...(qkNorm ? { qkNorm } : {}),
      ...(isPost ? { normPlacement: "post" as const } : {}),
      ...(moe ? { moe } : {}),
      family,
      vocabSize: vocab,
      hiddenSize: hidden,
      numLayers,
      numHeads: qDim / headDim,
      numKvHeads: kvDim / headDim,
      headDim,
      intermediateSize: isMoe
        ? (find("mlp_gate", 0)?.shape[0] ?? gate[0])
        : gate[0],
      rmsNormEps: 1e-5,
      ropeTheta: family === "qwen2" ? 1e6 : 10000,
      ropeScaling: null,
      ropeStyle,
      slidingWindow: null,
      attentionBias: {
        q: bias("attn_q"),
        k: bias("attn_k"),
        v: bias("attn_v"),
        o: bias("attn_o"),
      },
      mlpBias: bias("mlp_gate"),
      tieWordEmbeddings: !find("lm_head"),
      maxPositionEmbeddings: 2048,
      eosTokenIds: [],
    };
  }
}

/** The shape of an expert matrix (`stacked`: GGUF's `[experts, rows, cols]`). */
function expertShape(
  cfg: TransformerConfig,
  role: TensorRole,
  stacked: boolean,
): number[] | undefined {
  if (!cfg.moe) return undefined;
  const d = cfg.hiddenSize, f = cfg.moe.intermediateSize;
  const s = role === "mlp_down" ? [d, f] : [f, d];
  return stacked ? [cfg.moe.numExperts, ...s] : s;
}

/**
 * The name a detected tensor has in the network (`layers.{i}.…`), for
 * binding it to a detected architecture's network.
 *
 * @param t A detected tensor with a known role.
 * @param numLayers Blocks of the architecture.
 * @returns The network name, or `undefined` for unknown tensors and `rope_freqs`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { networkNameOf } from "@modelhost/modelhost/models";
 * assert(networkNameOf({ name: "output.weight", shape: [9, 4], role: "lm_head", kind: "weight" }, 2) === "layers.4.weight");
 * ```
 */
export function networkNameOf(
  t: DetectedTensor,
  numLayers: number,
): string | undefined {
  if (
    t.role === "unknown" || t.role === "rope_freqs" || !t.kind ||
    t.expert === -1
  ) {
    return undefined;
  }
  return tensorName(
    "network",
    { role: t.role, layer: t.layer, kind: t.kind, expert: t.expert },
    numLayers,
  );
}
