/**
 * ONNX lowering of `decoder_block` over a whole `[batch, seq, d_model]`
 * input (a prefill from position 0, no cache): norms (RMS or Layer),
 * fused or separate projections, q/k norms, partial rotary from stored
 * cos/sin tables (LongRoPE: the long ones when the sequence is longer than
 * `rope_long_after`), grouped-query scores with the block's scale and
 * soft-capping, the causal / sliding-window mask, the gated or plain MLP,
 * sandwich norms and the parallel residual.
 *
 * @module
 */

import type { OnnxBuilder, Scope } from "../core/plugin.ts";
import { ONNX_MAX_SEQUENCE } from "./attention.ts";
import {
  type DecoderBlockConfig,
  decoderRopeFrequencies,
  decoderRopeTable,
} from "./decoder_block.ts";
import {
  activationOnnx,
  ints,
  layerNormOnnx,
  linearOnnx,
  maskScoresOnnx,
  rmsNormOnnx,
  scalar,
  sliceLast,
} from "./_onnx.ts";

/**
 * The block as ONNX nodes.
 *
 * @param g The builder.
 * @param cfg The block config.
 * @param w The block's weights.
 * @param input `[batch, seq, d_model]`.
 * @returns The `[batch, seq, d_model]` output.
 */
export function decoderBlockOnnx(
  g: OnnxBuilder,
  cfg: DecoderBlockConfig,
  w: Scope,
  input: string,
): string {
  const d = cfg.d_model, f = cfg.intermediate_size;
  const H = cfg.num_heads, KV = cfg.num_kv_heads, D = cfg.head_dim;
  const qDim = H * D, kvDim = KV * D;
  const norm = (name: string, x: string, size = d) => {
    const weight = g.weight(w, `${name}.weight`, { shape: [size] });
    if (cfg.norm === "rms") return rmsNormOnnx(g, x, weight, cfg.norm_eps);
    const bias = cfg.norm_bias
      ? g.weight(w, `${name}.bias`, { shape: [size] })
      : undefined;
    return layerNormOnnx(g, x, weight, bias, cfg.norm_eps);
  };
  const proj = (
    name: string,
    x: string,
    out: number,
    inn: number,
    b: boolean,
  ) =>
    linearOnnx(g, w, x, `${name}.weight`, b ? `${name}.bias` : undefined, [
      out,
      inn,
    ]);
  const n = norm("attn_norm", input);
  let q: string, k: string, v: string;
  if (cfg.fused_qkv) {
    const all = proj("self_attn.qkv_proj", n, qDim + 2 * kvDim, d, cfg.q_bias);
    q = sliceLast(g, all, 0, qDim);
    k = sliceLast(g, all, qDim, qDim + kvDim);
    v = sliceLast(g, all, qDim + kvDim, qDim + 2 * kvDim);
  } else {
    q = proj("self_attn.q_proj", n, qDim, d, cfg.q_bias);
    k = proj("self_attn.k_proj", n, kvDim, d, cfg.k_bias);
    v = proj("self_attn.v_proj", n, kvDim, d, cfg.v_bias);
  }
  const heads = (x: string, c: number) =>
    g.op("Reshape", [x, ints(g, [0, 0, c, D])]);
  q = heads(q, H);
  k = heads(k, KV);
  v = heads(v, KV);
  if (cfg.qk_norm) {
    const qn = g.weight(w, "self_attn.q_norm.weight", { shape: [D] });
    const kn = g.weight(w, "self_attn.k_norm.weight", { shape: [D] });
    q = rmsNormOnnx(g, q, qn, cfg.qk_norm_eps);
    k = rmsNormOnnx(g, k, kn, cfg.qk_norm_eps);
  }
  const shape = g.op("Shape", [input]);
  const R = cfg.rotary_dim;
  if (R > 0) {
    const half = R / 2;
    const limit = (g.options.maxSequenceLength ?? ONNX_MAX_SEQUENCE) as number;
    const table = decoderRopeTable(cfg, decoderRopeFrequencies(cfg), limit);
    const seqLen = g.op("Slice", [shape, ints(g, [1]), ints(g, [2])]);
    const rows = (t: Float32Array) =>
      g.op("Unsqueeze", [
        g.op("Slice", [
          g.constant("F32", [table.length, half], t),
          ints(g, [0]),
          seqLen,
          ints(g, [0]),
        ]),
        ints(g, [1]),
      ]);
    let cos = rows(table.cos), sin = rows(table.sin);
    if (cfg.rope_long_factors && cfg.rope_long_after !== null) {
      // LongRoPE: a sequence longer than rope_long_after runs the long
      // factors at every position (a prefill from 0: its length decides).
      const long = decoderRopeTable(
        cfg,
        decoderRopeFrequencies(cfg, true),
        limit,
      );
      const isLong = g.op("Greater", [
        seqLen,
        ints(g, [cfg.rope_long_after]),
      ]);
      cos = g.op("Where", [isLong, rows(long.cos), cos]);
      sin = g.op("Where", [isLong, rows(long.sin), sin]);
    }
    const rope = (x: string) => {
      const a = sliceLast(g, x, 0, half), b = sliceLast(g, x, half, R);
      const ra = g.op("Sub", [g.op("Mul", [a, cos]), g.op("Mul", [b, sin])]);
      const rb = g.op("Add", [g.op("Mul", [b, cos]), g.op("Mul", [a, sin])]);
      const parts = [ra, rb];
      if (R < D) parts.push(sliceLast(g, x, R, D));
      return g.op("Concat", parts, { axis: -1 });
    };
    if (cfg.rope_style !== "neox") {
      throw new TypeError(
        "decoder_block ONNX lowering: only the neox rotary layout is supported",
      );
    }
    q = rope(q);
    k = rope(k);
  }
  const group = H / KV;
  let qh = g.op("Transpose", [q], { perm: [0, 2, 1, 3] });
  let kt = g.op("Transpose", [k], { perm: [0, 2, 3, 1] });
  let vh = g.op("Transpose", [v], { perm: [0, 2, 1, 3] });
  if (group > 1) {
    qh = g.op("Reshape", [qh, ints(g, [0, KV, group, -1, D])]);
    kt = g.op("Unsqueeze", [kt, ints(g, [2])]);
    vh = g.op("Unsqueeze", [vh, ints(g, [2])]);
  }
  let scores = g.op("Mul", [
    g.op("MatMul", [qh, kt]),
    scalar(g, cfg.attention_scale ?? 1 / Math.sqrt(D)),
  ]);
  if (cfg.attn_softcap !== null) {
    const c = cfg.attn_softcap;
    scores = g.op("Mul", [
      g.op("Tanh", [g.op("Mul", [scores, scalar(g, 1 / c)])]),
      scalar(g, c),
    ]);
  }
  if (cfg.causal) {
    scores = maskScoresOnnx(g, shape, scores, true, cfg.sliding_window);
  }
  const p = g.op("Softmax", [scores], { axis: -1 });
  let ctx = g.op("MatMul", [p, vh]);
  if (group > 1) ctx = g.op("Reshape", [ctx, ints(g, [0, H, -1, D])]);
  const merged = g.op("Reshape", [
    g.op("Transpose", [ctx], { perm: [0, 2, 1, 3] }),
    ints(g, [0, 0, qDim]),
  ]);
  let a = proj("self_attn.o_proj", merged, d, qDim, cfg.o_bias);
  if (cfg.post_norms) a = norm("attn_post_norm", a);
  const h = g.op("Add", [input, a]);
  const mn = cfg.parallel ? n : norm("mlp_norm", h);
  let hidden: string;
  if (cfg.mlp === "gated") {
    let gate: string, up: string;
    if (cfg.fused_gate_up) {
      const both = proj("mlp.gate_up_proj", mn, 2 * f, d, cfg.mlp_bias);
      gate = sliceLast(g, both, 0, f);
      up = sliceLast(g, both, f, 2 * f);
    } else {
      gate = proj("mlp.gate_proj", mn, f, d, cfg.mlp_bias);
      up = proj("mlp.up_proj", mn, f, d, cfg.mlp_bias);
    }
    hidden = g.op("Mul", [activationOnnx(g, cfg.activation, gate, 0), up]);
  } else {
    hidden = activationOnnx(
      g,
      cfg.activation,
      proj("mlp.up_proj", mn, f, d, cfg.mlp_bias),
      0,
    );
  }
  let m = proj("mlp.down_proj", hidden, d, f, cfg.mlp_bias);
  if (cfg.post_norms) m = norm("mlp_post_norm", m);
  return g.op("Add", [h, m]);
}
