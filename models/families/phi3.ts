/**
 * Phi-3 / Phi-3.5 / Phi-4-mini: Llama's block with fused projections
 * (`qkv_proj` rows q, k, v; `gate_up_proj` rows gate, up — llama.cpp keeps
 * them fused as `attn_qkv` and `ffn_up`), partial rotary where
 * `partial_rotary_factor` says (Phi-4-mini), and LongRoPE (`longrope` /
 * `su`): frequencies divided by the short factors, cos/sin times the
 * attention factor (`√(1 + ln(max / original) / ln(original))` unless
 * given). The long factors, which transformers switches to once a sequence
 * passes `original_max_position_embeddings`, are kept (GGUF
 * `rope_factors_long`) but not run: contexts stay within the original
 * length.
 *
 * @module
 */

import type { LongRope } from "./_decoder_spec.ts";

import {
  baseFromHf,
  llamaLike,
  ropeOf,
  ropeToHf,
  rotaryDimOf,
} from "./_read.ts";
import { familyInfo } from "./_info.ts";
import type { DecoderFamilySpec } from "./_decoder_spec.ts";

/** Phi-3. */
export const phi3Spec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("phi3"),
  hfArchitecture: "Phi3ForCausalLM",
  fromHf(o, where) {
    const lr = longropeOf(o, where);
    const plain = lr
      ? { ...o, rope_parameters: ropeParamsWithout(o), rope_scaling: null }
      : o;
    const base = baseFromHf("phi3", plain, where, {
      epsKeys: ["rms_norm_eps"],
    });
    const rope = ropeOf(plain, where);
    const window = typeof o.sliding_window === "number"
      ? o.sliding_window
      : null;
    return {
      ...base,
      slidingWindow: window,
      variant: {
        ...llamaLike(
          base.numLayers,
          base.headDim,
          rope.theta,
          rope.scaling,
          window,
        ),
        fusedQkv: true,
        fusedGateUp: true,
        rotaryDim: rotaryDimOf(base.headDim, rope.partial),
        ...(lr ? { longrope: lr } : {}),
      },
    };
  },
  toHf: (cfg) => ({
    rms_norm_eps: cfg.rmsNormEps,
    hidden_act: "silu",
    sliding_window: cfg.slidingWindow,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    rope_parameters: {
      ...ropeToHf(
        cfg.ropeTheta,
        cfg.ropeScaling,
        cfg.variant!.rotaryDim / cfg.headDim,
      ),
      ...(cfg.variant!.longrope
        ? {
          rope_type: "longrope",
          short_factor: [...cfg.variant!.longrope.short],
          long_factor: [...cfg.variant!.longrope.long],
          original_max_position_embeddings: cfg.variant!.longrope.original,
          attention_factor: cfg.variant!.longrope.attnFactor,
        }
        : {}),
    },
  }),
  toGguf(cfg, put) {
    if (cfg.slidingWindow !== null) {
      put("phi3.attention.sliding_window", cfg.slidingWindow, "UINT32");
    }
    const lr = cfg.variant!.longrope;
    if (lr) {
      put("phi3.rope.scaling.attn_factor", lr.attnFactor, "FLOAT32");
      put("phi3.rope.scaling.original_context_length", lr.original, "UINT32");
    }
  },
  ggufExtraTensors(cfg) {
    const lr = cfg.variant!.longrope;
    return lr
      ? [
        {
          name: "rope_factors_long.weight",
          values: Float32Array.from(lr.long),
        },
        {
          name: "rope_factors_short.weight",
          values: Float32Array.from(lr.short),
        },
      ]
      : [];
  },
  fromGguf(get, base, _names, values) {
    const rot = get("rope.dimension_count");
    const sw = get("attention.sliding_window");
    const window = typeof sw === "number" && sw > 0 ? sw : null;
    const short = values.get("rope_factors_short.weight");
    const long = values.get("rope_factors_long.weight");
    const af = get("rope.scaling.attn_factor");
    const orig = get("rope.scaling.original_context_length");
    return {
      ...llamaLike(
        base.numLayers,
        base.headDim,
        base.ropeTheta,
        base.ropeScaling,
        window,
      ),
      fusedQkv: true,
      fusedGateUp: true,
      rotaryDim: typeof rot === "number" ? rot : base.headDim,
      ...(short
        ? {
          longrope: {
            short: [...short],
            long: long ? [...long] : [...short],
            original: typeof orig === "number"
              ? orig
              : base.maxPositionEmbeddings,
            attnFactor: typeof af === "number" ? Math.fround(af) : 1,
          },
        }
        : {}),
    };
  },
  ggufOutputRequired: true,
  hf: {
    block: ["model.layers.{i}."],
    blockStems: {
      attn_norm: "input_layernorm",
      "self_attn.qkv_proj": "self_attn.qkv_proj",
      "self_attn.o_proj": "self_attn.o_proj",
      mlp_norm: "post_attention_layernorm",
      "mlp.gate_up_proj": "mlp.gate_up_proj",
      "mlp.down_proj": "mlp.down_proj",
    },
    embedding: ["model.embed_tokens"],
    finalNorm: ["model.norm"],
    lmHead: ["lm_head"],
  },
};

type Json = Record<string, unknown>;

/** The rope parameters object (or older `rope_scaling`) when it is LongRoPE. */
function longropeRaw(o: Json): Json | undefined {
  for (const r of [o.rope_parameters, o.rope_scaling]) {
    if (r && typeof r === "object" && !Array.isArray(r)) {
      const kind = (r as Json).rope_type ?? (r as Json).type;
      if (kind === "longrope" || kind === "su") return r as Json;
    }
  }
  return undefined;
}

/** The rope parameters with the LongRoPE fields taken out (theta, partial stay). */
function ropeParamsWithout(o: Json): Json | undefined {
  const p = o.rope_parameters as Json | undefined;
  if (!p || typeof p !== "object") return undefined;
  const {
    rope_type: _t,
    type: _k,
    short_factor: _s,
    long_factor: _l,
    factor: _f,
    attention_factor: _a,
    original_max_position_embeddings: _o,
    ...rest
  } = p;
  return { ...rest, rope_type: "default" };
}

/** LongRoPE settings of a config, as transformers computes them. */
function longropeOf(o: Json, where: string): LongRope | undefined {
  const r = longropeRaw(o);
  if (!r) return undefined;
  const list = (k: string): number[] => {
    const v = r[k];
    if (
      !Array.isArray(v) ||
      !v.every((x) => typeof x === "number" && Number.isFinite(x) && x > 0)
    ) {
      throw new TypeError(
        `${where}: longrope ${k} must be a list of numbers above 0`,
      );
    }
    return v as number[];
  };
  const original = r.original_max_position_embeddings ??
    o.original_max_position_embeddings;
  const max = o.max_position_embeddings;
  if (typeof original !== "number" || typeof max !== "number") {
    throw new TypeError(
      `${where}: longrope needs original_max_position_embeddings and max_position_embeddings`,
    );
  }
  const factor = typeof r.factor === "number" ? r.factor : max / original;
  const attnFactor = typeof r.attention_factor === "number"
    ? r.attention_factor
    : factor <= 1
    ? 1
    : Math.sqrt(1 + Math.log(factor) / Math.log(original));
  return {
    short: list("short_factor"),
    long: list("long_factor"),
    original,
    attnFactor,
  };
}
