/**
 * Config parsing shared by the attention and transformer-block plugins:
 * field checks that throw `TypeError` naming the layer path and the field,
 * and the attention fields with their defaults.
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import type { ParseContext } from "../core/plugin.ts";
import type { RopeScaling, RopeStyle } from "../kernels/rope.ts";

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
  /** Mistral-style window: a token sees at most this many tokens (itself included), or null. */
  sliding_window: number | null;
  /** Whether `q_proj` has a bias. */
  q_bias: boolean;
  /** Whether `k_proj` has a bias. */
  k_bias: boolean;
  /** Whether `v_proj` has a bias. */
  v_bias: boolean;
  /** Whether `o_proj` has a bias. */
  o_bias: boolean;
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
];

/** Reads fields of one layer's JSON, blaming the layer path and field. */
export interface FieldReader {
  /** Throws the `TypeError` for a field. */
  fail(field: string, problem: string): never;
  /** A positive integer, or the default when absent (required when no default). */
  posInt(field: string, fallback?: number): number;
  /** A finite number > 0, or the default when absent. */
  posNumber(field: string, fallback?: number): number;
  /** A boolean, or the default when absent. */
  bool(field: string, fallback: boolean): boolean;
  /** One of `choices`, or the default when absent. */
  choice<T extends string>(
    field: string,
    choices: readonly T[],
    fallback: T,
  ): T;
}

const show = (v: unknown): string =>
  v === undefined ? "undefined" : JSON.stringify(v) ?? String(v);

/**
 * Creates a {@link FieldReader} over a layer's JSON; also rejects fields
 * outside `known` (typos fail loudly instead of being ignored).
 *
 * @param json The layer definition.
 * @param ctx The parse context (for the path).
 * @param known Allowed field names besides `type`.
 * @returns The reader.
 * @throws {TypeError} When the JSON has a field not in `known`.
 *
 * @example
 * ```ts
 * import { fieldReader } from "./_attention_config.ts";
 * const ctx = { path: "layers[0]", parseChild: () => { throw new Error(); } };
 * const r = fieldReader({ type: "x", n: 3 }, ctx, ["n"]);
 * console.assert(r.posInt("n") === 3 && r.bool("flag", true));
 * ```
 */
export function fieldReader(
  json: LayerConfig,
  ctx: ParseContext,
  known: readonly string[],
): FieldReader {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new TypeError(
      `Invalid layer at ${ctx.path}: expected an object, got ${show(json)}`,
    );
  }
  const type = String(json.type);
  const fail = (field: string, problem: string): never => {
    throw new TypeError(
      `Invalid ${type} config at ${ctx.path}: "${field}" ${problem}`,
    );
  };
  for (const key of Object.keys(json)) {
    if (key !== "type" && !known.includes(key)) {
      fail(key, `is not a field of ${type}; known fields: ${known.join(", ")}`);
    }
  }
  const get = (field: string): unknown => json[field];
  return {
    fail,
    posInt(field, fallback) {
      const v = get(field);
      if (v === undefined || v === null) {
        if (fallback !== undefined) return fallback;
        return fail(field, "is required");
      }
      if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) {
        fail(field, `must be a positive integer, got ${show(v)}`);
      }
      return v as number;
    },
    posNumber(field, fallback) {
      const v = get(field);
      if (v === undefined || v === null) {
        if (fallback !== undefined) return fallback;
        return fail(field, "is required");
      }
      if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
        fail(field, `must be a finite number > 0, got ${show(v)}`);
      }
      return v as number;
    },
    bool(field, fallback) {
      const v = get(field);
      if (v === undefined || v === null) return fallback;
      if (typeof v !== "boolean") {
        fail(field, `must be true or false, got ${show(v)}`);
      }
      return v as boolean;
    },
    choice(field, choices, fallback) {
      const v = get(field);
      if (v === undefined || v === null) return fallback;
      if (!choices.includes(v as never)) {
        fail(field, `must be one of ${choices.join(", ")}; got ${show(v)}`);
      }
      return v as typeof choices[number];
    },
  };
}

function parseScaling(raw: unknown, r: FieldReader): RopeScaling | null {
  if (raw === undefined || raw === null) return null;
  const field = "rope_scaling";
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return r.fail(field, `must be null or an object, got ${show(raw)}`);
  }
  const o = raw as Record<string, unknown>;
  // Hugging Face spells the kind `rope_type` (newer configs) or `type`.
  const kind = o.rope_type ?? o.type;
  const num = (key: string, int = false): number => {
    const v = o[key];
    if (
      typeof v !== "number" || !Number.isFinite(v) || v <= 0 ||
      (int && !Number.isInteger(v))
    ) {
      return r.fail(
        `${field}.${key}`,
        `must be a ${int ? "positive integer" : "number > 0"}, got ${show(v)}`,
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
      original_max_position_embeddings: num(
        "original_max_position_embeddings",
        true,
      ),
    };
    if (s.high_freq_factor <= s.low_freq_factor) {
      r.fail(
        `${field}.high_freq_factor`,
        `must be greater than low_freq_factor (${s.low_freq_factor}), got ${s.high_freq_factor}`,
      );
    }
    return s;
  }
  return r.fail(
    `${field}.rope_type`,
    `${show(kind)} is not supported; supported: default, linear, llama3`,
  );
}

/**
 * Parses the attention fields of a layer's JSON (an attention layer, or a
 * transformer block that carries them), filling defaults and inferring
 * `d_model` from the previous layer.
 *
 * @param json The layer definition.
 * @param ctx The parse context.
 * @param r A reader over the same JSON.
 * @returns The normalized config.
 * @throws {TypeError} Naming `ctx.path` and the field when a value is wrong.
 *
 * @example
 * ```ts
 * import { fieldReader, parseAttentionFields, ATTENTION_FIELDS } from "./_attention_config.ts";
 * const ctx = { path: "layers[0]", inputSize: 8, parseChild: () => { throw new Error(); } };
 * const json = { type: "mha", num_heads: 2 };
 * const cfg = parseAttentionFields(json, ctx, fieldReader(json, ctx, ATTENTION_FIELDS));
 * console.assert(cfg.d_model === 8 && cfg.head_dim === 4 && cfg.num_kv_heads === 2);
 * ```
 */
export function parseAttentionFields(
  json: LayerConfig,
  ctx: ParseContext,
  r: FieldReader,
): AttentionConfig {
  let d_model: number;
  if (json.d_model === undefined || json.d_model === null) {
    if (ctx.inputSize === undefined) {
      r.fail("d_model", "is required (no previous layer to infer it from)");
    }
    d_model = ctx.inputSize!;
  } else {
    d_model = r.posInt("d_model");
    if (ctx.inputSize !== undefined && ctx.inputSize !== d_model) {
      r.fail(
        "d_model",
        `is ${d_model} but the previous layer outputs ${ctx.inputSize} features`,
      );
    }
  }
  const num_heads = r.posInt("num_heads");
  const num_kv_heads = r.posInt("num_kv_heads", num_heads);
  if (num_heads % num_kv_heads !== 0) {
    r.fail(
      "num_kv_heads",
      `(${num_kv_heads}) must divide num_heads (${num_heads})`,
    );
  }
  let head_dim: number;
  if (json.head_dim === undefined || json.head_dim === null) {
    if (d_model % num_heads !== 0) {
      r.fail(
        "head_dim",
        `is required: d_model ${d_model} is not a multiple of num_heads ${num_heads}`,
      );
    }
    head_dim = d_model / num_heads;
  } else head_dim = r.posInt("head_dim");
  const causal = r.bool("causal", true);
  const use_rope = r.bool("use_rope", true);
  if (use_rope && head_dim % 2 !== 0) {
    r.fail("head_dim", `must be even when use_rope is true, got ${head_dim}`);
  }
  const rope_theta = r.posNumber("rope_theta", 10000);
  const rope_style = r.choice(
    "rope_style",
    ["neox", "interleaved"] as const,
    "neox",
  );
  const rope_scaling = parseScaling(json.rope_scaling, r);
  const sliding_window = json.sliding_window === undefined ||
      json.sliding_window === null
    ? null
    : r.posInt("sliding_window");
  if (sliding_window !== null && !causal) {
    r.fail("sliding_window", "needs causal: true");
  }
  const bias = r.bool("bias", false);
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
    q_bias: r.bool("q_bias", bias),
    k_bias: r.bool("k_bias", bias),
    v_bias: r.bool("v_bias", bias),
    o_bias: r.bool("o_bias", bias),
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
 * import { attentionFieldsToJSON } from "./_attention_config.ts";
 * const j = attentionFieldsToJSON({
 *   d_model: 8, num_heads: 2, num_kv_heads: 1, head_dim: 4, causal: true,
 *   use_rope: true, rope_theta: 10000, rope_style: "neox", rope_scaling: null,
 *   sliding_window: null, q_bias: false, k_bias: false, v_bias: false, o_bias: false,
 * });
 * console.assert(j.num_kv_heads === 1 && j.rope_scaling === null);
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
  };
}
