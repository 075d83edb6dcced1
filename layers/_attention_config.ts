/**
 * Config parsing shared by the attention and transformer-block plugins:
 * the attention fields with their defaults, checked with the shared field
 * helpers (errors are `TypeError`s naming `path.field`).
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import type { ParseContext } from "../core/plugin.ts";
import type { RopeScaling, RopeStyle } from "../kernels/rope.ts";
import {
  boolField,
  choiceField,
  fieldError,
  type Fields,
  layerFields,
  numberField,
  optPositiveInt,
  positiveInt,
  resolveSize,
  shown,
} from "./_fields.ts";

/** The normalized attention config (every default filled in). */
export interface AttentionConfig {
  /** Model (residual stream) width: input and output features. */
  d_model: number;
  /** Query heads. */
  num_heads: number;
  /** Key/value heads (grouped-query attention); divides `num_heads`. */
  num_kv_heads: number;
  /** Size of one head (may differ from `d_model / num_heads`). */
  head_dim: number;
  /** Whether a token sees only itself and earlier tokens. */
  causal: boolean;
  /** Whether rotary position embeddings are applied to q and k. */
  use_rope: boolean;
  /** RoPE base. */
  rope_theta: number;
  /** RoPE pair layout. */
  rope_style: RopeStyle;
  /** RoPE context-extension rule, or null. */
  rope_scaling: RopeScaling | null;
  /**
   * Window, or null. Causal (Mistral): a token sees at most this many
   * tokens, itself included (keys at i − j < window). Not causal
   * (ModernBERT's local layers): keys at |i − j| < window on both sides.
   */
  sliding_window: number | null;
  /** Whether `q_proj` has a bias. */
  q_bias: boolean;
  /** Whether `k_proj` has a bias. */
  k_bias: boolean;
  /** Whether `v_proj` has a bias. */
  v_bias: boolean;
  /** Whether `o_proj` has a bias. */
  o_bias: boolean;
  /**
   * RMSNorm of the projected queries and keys before RoPE (`q_norm.weight`,
   * `k_norm.weight`): `"head"` normalizes each head (Qwen3, weights of
   * `head_dim`), `"full"` the whole projection (OLMo 2, weights of
   * `num_heads·head_dim` and `num_kv_heads·head_dim`), null none.
   */
  qk_norm: "head" | "full" | null;
  /** Epsilon of the q/k RMSNorm. */
  qk_norm_eps: number;
  /** Multiplier of q·kᵀ, or null for `1/√head_dim` (Granite's `attention_multiplier`). */
  attention_scale: number | null;
}

/** Field names the attention config reads (besides `type`). */
export const ATTENTION_FIELDS: readonly string[] = [
  "d_model",
  "num_heads",
  "num_kv_heads",
  "head_dim",
  "causal",
  "use_rope",
  "rope_theta",
  "rope_style",
  "rope_scaling",
  "sliding_window",
  "bias",
  "q_bias",
  "k_bias",
  "v_bias",
  "o_bias",
  "qk_norm",
  "qk_norm_eps",
  "attention_scale",
];

function parseScaling(raw: unknown, path: string): RopeScaling | null {
  if (raw === undefined || raw === null) return null;
  const field = "rope_scaling";
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw fieldError(
      path,
      field,
      `expected null or an object, got ${shown(raw)}`,
    );
  }
  const o = raw as Fields;
  // Hugging Face spells the kind `rope_type` (newer configs) or `type`.
  const kind = o.rope_type ?? o.type;
  const num = (key: string): number => {
    const v = o[key];
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
      throw fieldError(
        path,
        `${field}.${key}`,
        `expected a number above 0, got ${shown(v)}`,
      );
    }
    return v;
  };
  if (kind === "default") return null;
  if (kind === "linear") return { rope_type: "linear", factor: num("factor") };
  if (kind === "llama3") {
    const s = {
      rope_type: "llama3" as const,
      factor: num("factor"),
      low_freq_factor: num("low_freq_factor"),
      high_freq_factor: num("high_freq_factor"),
      original_max_position_embeddings: positiveInt(
        o,
        "original_max_position_embeddings",
        `${path}.${field}`,
      ),
    };
    if (s.high_freq_factor <= s.low_freq_factor) {
      throw fieldError(
        path,
        `${field}.high_freq_factor`,
        `expected a number above low_freq_factor (${s.low_freq_factor}), got ${s.high_freq_factor}`,
      );
    }
    return s;
  }
  throw fieldError(
    path,
    `${field}.rope_type`,
    `expected one of default, linear, llama3, got ${shown(kind)}`,
  );
}

/**
 * Parses the attention fields of a layer's JSON (an attention layer, or a
 * transformer block that carries them), filling defaults and inferring
 * `d_model` from the previous layer. Fields outside `known` are refused.
 *
 * @param json The layer definition.
 * @param ctx The parse context.
 * @param type The layer type, for messages.
 * @param known Every field the layer accepts (besides `type`).
 * @returns The normalized config.
 * @throws {TypeError} Naming `ctx.path` and the field when a value is wrong.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ATTENTION_FIELDS, parseAttentionFields } from "./_attention_config.ts";
 * const ctx = { path: "layers[0]", inputSize: 8, parseChild: () => { throw new Error(); } };
 * const cfg = parseAttentionFields({ type: "mha", num_heads: 2 }, ctx, "mha", ATTENTION_FIELDS);
 * assert(cfg.d_model === 8 && cfg.head_dim === 4 && cfg.num_kv_heads === 2);
 * ```
 */
export function parseAttentionFields(
  json: LayerConfig,
  ctx: ParseContext,
  type: string,
  known: readonly string[],
): AttentionConfig {
  const o = layerFields(json, ctx, type, known);
  const path = ctx.path;
  const d_model = resolveSize(o, "d_model", ctx, ctx.inputSize);
  const num_heads = positiveInt(o, "num_heads", path);
  const num_kv_heads = positiveInt(o, "num_kv_heads", path, num_heads);
  if (num_heads % num_kv_heads !== 0) {
    throw fieldError(
      path,
      "num_kv_heads",
      `expected a divisor of num_heads (${num_heads}), got ${num_kv_heads}`,
    );
  }
  let head_dim = optPositiveInt(o, "head_dim", path);
  if (head_dim === undefined) {
    if (d_model % num_heads !== 0) {
      throw fieldError(
        path,
        "head_dim",
        `required: d_model ${d_model} is not a multiple of num_heads ${num_heads}`,
      );
    }
    head_dim = d_model / num_heads;
  }
  const causal = boolField(o, "causal", path, true);
  const use_rope = boolField(o, "use_rope", path, true);
  if (use_rope && head_dim % 2 !== 0) {
    throw fieldError(
      path,
      "head_dim",
      `expected an even size when use_rope is true, got ${head_dim}`,
    );
  }
  const rope_theta = numberField(o, "rope_theta", path, 10000, { above: 0 });
  const rope_style = choiceField(
    o,
    "rope_style",
    path,
    ["neox", "interleaved"] as const,
    "neox",
  );
  const rope_scaling = parseScaling(o.rope_scaling, path);
  // null (as Hugging Face configs write it) means no window.
  const sliding_window = o.sliding_window === null
    ? null
    : optPositiveInt(o, "sliding_window", path) ?? null;
  const bias = boolField(o, "bias", path, false);
  const qk_norm = o.qk_norm === null
    ? null
    : choiceField(o, "qk_norm", path, ["head", "full"] as const, "head");
  const attention_scale = o.attention_scale === null ||
      o.attention_scale === undefined
    ? null
    : numberField(o, "attention_scale", path, 1, { above: 0 });
  return {
    d_model,
    num_heads,
    num_kv_heads,
    head_dim,
    causal,
    use_rope,
    rope_theta,
    rope_style,
    rope_scaling,
    sliding_window,
    q_bias: boolField(o, "q_bias", path, bias),
    k_bias: boolField(o, "k_bias", path, bias),
    v_bias: boolField(o, "v_bias", path, bias),
    o_bias: boolField(o, "o_bias", path, bias),
    qk_norm: o.qk_norm === undefined ? null : qk_norm,
    qk_norm_eps: numberField(o, "qk_norm_eps", path, 1e-6, { above: 0 }),
    attention_scale,
  };
}

/**
 * The attention fields as JSON, every one explicit (parses back to the same config).
 *
 * @param cfg A normalized config.
 * @returns The fields, without `type`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { attentionFieldsToJSON } from "./_attention_config.ts";
 * const j = attentionFieldsToJSON({
 *   d_model: 8, num_heads: 2, num_kv_heads: 1, head_dim: 4, causal: true,
 *   use_rope: true, rope_theta: 10000, rope_style: "neox", rope_scaling: null,
 *   sliding_window: null, q_bias: false, k_bias: false, v_bias: false, o_bias: false,
 *   qk_norm: null, qk_norm_eps: 1e-6, attention_scale: null,
 * });
 * assert(j.num_kv_heads === 1 && j.rope_scaling === null);
 * ```
 */
export function attentionFieldsToJSON(
  cfg: AttentionConfig,
): Record<string, unknown> {
  return {
    d_model: cfg.d_model,
    num_heads: cfg.num_heads,
    num_kv_heads: cfg.num_kv_heads,
    head_dim: cfg.head_dim,
    causal: cfg.causal,
    use_rope: cfg.use_rope,
    rope_theta: cfg.rope_theta,
    rope_style: cfg.rope_style,
    rope_scaling: cfg.rope_scaling ? { ...cfg.rope_scaling } : null,
    sliding_window: cfg.sliding_window,
    q_bias: cfg.q_bias,
    k_bias: cfg.k_bias,
    v_bias: cfg.v_bias,
    o_bias: cfg.o_bias,
    ...(cfg.qk_norm !== null
      ? { qk_norm: cfg.qk_norm, qk_norm_eps: cfg.qk_norm_eps }
      : {}),
    ...(cfg.attention_scale !== null
      ? { attention_scale: cfg.attention_scale }
      : {}),
  };
}
