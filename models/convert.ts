/**
 * Llama-family checkpoints between Hugging Face and GGUF, lazily (tensors
 * are read and transformed one at a time when the writer asks for them):
 *
 * - {@link hfToGguf}: a Hugging Face checkpoint as a GGUF-ready ModelFile —
 *   llama.cpp tensor names (`token_embd`, `blk.N.attn_q` …), q/k rows
 *   permuted for llama.cpp's adjacent-pair rotary (`llama` architecture;
 *   `qwen2` keeps them), `rope_freqs.weight` for llama3 rope scaling, 1-D
 *   tensors as F32, and the metadata llama.cpp reads (`general.*`,
 *   `<arch>.*`, `tokenizer.ggml.*`). Write it with `writeGguf` (optionally
 *   quantizing: `{ quantize: "Q8_0" }`).
 * - {@link ggufToHf}: a GGUF file as Hugging Face files (the shape
 *   `transformerFromFiles` takes): names, un-permuted q/k rows,
 *   `config.json`, `tokenizer.json`, `tokenizer_config.json`; quantized
 *   tensors widened to F32 (SafeTensors has no block types).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufToHf, hfToGguf } from "@modelhost/modelhost/models";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 * const d = 4, v = 3, f = 8;
 * const t = (name: string, shape: number[]) =>
 *   tensorFromF32(name, Float32Array.from({ length: shape.reduce((a, b) => a * b) }, (_, i) => i), shape);
 * const L = "model.layers.0.";
 * const hf = {
 *   config: { model_type: "llama", vocab_size: v, hidden_size: d, intermediate_size: f,
 *     num_hidden_layers: 1, num_attention_heads: 1, tie_word_embeddings: true },
 *   model: { models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([
 *     t("model.embed_tokens.weight", [v, d]), t("model.norm.weight", [d]),
 *     t(L + "input_layernorm.weight", [d]), t(L + "post_attention_layernorm.weight", [d]),
 *     ...["q", "k", "v", "o"].map((p) => t(`${L}self_attn.${p}_proj.weight`, [d, d])),
 *     t(L + "mlp.gate_proj.weight", [f, d]), t(L + "mlp.up_proj.weight", [f, d]), t(L + "mlp.down_proj.weight", [d, f]),
 *   ]) }] },
 * };
 * const gguf = hfToGguf(hf);
 * const q = await gguf.models[0].tensors.load("blk.0.attn_q.weight");
 * assert(toFloat32(q)[4] === 8); // row 1 of GGUF = HF row 2 (head size 4)
 * const back = await ggufToHf(gguf);
 * const q2 = await back.model.models[0].tensors.load(L + "self_attn.q_proj.weight");
 * assert(toFloat32(q2)[4] === 4);
 * ```
 *
 * @module
 */

import { dtypeInfo, type DTypeName } from "../core/dtypes.ts";
import type { ModelFile, TensorIndex, TensorInfo } from "../core/model.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../core/tensor.ts";
import type {
  GenerationConfigJson,
  TokenizerConfigJson,
  TokenizerJson,
} from "../tokenizers/hf.ts";
import {
  configFromHf,
  configToHf,
  type HfConfigJson,
  type TransformerConfig,
} from "./config.ts";
import {
  applyMove,
  decoderFamilySpec,
  FAMILY_SPECS,
  ggufExtraValues,
  ggufToHfMoves,
  hfToGgufMoves,
  type TensorMove,
} from "./families/mod.ts";
import { configFromGguf, configToGguf } from "./gguf_config.ts";
import {
  type ParsedTensorName,
  parseTensorName,
  tensorName,
  type TensorRole,
} from "./names.ts";
import {
  parseStackedExperts,
  splitExperts,
  stackedExpertsName,
  stackExperts,
} from "./families/_experts.ts";
import {
  llama3RopeFactors,
  permuteToHalfSplit,
  permuteToInterleaved,
} from "./rotary.ts";
import type { HfModelFiles } from "./transformer.ts";
import {
  ggufVocabFromTokenizerJson,
  tokenizerJsonFromGguf,
  type VocabToGgufOptions,
} from "./vocab.ts";

/** Options of {@link hfToGguf}. */
export interface HfToGgufOptions {
  /** `general.name`. @default {config `_name_or_path`, else the family} */
  name?: string;
  /** The `tokenizer.ggml.pre` name for a byte-level BPE, when detection finds none. */
  pre?: string;
}

/** A lazy tensor: its facts and how to make its bytes. */
interface Planned {
  info: TensorInfo;
  make: () => Promise<Tensor>;
}

function plannedIndex(list: Planned[]): TensorIndex {
  const map = new Map(list.map((p) => [p.info.name, p]));
  const missing = (name: string) =>
    new RangeError(`No tensor named "${name}" (${map.size} tensors)`);
  return {
    names: () => [...map.keys()],
    has: (name) => map.has(name),
    info(name) {
      const p = map.get(name);
      if (!p) throw missing(name);
      return { ...p.info, shape: [...p.info.shape] };
    },
    load(name) {
      const p = map.get(name);
      if (!p) return Promise.reject(missing(name));
      return p.make();
    },
  };
}

function byteLength(dtype: DTypeName, shape: number[]): number {
  const info = dtypeInfo(dtype);
  const n = shape.reduce((a, b) => a * b, 1);
  return Math.ceil(n / info.blockSize) * info.blockBytes;
}

const GGUF_FLOATS = new Set<DTypeName>(["F32", "F16", "BF16"]);

/** A family tensor move as a lazy tensor (1-D and changed values as F32). */
function movePlan(
  m: TensorMove,
  src: TensorIndex,
  floatTypes: Set<DTypeName>,
): Planned {
  const info = src.info(m.from);
  const oneD = info.shape.length === 1;
  const dtype: DTypeName = !oneD && !m.values && GGUF_FLOATS.has(info.dtype)
    ? info.dtype
    : "F32";
  if (!oneD) floatTypes.add(dtype);
  return {
    info: {
      name: m.to,
      dtype,
      shape: [...m.shape],
      byteLength: byteLength(dtype, m.shape),
    },
    make: async () => {
      let t = await src.load(m.from);
      if (t.dtype !== dtype && !m.values) {
        t = tensorFromF32(m.to, toFloat32(t), [...t.shape]);
      }
      const out = applyMove(m, t);
      return out.dtype === dtype
        ? out
        : tensorFromF32(m.to, toFloat32(out), [...m.shape]);
    },
  };
}

function fileType(types: Set<DTypeName>): number | undefined {
  if (types.size !== 1) return undefined;
  const t = [...types][0];
  return t === "F32" ? 0 : t === "F16" ? 1 : t === "BF16" ? 32 : undefined;
}

/**
 * A Hugging Face checkpoint as a GGUF-ready ModelFile (see the module
 * doc). Tensors that are no Llama-family weight (`rotary_emb.inv_freq` …)
 * are left out, as llama.cpp refuses unknown tensors.
 *
 * @param files The opened checkpoint (`tokenizer.json` optional; without
 *   it the file has no vocabulary and llama.cpp cannot run it).
 * @param options `general.name`, a pre-tokenizer name.
 * @returns The ModelFile (one model, lazy tensors) to pass to `writeGguf`.
 * @throws {TypeError} For an unsupported `model_type`, or a missing weight.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { hfToGguf } from "@modelhost/modelhost/models";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const t = (name: string, shape: number[]) =>
 *   tensorFromF32(name, new Float32Array(shape.reduce((a, b) => a * b)), shape);
 * const L = "model.layers.0.";
 * const file = hfToGguf({
 *   config: { model_type: "qwen2", vocab_size: 3, hidden_size: 4, intermediate_size: 8,
 *     num_hidden_layers: 1, num_attention_heads: 2, tie_word_embeddings: true },
 *   model: { models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([
 *     t("model.embed_tokens.weight", [3, 4]), t("model.norm.weight", [4]),
 *     t(L + "input_layernorm.weight", [4]), t(L + "post_attention_layernorm.weight", [4]),
 *     ...["q", "k", "v", "o"].map((p) => t(`${L}self_attn.${p}_proj.weight`, [4, 4])),
 *     ...["q", "k", "v"].map((p) => t(`${L}self_attn.${p}_proj.bias`, [4])),
 *     t(L + "mlp.gate_proj.weight", [8, 4]), t(L + "mlp.up_proj.weight", [8, 4]), t(L + "mlp.down_proj.weight", [4, 8]),
 *   ]) }] },
 * });
 * assert(file.models[0].metadata["general.architecture"] === "qwen2");
 * assert(file.models[0].tensors.has("blk.0.attn_q.bias") && !file.models[0].tensors.has("output.weight"));
 * ```
 */
export function hfToGguf(
  files: HfModelFiles,
  options: HfToGgufOptions = {},
): ModelFile {
  const cfg = configFromHf(files.config);
  if (files.model.models.length !== 1) {
    throw new TypeError(
      `Cannot convert to GGUF: the checkpoint holds ${files.model.models.length} models, expected one`,
    );
  }
  const src = files.model.models[0].tensors;
  const spec = FAMILY_SPECS.get(cfg.family);
  const permute = spec ? spec.permuteQk : cfg.family !== "qwen2";
  const fromFamily = spec?.hfNames?.fromFamily ?? ((n: string) => n);
  const toGgufName = spec?.ggufNames?.toFamily ?? ((n: string) => n);
  const planned: Planned[] = [];
  const floatTypes = new Set<DTypeName>();
  if (cfg.variant) {
    for (const m of hfToGgufMoves(cfg, src)) {
      planned.push(movePlan(m, src, floatTypes));
    }
    for (
      const x of decoderFamilySpec(cfg.family)?.ggufExtraTensors?.(cfg) ?? []
    ) {
      planned.push({
        info: {
          name: x.name,
          dtype: "F32",
          shape: [x.values.length],
          byteLength: x.values.byteLength,
        },
        make: () =>
          Promise.resolve(tensorFromF32(x.name, x.values, [x.values.length])),
      });
    }
  } else if (cfg.ropeScaling?.rope_type === "llama3") {
    const f = llama3RopeFactors(cfg.headDim, cfg.ropeTheta, cfg.ropeScaling);
    planned.push({
      info: {
        name: "rope_freqs.weight",
        dtype: "F32",
        shape: [f.length],
        byteLength: f.byteLength,
      },
      make: () =>
        Promise.resolve(tensorFromF32("rope_freqs.weight", f, [f.length])),
    });
  }
  const found = new Map<string, { from: string; p: ParsedTensorName }>();
  // stacked experts: `${layer}.${role}` -> the source name of each expert
  const experts = new Map<string, string[]>();
  for (const name of cfg.variant ? [] : src.names()) {
    const p = parseTensorName(fromFamily(name));
    if (!p || p.scheme !== "hf" || p.role === "rope_freqs") continue;
    if (p.layer !== undefined && p.layer >= cfg.numLayers) continue;
    if (p.role === "lm_head" && cfg.tieWordEmbeddings) continue;
    if (p.expert !== undefined) {
      const key = `${p.layer}.${p.role}`;
      const list = experts.get(key) ?? [];
      list[p.expert] = name;
      experts.set(key, list);
      continue;
    }
    found.set(tensorName("gguf", p), { from: name, p });
  }
  const order: string[] = [];
  const stackedOrder: { layer: number; role: TensorRole }[] = [];
  const want = (role: ParsedTensorName["role"], layer?: number) => {
    for (const kind of ["weight", "bias"] as const) {
      const g = tensorName("gguf", { role, layer, kind });
      if (found.has(g)) order.push(g);
      else if (
        kind === "weight" && !(role === "lm_head" && cfg.tieWordEmbeddings)
      ) {
        throw new TypeError(
          `Cannot convert to GGUF: the checkpoint has no ${
            tensorName("hf", { role, layer, kind })
          }`,
        );
      }
    }
  };
  if (!cfg.variant) {
    want("embedding");
    const post = cfg.normPlacement === "post";
    for (let i = 0; i < cfg.numLayers; i++) {
      if (!post) want("attn_norm", i);
      for (const r of ["attn_q", "attn_k", "attn_v", "attn_o"] as const) {
        want(r, i);
      }
      if (cfg.qkNorm) {
        want("attn_q_norm", i);
        want("attn_k_norm", i);
      }
      want("mlp_norm", i);
      if (post) want("ffn_post_norm", i);
      if (cfg.moe) {
        want("moe_router", i);
        for (const role of ["mlp_gate", "mlp_up", "mlp_down"] as const) {
          const list = experts.get(`${i}.${role}`) ?? [];
          for (let j = 0; j < cfg.moe.numExperts; j++) {
            if (list[j] === undefined) {
              throw new TypeError(
                `Cannot convert to GGUF: the checkpoint has no ${
                  tensorName("hf", {
                    role,
                    layer: i,
                    kind: "weight",
                    expert: j,
                  })
                }`,
              );
            }
          }
          stackedOrder.push({ layer: i, role });
        }
      } else {
        for (const r of ["mlp_gate", "mlp_up", "mlp_down"] as const) want(r, i);
      }
    }
    want("final_norm");
    if (!cfg.tieWordEmbeddings) want("lm_head");
    else if (spec?.ggufNeedsOutput) {
      // llama.cpp's loader of this family has no tied fallback: a copy
      const emb = found.get(
        tensorName("gguf", { role: "embedding", kind: "weight" }),
      )!;
      found.set("output.weight", {
        from: emb.from,
        p: { ...emb.p, role: "lm_head" },
      });
      order.push("output.weight");
    }
  }
  const ggufDtype = (info: TensorInfo): DTypeName =>
    info.shape.length === 1 || !GGUF_FLOATS.has(info.dtype)
      ? "F32"
      : info.dtype;
  for (const g0 of order) {
    const { from, p } = found.get(g0)!;
    const g = toGgufName(g0);
    const info = src.info(from);
    const oneD = info.shape.length === 1;
    const dtype = ggufDtype(info);
    if (!oneD) floatTypes.add(dtype);
    const heads = p.role === "attn_q"
      ? cfg.numHeads
      : p.role === "attn_k"
      ? cfg.numKvHeads
      : 0;
    planned.push({
      info: {
        name: g,
        dtype,
        shape: [...info.shape],
        byteLength: byteLength(dtype, info.shape),
      },
      make: async () => {
        let t = await src.load(from);
        if (t.dtype !== dtype || t.quant) {
          t = tensorFromF32(g, toFloat32(t), [...t.shape]);
        }
        t = { ...t, name: g };
        return permute && heads > 0 ? permuteToInterleaved(t, heads) : t;
      },
    });
  }
  for (const { layer, role } of stackedOrder) {
    const froms = experts.get(`${layer}.${role}`)!.slice(
      0,
      cfg.moe!.numExperts,
    );
    const info = src.info(froms[0]);
    const dtype = ggufDtype(info);
    floatTypes.add(dtype);
    const g = stackedExpertsName(layer, role);
    const shape = [froms.length, ...info.shape];
    planned.push({
      info: { name: g, dtype, shape, byteLength: byteLength(dtype, shape) },
      make: async () => {
        const parts: Tensor[] = [];
        for (const from of froms) {
          const t = await src.load(from);
          parts.push(
            t.dtype !== dtype || t.quant
              ? tensorFromF32(from, toFloat32(t), [...t.shape])
              : t,
          );
        }
        return stackExperts(g, parts);
      },
    });
  }
  const nameOf = files.config._name_or_path;
  const { values, types } = configToGguf(
    cfg,
    options.name ??
      (typeof nameOf === "string" && nameOf !== "" ? nameOf : cfg.family),
  );
  const ft = fileType(floatTypes);
  if (ft !== undefined) {
    values["general.file_type"] = ft;
    types["general.file_type"] = "UINT32";
  }
  if (files.tokenizer) {
    const vocabOptions: VocabToGgufOptions = {
      tokenizerConfig: files.tokenizerConfig,
      generationConfig: files.generationConfig,
      vocabSize: cfg.vocabSize,
      pre: options.pre,
    };
    const vocab = ggufVocabFromTokenizerJson(files.tokenizer, vocabOptions);
    Object.assign(values, vocab.values);
    Object.assign(types, vocab.types);
  }
  return {
    format: "gguf",
    models: [{
      id: String(values["general.name"]),
      metadata: { ...values, "gguf.types": types },
      tensors: plannedIndex(planned),
    }],
  };
}

/** Options of {@link ggufToHf}. */
export interface GgufToHfOptions {
  /**
   * Float type of tensors stored in a block type (Q8_0, Q4_0 …), which
   * SafeTensors cannot hold. F32, F16 and BF16 tensors keep their type.
   * @default {"F32"}
   */
  dtype?: "F32";
}

/**
 * A GGUF file (`llama` or `qwen2`) as Hugging Face files: tensor names,
 * q/k rows un-permuted (`llama`), block-quantized tensors widened to F32,
 * and the parsed `config.json`, `tokenizer.json`, `tokenizer_config.json`
 * and `generation_config.json` objects. Tensors are converted when loaded.
 *
 * @param file The GGUF ModelFile.
 * @param _options Reserved (`dtype`).
 * @returns The files; `transformerFromFiles` runs them, the SafeTensors
 * writer saves `model`.
 * @throws {TypeError} For an unsupported architecture.
 *
 * @example
 * ```ts ignore
 * import { ggufToHf } from "@modelhost/modelhost/models";
 * import { readGguf } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource } from "@modelhost/modelhost/core";
 * const hf = await ggufToHf(await readGguf(memorySource(await Deno.readFile("stories260K.gguf"))));
 * console.log(hf.config, hf.model.models[0].tensors.names());
 * ```
 */
export async function ggufToHf(
  file: ModelFile,
  _options: GgufToHfOptions = {},
): Promise<HfModelFiles & { config: HfConfigJson }> {
  if (file.models.length !== 1) {
    throw new TypeError(
      `Cannot convert GGUF: the file holds ${file.models.length} models, expected one`,
    );
  }
  const m = file.models[0];
  const src = m.tensors;
  const ropeFreqs = src.has("rope_freqs.weight")
    ? toFloat32(await src.load("rope_freqs.weight"))
    : undefined;
  const cfg: TransformerConfig = configFromGguf(m.metadata, src.names(), {
    tensorValues: await ggufExtraValues(src),
    ropeFreqs,
    embeddingRows: src.has("token_embd.weight")
      ? src.info("token_embd.weight").shape[0]
      : undefined,
  });
  const unpermute = cfg.ropeStyle === "interleaved";
  const spec = FAMILY_SPECS.get(cfg.family);
  const fromGgufName = spec?.ggufNames?.fromFamily ?? ((n: string) => n);
  const toHfName = spec?.hfNames?.toFamily ?? ((n: string) => n);
  const planned: Planned[] = [];
  if (cfg.variant) {
    for (const m of ggufToHfMoves(cfg, src)) {
      planned.push(movePlan(m, src, new Set()));
    }
  }
  for (const name of cfg.variant ? [] : src.names()) {
    const stacked = parseStackedExperts(name);
    if (stacked) {
      const info = src.info(name);
      const dtype: DTypeName = GGUF_FLOATS.has(info.dtype) ? info.dtype : "F32";
      const shape = info.shape.slice(1);
      const e = info.shape[0];
      // one load of the stacked tensor serves its experts
      let split: Promise<Tensor[]> | undefined;
      for (let j = 0; j < e; j++) {
        const to = toHfName(tensorName("hf", {
          role: stacked.role,
          layer: stacked.layer,
          kind: "weight",
          expert: j,
        }));
        planned.push({
          info: {
            name: to,
            dtype,
            shape,
            byteLength: byteLength(dtype, shape),
          },
          make: async () => {
            split ??= src.load(name).then(splitExperts);
            let t = (await split)[j];
            if (t.dtype !== dtype) {
              t = tensorFromF32(to, toFloat32(t), [...t.shape]);
            }
            return { ...t, name: to };
          },
        });
      }
      continue;
    }
    const p = parseTensorName(fromGgufName(name));
    if (!p || p.scheme !== "gguf" || p.role === "rope_freqs") continue;
    const info = src.info(name);
    const to = toHfName(tensorName("hf", p));
    const dtype: DTypeName = GGUF_FLOATS.has(info.dtype) ? info.dtype : "F32";
    const heads = p.role === "attn_q"
      ? cfg.numHeads
      : p.role === "attn_k"
      ? cfg.numKvHeads
      : 0;
    planned.push({
      info: {
        name: to,
        dtype,
        shape: [...info.shape],
        byteLength: byteLength(dtype, info.shape),
      },
      make: async () => {
        let t = await src.load(name);
        if (t.dtype !== dtype) {
          t = tensorFromF32(to, toFloat32(t), [...t.shape]);
        }
        t = { ...t, name: to };
        return unpermute && heads > 0 ? permuteToHalfSplit(t, heads) : t;
      },
    });
  }
  const hfCfg = { ...cfg, ropeStyle: "neox" as const };
  const config = configToHf(hfCfg);
  const gname = m.metadata["general.name"];
  if (typeof gname === "string") config._name_or_path = gname;
  let tokenizer: TokenizerJson | undefined;
  let tokenizerConfig: TokenizerConfigJson | undefined;
  if ("tokenizer.ggml.model" in m.metadata) {
    ({ tokenizer, tokenizerConfig } = tokenizerJsonFromGguf(m.metadata));
  }
  const generationConfig: GenerationConfigJson = {
    ...(cfg.bosTokenId !== undefined ? { bos_token_id: cfg.bosTokenId } : {}),
    ...(cfg.eosTokenIds.length > 0
      ? {
        eos_token_id: cfg.eosTokenIds.length === 1
          ? cfg.eosTokenIds[0]
          : cfg.eosTokenIds,
      }
      : {}),
  };
  return {
    config,
    model: {
      format: "safetensors",
      models: [{ id: m.id, metadata: {}, tensors: plannedIndex(planned) }],
    },
    ...(tokenizer ? { tokenizer } : {}),
    ...(tokenizerConfig ? { tokenizerConfig } : {}),
    generationConfig,
  };
}
