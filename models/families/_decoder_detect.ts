/**
 * Which `decoder_block` family a set of tensor names belongs to, from the
 * names alone (Hugging Face or GGUF scheme). Gemma 1 uses Llama's names in
 * both schemes, so only a config tells it apart.
 *
 * @module
 */

import type { DecoderFamily } from "./_decoder_spec.ts";

/** The family whose tensor names these are, or undefined. */
export function familyFromNames(
  names: readonly string[],
): DecoderFamily | undefined {
  const set = new Set(names);
  const any = (re: RegExp) => names.some((n) => re.test(n));
  // Hugging Face names
  if (any(/(^|\.)h\.\d+\.attn\.c_attn\.weight$/)) return "gpt2";
  if (any(/\.self_attn\.qkv_proj\.weight$/) && any(/\.mlp\.gate_up_proj\./)) {
    return "phi3";
  }
  if (any(/\.self_attn\.dense\.weight$/) && any(/\.mlp\.fc1\.weight$/)) {
    return "phi";
  }
  if (any(/layers\.\d+\.pre_feedforward_layernorm\.weight$/)) {
    return any(/layers\.\d+\.self_attn\.q_norm\.weight$/)
      ? "gemma3_text"
      : "gemma2";
  }
  if (any(/layers\.\d+\.mlp\.c_fc\.weight$/)) return "starcoder2";
  if (
    any(/layers\.\d+\.input_layernorm\.bias$/) &&
    any(/layers\.\d+\.mlp\.gate_proj\.weight$/)
  ) return "stablelm";
  // GGUF names
  const blk = (s: string) => set.has(`blk.0.${s}`);
  if (set.has("position_embd.weight") && blk("attn_qkv.weight")) return "gpt2";
  // OLMo 2 has post-norms too, but no pre-norm (attn_norm)
  if (blk("post_ffw_norm.weight") && blk("attn_norm.weight")) {
    return blk("attn_q_norm.weight") ? "gemma3_text" : "gemma2";
  }
  if (blk("attn_norm.bias")) {
    if (!blk("ffn_norm.weight")) return "phi";
    return blk("ffn_gate.weight") ? "stablelm" : "starcoder2";
  }
  if (blk("attn_qkv.weight") && !blk("ffn_gate.weight")) return "phi3";
  return undefined;
}
