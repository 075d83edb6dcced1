/**
 * llama-quantize's presets ("file types" such as `Q4_K_M`): which ggml type
 * each tensor of a model gets, by the same per-tensor rules as llama.cpp's
 * `llama_tensor_get_type` (src/llama-quant.cpp) — attention-v and ffn_down
 * bumps by layer position, output and token-embedding types, the fallbacks
 * for rows that do not fit a block — and the order llama.cpp writes tensors
 * in. The preset table is data; the rules are a port of llama.cpp's code.
 *
 * @module
 */

import type { DTypeName } from "../../core/dtypes.ts";
import { dtypeInfo } from "../../core/dtypes.ts";

/** One llama-quantize preset: the `general.file_type` it writes and its base type. */
export interface GgufPreset {
  /** The name llama-quantize accepts (`Q4_K_M`). */
  readonly name: string;
  /** llama.cpp's `llama_ftype` value, written as `general.file_type`. */
  readonly fileType: number;
  /** The type most tensors get (`llama_ftype_get_default_type`). */
  readonly base: DTypeName;
  /** What llama-quantize's help says about it. */
  readonly description: string;
}

function p(
  name: string,
  fileType: number,
  base: DTypeName,
  description: string,
): GgufPreset {
  return { name, fileType, base, description };
}

/**
 * llama-quantize's presets, by name, in its help's order. `Q3_K`, `Q4_K`
 * and `Q5_K` are its aliases of the `_M` mixes (see {@link GGUF_PRESET_ALIASES}).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_PRESETS } from "@modelhost/modelhost/formats/gguf";
 * assert(GGUF_PRESETS.Q4_K_M.base === "Q4_K" && GGUF_PRESETS.Q4_K_M.fileType === 15);
 * ```
 */
export const GGUF_PRESETS: Readonly<Record<string, GgufPreset>> = Object
  .fromEntries(
    [
      p("Q4_0", 2, "Q4_0", "4.34G, +0.4685 ppl @ Llama-3-8B"),
      p("Q4_1", 3, "Q4_1", "4.78G, +0.4511 ppl @ Llama-3-8B"),
      p("MXFP4_MOE", 38, "MXFP4", "MXFP4 experts, Q8_0 elsewhere"),
      p("Q5_0", 8, "Q5_0", "5.21G, +0.1316 ppl @ Llama-3-8B"),
      p("Q5_1", 9, "Q5_1", "5.65G, +0.1062 ppl @ Llama-3-8B"),
      p("IQ2_XXS", 19, "IQ2_XXS", "2.06 bpw quantization"),
      p("IQ2_XS", 20, "IQ2_XS", "2.31 bpw quantization"),
      p("IQ2_S", 28, "IQ2_XS", "2.5 bpw quantization"),
      p("IQ2_M", 29, "IQ2_S", "2.7 bpw quantization"),
      p("IQ1_S", 24, "IQ1_S", "1.56 bpw quantization"),
      p("IQ1_M", 31, "IQ1_M", "1.75 bpw quantization"),
      p("TQ1_0", 36, "TQ1_0", "1.69 bpw ternarization"),
      p("TQ2_0", 37, "TQ2_0", "2.06 bpw ternarization"),
      p("Q2_K", 10, "Q2_K", "2.96G, +3.5199 ppl @ Llama-3-8B"),
      p("Q2_K_S", 21, "Q2_K", "2.96G, +3.1836 ppl @ Llama-3-8B"),
      p("IQ3_XXS", 23, "IQ3_XXS", "3.06 bpw quantization"),
      p("IQ3_S", 26, "IQ3_S", "3.44 bpw quantization"),
      p("IQ3_M", 27, "IQ3_S", "3.66 bpw quantization mix"),
      p("IQ3_XS", 22, "IQ3_S", "3.3 bpw quantization"),
      p("Q3_K_S", 11, "Q3_K", "3.41G, +1.6321 ppl @ Llama-3-8B"),
      p("Q3_K_M", 12, "Q3_K", "3.74G, +0.6569 ppl @ Llama-3-8B"),
      p("Q3_K_L", 13, "Q3_K", "4.03G, +0.5562 ppl @ Llama-3-8B"),
      p("IQ4_NL", 25, "IQ4_NL", "4.50 bpw non-linear quantization"),
      p("IQ4_XS", 30, "IQ4_XS", "4.25 bpw non-linear quantization"),
      p("Q4_K_S", 14, "Q4_K", "4.37G, +0.2689 ppl @ Llama-3-8B"),
      p("Q4_K_M", 15, "Q4_K", "4.58G, +0.1754 ppl @ Llama-3-8B"),
      p("Q5_K_S", 16, "Q5_K", "5.21G, +0.1049 ppl @ Llama-3-8B"),
      p("Q5_K_M", 17, "Q5_K", "5.33G, +0.0569 ppl @ Llama-3-8B"),
      p("Q6_K", 18, "Q6_K", "6.14G, +0.0217 ppl @ Llama-3-8B"),
      p("Q8_0", 7, "Q8_0", "7.96G, +0.0026 ppl @ Llama-3-8B"),
      p("F16", 1, "F16", "14.00G, +0.0020 ppl @ Mistral-7B"),
      p("BF16", 32, "BF16", "14.00G, -0.0050 ppl @ Mistral-7B"),
      p("F32", 0, "F32", "26.00G @ 7B"),
    ].map((x) => [x.name, x]),
  );

/**
 * llama-quantize's short names for the `_M` mixes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_PRESET_ALIASES } from "@modelhost/modelhost/formats/gguf";
 * assert(GGUF_PRESET_ALIASES.Q4_K === "Q4_K_M");
 * ```
 */
export const GGUF_PRESET_ALIASES: Readonly<Record<string, string>> = {
  Q3_K: "Q3_K_M",
  Q4_K: "Q4_K_M",
  Q5_K: "Q5_K_M",
};

/**
 * Finds a preset by name, case-insensitively, following llama-quantize's
 * aliases (`q4_k` is `Q4_K_M`).
 *
 * @param name A preset name.
 * @returns The preset, or `undefined` when llama-quantize has no such name.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufPreset } from "@modelhost/modelhost/formats/gguf";
 * assert(ggufPreset("q4_k")?.name === "Q4_K_M");
 * ```
 */
export function ggufPreset(name: string): GgufPreset | undefined {
  const n = name.toUpperCase();
  return GGUF_PRESETS[GGUF_PRESET_ALIASES[n] ?? n];
}

/** A model's shape facts the rules read (from its GGUF metadata). */
export interface GgufPresetModel {
  /** `general.architecture`. */
  arch: string;
  /** `<arch>.block_count`. */
  nLayer: number;
  /** `<arch>.attention.head_count` (of the first layer when an array). */
  nHead: number;
  /** `<arch>.attention.head_count_kv` (of the first layer when an array). */
  nHeadKv: number;
  /** `<arch>.expert_count` (0 without experts). */
  nExpert: number;
}

/** Choices of {@link ggufPresetTypes} beyond the preset. */
export interface GgufPresetOptions {
  /** Every quantized tensor gets the base type (llama-quantize `--pure`). @default {false} */
  pure?: boolean;
  /** The type of `output.weight` (`--output-tensor-type`). @default {undefined} by the rules */
  outputTensorType?: DTypeName;
  /** The type of `token_embd.weight` (`--token-embedding-type`). @default {undefined} by the rules */
  tokenEmbeddingType?: DTypeName;
  /** Keep `output.weight` as it is (`--leave-output-tensor`). @default {false} */
  leaveOutputTensor?: boolean;
  /** Whether an importance matrix is used (changes a few rules). @default {false} */
  hasImatrix?: boolean;
}

/** One tensor as the rules see it. */
export interface GgufPresetTensor {
  /** GGUF tensor name. */
  name: string;
  /** Shape in PyTorch order (ggml's `ne` reversed). */
  shape: readonly number[];
  /** Its stored type. */
  dtype: DTypeName;
}

/** The rules' decision for one tensor. */
export interface GgufPresetChoice {
  /** The type written (the stored type when it stays). */
  to: DTypeName;
  /** Why, when it is not the preset's base type (or the tensor stays). */
  reason?: string;
  /** Set when the rows did not fit the chosen type's block and llama.cpp's fallback applied. */
  fallback?: { wanted: DTypeName; rows: number; block: number };
  /** llama.cpp refuses to write this tensor without an importance matrix. */
  needsImatrix?: boolean;
}

/**
 * llama.cpp's tensor order when it writes a model: tensors outside `blk.N.`
 * first, then by layer number; by name (bytewise) within each group.
 *
 * @param names Tensor names.
 * @returns A new sorted array.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { llamaTensorOrder } from "@modelhost/modelhost/formats/gguf";
 * assertEquals(
 *   llamaTensorOrder(["blk.10.a", "blk.2.b", "output.weight", "blk.2.a"]),
 *   ["output.weight", "blk.2.a", "blk.2.b", "blk.10.a"],
 * );
 * ```
 */
export function llamaTensorOrder(names: readonly string[]): string[] {
  const layer = (n: string) => {
    const m = /^blk\.([+-]?\d+)/.exec(n);
    return m ? Number(m[1]) : -1;
  };
  return names.slice().sort((a, b) => {
    const la = layer(a), lb = layer(b);
    if (la !== lb) return la - lb;
    return a < b ? -1 : a > b ? 1 : 0;
  });
}

type Category =
  | "token_embd"
  | "attn_q"
  | "attn_v"
  | "attn_k"
  | "attn_qkv"
  | "attn_kv_b"
  | "attn_output"
  | "ffn_up"
  | "ffn_gate"
  | "ffn_down"
  | "output"
  | "other";

function category(name: string): Category {
  if (name === "output.weight") return "output";
  if (name === "token_embd.weight" || name === "per_layer_token_embd.weight") {
    return "token_embd";
  }
  for (
    const [part, cat] of [
      ["attn_qkv.weight", "attn_qkv"],
      ["attn_kv_b.weight", "attn_kv_b"],
      ["attn_v.weight", "attn_v"],
      ["attn_k.weight", "attn_k"],
      ["attn_q.weight", "attn_q"],
      ["attn_output.weight", "attn_output"],
      ["ffn_up", "ffn_up"],
      ["ffn_gate", "ffn_gate"],
      ["ffn_down", "ffn_down"],
    ] as const
  ) if (name.includes(part)) return cat;
  return "other";
}

const isAttnV = (c: Category) =>
  c === "attn_v" || c === "attn_qkv" || c === "attn_kv_b";

/** ggml's dimension count: trailing sizes of 1 (in ggml order) do not count. */
function nDims(shape: readonly number[]): number {
  const ne = shape.slice().reverse();
  let n = 1;
  for (let i = 0; i < ne.length; i++) if (ne[i] > 1) n = i + 1;
  return n;
}

const NEVER = [
  "ffn_gate_inp.weight",
  "ffn_gate_tid2eid.weight",
  "altup",
  "laurel",
  "per_layer_model_proj",
  "ssm_conv1d",
  "shortconv.conv.weight",
  "indexer.k_proj.weight",
  "indexer.q_proj.weight",
  ...[
    "first",
    "w0",
    "w1",
    "w2",
    "v0",
    "v1",
    "v2",
    "a0",
    "a1",
    "a2",
    "g1",
    "g2",
    "decay_w1",
    "decay_w2",
    "lerp_fused",
  ].map((s) => `time_mix_${s}.weight`),
  "attn_rel_b.weight",
  ".position_embd",
  "sam.pos_embd",
  "sam.neck.",
  "sam.net_",
  ".rel_pos",
  ".patch_embd",
  ".patch_merger",
  "a.rvq.codebook",
  "mm.a.code_embd",
];

/**
 * Whether llama-quantize quantizes a tensor at all (`tensor_allows_quantization`):
 * weights of two or more dimensions, except norms, expert routers, position
 * and token-type embeddings and a list of small tensors of other families.
 *
 * @param name GGUF tensor name.
 * @param shape Shape in PyTorch order.
 * @param leaveOutputTensor `--leave-output-tensor`.
 * @returns A reason it stays, or `undefined` when it is quantized.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { llamaKeepsTensor } from "@modelhost/modelhost/formats/gguf";
 * assert(llamaKeepsTensor("blk.0.attn_norm.weight", [64]) !== undefined);
 * assert(llamaKeepsTensor("blk.0.attn_q.weight", [64, 64]) === undefined);
 * ```
 */
export function llamaKeepsTensor(
  name: string,
  shape: readonly number[],
  leaveOutputTensor = false,
): string | undefined {
  if (nDims(shape) < 2) return "1-D tensors stay as they are";
  if (!name.endsWith("weight")) return "only weights are quantized";
  if (name.includes("_norm.weight")) return "norms stay as they are";
  if (leaveOutputTensor && name === "output.weight") {
    return "--leave-output-tensor keeps output.weight";
  }
  if (name === "position_embd.weight" || name === "token_types.weight") {
    return "llama.cpp never quantizes this tensor";
  }
  for (const part of NEVER) {
    if (name.includes(part)) return "llama.cpp never quantizes this tensor";
  }
  return undefined;
}

const BLOCK_256_TO_IQ4_NL = new Set<string>([
  "IQ1_S",
  "IQ1_M",
  "IQ2_XXS",
  "IQ2_XS",
  "IQ2_S",
  "IQ3_XXS",
  "IQ3_S",
  "IQ4_XS",
]);

const FALLBACK: Record<string, DTypeName> = {
  Q2_K: "Q4_0",
  Q3_K: "Q4_0",
  TQ1_0: "Q4_0",
  TQ2_0: "Q4_0",
  Q4_K: "Q5_0",
  Q5_K: "Q5_1",
  Q6_K: "Q8_0",
};

const isQuant = (t: DTypeName) => dtypeInfo(t).kind === "quant";

/** Mutable counters of the rules, as llama.cpp keeps them while it walks the tensors. */
interface State {
  nAttnV: number;
  iAttnV: number;
  iDown: number;
  iGate: number;
  iUp: number;
  tied: boolean;
}

function layerOf(
  i: number,
  n: number,
  name: string,
  model: GgufPresetModel,
): [number, number] {
  if (Math.max(1, model.nExpert) > 1) {
    const m = /^blk\.([+-]?\d+)\./.exec(name);
    if (!m) {
      throw new RangeError(
        `Cannot choose a type for tensor "${name}": no layer number in its name`,
      );
    }
    const l = Number(m[1]);
    if (l < 0 || l >= n) {
      throw new RangeError(
        `Cannot choose a type for tensor "${name}": layer ${l} is outside [0, ${n})`,
      );
    }
    return [l, n];
  }
  return [i, n];
}

/** `llama_tensor_get_type_impl`: the preset's mix. */
function mix(
  s: State,
  t: DTypeName,
  info: GgufPresetTensor,
  ft: string,
  cat: Category,
  model: GgufPresetModel,
  o: GgufPresetOptions,
): DTypeName {
  const { arch, nExpert } = model;
  const gqa = model.nHeadKv > 0 ? Math.trunc(model.nHead / model.nHeadKv) : 0;
  const falcon = arch === "falcon";
  const is70B = arch === "llama" && model.nLayer === 80 &&
    model.nHead !== model.nHeadKv;
  const ne0 = info.shape[info.shape.length - 1];
  const ne2 = info.shape.length >= 3 ? info.shape[info.shape.length - 3] : 1;
  const more = (i: number, n: number) =>
    i < Math.trunc(n / 8) || i >= Math.trunc(7 * n / 8) ||
    (i - Math.trunc(n / 8)) % 3 === 2;
  const any = (...names: string[]) => names.includes(ft);
  const iq2 = any("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M");
  let n = t;
  if (cat === "output" || (s.tied && cat === "token_embd")) {
    if (o.outputTensorType !== undefined) n = o.outputTensorType;
    else if (ft === "MXFP4_MOE") n = "Q8_0";
    else if (falcon || ne0 % dtypeInfo(n).blockSize !== 0) n = "Q8_0";
    else if (iq2 || ft === "IQ3_XXS") n = "Q5_K";
    else if (n !== "Q8_0") n = "Q6_K";
    return n;
  }
  if (ft === "MXFP4_MOE") {
    const expertRole = cat === "ffn_up" || cat === "ffn_gate" ||
      cat === "ffn_down";
    return ne2 > 1 && (arch !== "bailingmoe3" || expertRole) ? "MXFP4" : "Q8_0";
  }
  if (cat === "token_embd") {
    if (o.tokenEmbeddingType !== undefined) return o.tokenEmbeddingType;
    if (any("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M")) return "Q2_K";
    if (any("IQ2_S", "IQ2_M", "IQ3_XXS")) return "IQ3_S";
    if (any("TQ1_0", "TQ2_0")) return "Q4_K";
    return n;
  }
  if (iq2) {
    if (isAttnV(cat)) {
      n = gqa >= 4 || nExpert >= 4
        ? "Q4_K"
        : any("IQ2_S", "IQ2_M")
        ? "IQ3_S"
        : "Q2_K";
      s.iAttnV++;
    } else if (nExpert === 8 && cat === "attn_k") n = "Q4_K";
    else if (cat === "ffn_down") {
      if (s.iDown < Math.trunc(model.nLayer / 8)) {
        n = any("IQ2_S", "IQ2_M") ? "IQ3_S" : "Q2_K";
      }
      s.iDown++;
    } else if (cat === "attn_output") {
      if (nExpert === 8) n = "Q5_K";
      else if (any("IQ1_S", "IQ1_M")) n = "IQ2_XXS";
      else if (any("IQ2_S", "IQ2_M")) n = "IQ3_S";
    }
    return n;
  }
  if (isAttnV(cat)) {
    if (ft === "Q2_K") n = gqa >= 4 ? "Q4_K" : "Q3_K";
    else if (ft === "Q2_K_S" && gqa >= 4) n = "Q4_K";
    else if (ft === "IQ3_XXS") {
      n = gqa >= 4 ? "Q4_K" : !o.hasImatrix ? "IQ3_S" : "IQ3_XXS";
    } else if (any("IQ3_XS", "IQ3_S") && gqa >= 4) n = "Q4_K";
    else if (ft === "IQ3_M") n = "Q4_K";
    else if (ft === "Q3_K_M") n = s.iAttnV < 2 ? "Q5_K" : "Q4_K";
    else if (ft === "Q3_K_L") n = "Q5_K";
    else if (any("IQ4_NL", "IQ4_XS") && gqa >= 4) n = "Q5_K";
    else if (any("Q4_K_M", "Q5_K_M") && more(s.iAttnV, s.nAttnV)) n = "Q6_K";
    else if (ft === "Q4_K_S" && s.iAttnV < 4) n = "Q5_K";
    if (is70B && (n === "Q3_K" || n === "Q4_K")) n = "Q5_K";
    if (nExpert === 8) n = "Q8_0";
    s.iAttnV++;
    return n;
  }
  if (cat === "attn_k") {
    if (nExpert === 8) n = "Q8_0";
    else if (ft === "IQ3_XS") n = "IQ3_XXS";
    else if (ft === "IQ3_XXS") n = "IQ2_S";
    return n;
  }
  if (cat === "attn_q") {
    if (ft === "IQ3_XS") n = "IQ3_XXS";
    else if (ft === "IQ3_XXS") n = "IQ2_S";
    return n;
  }
  if (cat === "ffn_down") {
    const [i, nl] = layerOf(s.iDown, model.nLayer, info.name, model);
    const e8 = Math.trunc(nl / 8), e16 = Math.trunc(nl / 16);
    if (ft === "Q2_K") n = "Q3_K";
    else if (ft === "Q2_K_S") {
      if (i < e8) n = "Q4_K";
    } else if (ft === "IQ3_XXS" && !o.hasImatrix) {
      n = i < e8 ? "Q4_K" : "Q3_K";
    } else if (ft === "Q3_K_M") {
      n = i < e16 ? "Q5_K" : !falcon || more(i, nl) ? "Q4_K" : "Q3_K";
    } else if (
      ft === "IQ3_M" && (i < e8 || (nExpert === 8 && more(i, nl)))
    ) n = "Q4_K";
    else if (ft === "Q3_K_L") n = falcon ? "Q4_K" : "Q5_K";
    else if (ft === "Q4_K_M") {
      if (falcon) n = i < e16 ? "Q6_K" : more(i, nl) ? "Q5_K" : "Q4_K";
      else if (more(i, nl)) n = "Q6_K";
    } else if (i < e8 && any("IQ4_NL", "IQ4_XS") && !o.hasImatrix) n = "Q5_K";
    else if (ft === "Q5_K_M" && more(i, nl)) n = "Q6_K";
    else if (ft === "Q4_K_S" && !falcon && i < e8) n = "Q5_K";
    else if (any("Q4_0", "Q5_0") && o.hasImatrix && i < e8) {
      n = ft === "Q4_0" ? "Q4_1" : "Q5_1";
    }
    s.iDown++;
    return n;
  }
  if (cat === "attn_output") {
    if (!falcon) {
      if (nExpert === 8) {
        if (
          any(
            "Q2_K",
            "IQ3_XS",
            "IQ3_XXS",
            "Q3_K_S",
            "Q3_K_M",
            "IQ4_NL",
            "Q4_K_S",
            "Q4_K_M",
            "IQ3_S",
            "IQ3_M",
            "IQ4_XS",
          )
        ) n = "Q5_K";
      } else if (ft === "Q2_K") n = "Q3_K";
      else if (ft === "IQ3_XXS") n = "IQ3_S";
      else if (ft === "Q3_K_M") n = "Q4_K";
      else if (ft === "Q3_K_L") n = "Q5_K";
      else if (ft === "IQ3_M") n = "Q4_K";
    } else if (ft === "Q3_K_L") n = "Q4_K";
    return n;
  }
  if (cat === "ffn_gate" || cat === "ffn_up") {
    const c = cat === "ffn_gate" ? s.iGate : s.iUp;
    const [i, nl] = layerOf(c, model.nLayer, info.name, model);
    if (
      ft === "IQ3_XS" && i >= Math.trunc(nl / 8) && i < Math.trunc(7 * nl / 8)
    ) n = "IQ3_XXS";
    if (cat === "ffn_gate") s.iGate++;
    else s.iUp++;
    return n;
  }
  return n;
}

/**
 * Chooses the type of every tensor of a model the way llama-quantize does
 * for a preset (`llama_tensor_get_type`), in llama.cpp's tensor order (the
 * rules count attention-v and ffn_down tensors as they go).
 *
 * @param tensors The model's tensors.
 * @param model Architecture and head/layer/expert counts.
 * @param preset A preset name (`Q4_K_M`, an alias such as `Q4_K`, `IQ4_XS`).
 * @param options `--pure`, `--output-tensor-type`, `--token-embedding-type`,
 * `--leave-output-tensor`, whether an importance matrix is used.
 * @returns One choice per tensor name.
 * @throws {TypeError} An unknown preset.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufPresetTypes } from "@modelhost/modelhost/formats/gguf";
 * const t = (name: string, shape: number[]) => ({ name, shape, dtype: "F16" as const });
 * const types = ggufPresetTypes(
 *   [t("output.weight", [512, 256]), t("blk.0.ffn_down.weight", [256, 256])],
 *   { arch: "llama", nLayer: 1, nHead: 4, nHeadKv: 4, nExpert: 0 },
 *   "Q4_K_M",
 * );
 * assert(types.get("output.weight")?.to === "Q6_K");
 * assert(types.get("blk.0.ffn_down.weight")?.to === "Q6_K");
 * ```
 */
export function ggufPresetTypes(
  tensors: readonly GgufPresetTensor[],
  model: GgufPresetModel,
  preset: string,
  options: GgufPresetOptions = {},
): Map<string, GgufPresetChoice> {
  const ps = ggufPreset(preset);
  if (!ps) {
    throw new TypeError(
      `Unknown quantization preset "${preset}"; presets: ${
        Object.keys(GGUF_PRESETS).join(", ")
      }`,
    );
  }
  const ft = ps.name;
  const base = ps.base;
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const order = llamaTensorOrder(tensors.map((t) => t.name));
  const s: State = {
    nAttnV: 0,
    iAttnV: 0,
    iDown: 0,
    iGate: 0,
    iUp: 0,
    tied: true,
  };
  for (const name of order) {
    const c = category(name);
    if (isAttnV(c)) s.nAttnV++;
    if (c === "output") s.tied = false;
  }
  const out = new Map<string, GgufPresetChoice>();
  for (const name of order) {
    const info = byName.get(name)!;
    const keep = llamaKeepsTensor(name, info.shape, options.leaveOutputTensor);
    if (keep) {
      out.set(name, { to: info.dtype, reason: keep });
      continue;
    }
    const cat = category(name);
    if (options.tokenEmbeddingType !== undefined && cat === "token_embd") {
      out.set(name, {
        to: options.tokenEmbeddingType,
        reason: "--token-embedding-type",
      });
      continue;
    }
    if (options.outputTensorType !== undefined && cat === "output") {
      out.set(name, {
        to: options.outputTensorType,
        reason: "--output-tensor-type",
      });
      continue;
    }
    let to: DTypeName = base;
    let reason: string | undefined;
    const choice: GgufPresetChoice = { to };
    if (isQuant(base)) {
      if (!options.pure) {
        to = mix(s, base, info, ft, cat, model, options);
        if (to !== base) reason = `${ft} gives ${cat} ${to}`;
      }
      const ne0 = info.shape[info.shape.length - 1];
      const block = dtypeInfo(to).blockSize;
      if (ne0 % block !== 0) {
        const wanted = to;
        let fb: DTypeName;
        if (BLOCK_256_TO_IQ4_NL.has(to)) fb = "IQ4_NL";
        else if (FALLBACK[to]) fb = FALLBACK[to];
        else if (block <= 32) fb = to;
        else {
          throw new TypeError(
            `Cannot quantize tensor "${name}" to ${to}: rows of ${ne0} do not divide its block of ${block} and llama.cpp defines no fallback`,
          );
        }
        if (ne0 % dtypeInfo(fb).blockSize !== 0) fb = "F16";
        to = fb;
        choice.fallback = { wanted, rows: ne0, block };
        reason =
          `rows of ${ne0} do not divide the ${wanted} block size ${block}; ${to} instead`;
      }
      if (
        name !== "token_embd.weight" &&
        name !== "per_layer_token_embd.weight" &&
        name !== "output.weight" &&
        (["IQ3_XXS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_M", "IQ1_S"].includes(
          to,
        ) || (to === "Q2_K" && ft === "Q2_K_S"))
      ) choice.needsImatrix = true;
    }
    choice.to = to;
    if (reason) choice.reason = reason;
    out.set(name, choice);
  }
  return out;
}
