/**
 * Tensor names of Llama-family checkpoints in the three schemes we meet:
 *
 * | role | Hugging Face | GGUF (llama.cpp) | network (`buildNetwork`) |
 * | --- | --- | --- | --- |
 * | embedding | `model.embed_tokens.weight` | `token_embd.weight` | `layers.0.weight` |
 * | attention q/k/v/o | `model.layers.{n}.self_attn.{q,k,v,o}_proj.weight` | `blk.{n}.attn_{q,k,v,output}.weight` | `layers.{n+1}.self_attn.{q,k,v,o}_proj.weight` |
 * | norms | `model.layers.{n}.{input,post_attention}_layernorm.weight` | `blk.{n}.{attn,ffn}_norm.weight` | `layers.{n+1}.{input,post_attention}_layernorm.weight` |
 * | SwiGLU | `model.layers.{n}.mlp.{gate,up,down}_proj.weight` | `blk.{n}.ffn_{gate,up,down}.weight` | `layers.{n+1}.mlp.{gate,up,down}_proj.weight` |
 * | final norm | `model.norm.weight` | `output_norm.weight` | `layers.{N+1}.weight` |
 * | lm_head | `lm_head.weight` | `output.weight` | `layers.{N+2}.weight` |
 *
 * Projections may carry `.bias` in all three. GGUF files of Llama 3.1+ add
 * `rope_freqs.weight` (not a network weight). Hugging Face names are also
 * accepted without the `model.` prefix (base-model checkpoints).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseTensorName, tensorName } from "@modelhost/modelhost/models";
 * const p = parseTensorName("blk.3.attn_k.bias")!;
 * assert(p.role === "attn_k" && p.layer === 3 && p.kind === "bias");
 * assert(tensorName("hf", p) === "model.layers.3.self_attn.k_proj.bias");
 * assert(tensorName("network", p, 12) === "layers.4.self_attn.k_proj.bias");
 * ```
 *
 * @module
 */

/** What a tensor is for in a Llama-family decoder. */
export type TensorRole =
  | "embedding"
  | "attn_q"
  | "attn_k"
  | "attn_v"
  | "attn_o"
  | "attn_norm"
  | "mlp_norm"
  | "mlp_gate"
  | "mlp_up"
  | "mlp_down"
  | "final_norm"
  | "lm_head"
  | "rope_freqs"
  | "attn_q_norm"
  | "attn_k_norm"
  | "ffn_post_norm"
  | "moe_router"
  | "unknown";

/** The naming schemes. */
export type NameScheme = "hf" | "gguf" | "network";

/** A tensor name taken apart. */
export interface ParsedTensorName {
  /** The scheme the name is written in. */
  scheme: NameScheme;
  /** The tensor's role. */
  role: TensorRole;
  /** Block index (0-based), for per-block tensors. */
  layer?: number;
  /** Weight or bias. */
  kind: "weight" | "bias";
  /**
   * The expert, for `mlp_gate` / `mlp_up` / `mlp_down` of a mixture of
   * experts (Hugging Face `mlp.experts.{j}.…`, network
   * `mlp.branches.{j}.…`; GGUF stacks them in one `ffn_*_exps` tensor).
   */
  expert?: number;
}

interface BlockPart {
  role: TensorRole;
  hf: string;
  gguf: string;
}

const BLOCK_PARTS: readonly BlockPart[] = [
  { role: "attn_norm", hf: "input_layernorm", gguf: "attn_norm" },
  { role: "attn_q", hf: "self_attn.q_proj", gguf: "attn_q" },
  { role: "attn_k", hf: "self_attn.k_proj", gguf: "attn_k" },
  { role: "attn_v", hf: "self_attn.v_proj", gguf: "attn_v" },
  { role: "attn_o", hf: "self_attn.o_proj", gguf: "attn_output" },
  { role: "mlp_norm", hf: "post_attention_layernorm", gguf: "ffn_norm" },
  { role: "mlp_gate", hf: "mlp.gate_proj", gguf: "ffn_gate" },
  { role: "mlp_up", hf: "mlp.up_proj", gguf: "ffn_up" },
  { role: "mlp_down", hf: "mlp.down_proj", gguf: "ffn_down" },
  { role: "attn_q_norm", hf: "self_attn.q_norm", gguf: "attn_q_norm" },
  { role: "attn_k_norm", hf: "self_attn.k_norm", gguf: "attn_k_norm" },
  {
    role: "ffn_post_norm",
    hf: "post_feedforward_layernorm",
    gguf: "post_ffw_norm",
  },
  { role: "moe_router", hf: "mlp.gate", gguf: "ffn_gate_inp" },
];

const EXPERT_ROLES: Record<string, TensorRole> = {
  gate_proj: "mlp_gate",
  up_proj: "mlp_up",
  down_proj: "mlp_down",
};

const TOP: Record<
  "embedding" | "final_norm" | "lm_head" | "rope_freqs",
  { hf?: string; gguf?: string }
> = {
  embedding: { hf: "model.embed_tokens", gguf: "token_embd" },
  final_norm: { hf: "model.norm", gguf: "output_norm" },
  lm_head: { hf: "lm_head", gguf: "output" },
  rope_freqs: { gguf: "rope_freqs" },
};

const byHf = new Map(BLOCK_PARTS.map((p) => [p.hf, p]));
const byGguf = new Map(BLOCK_PARTS.map((p) => [p.gguf, p]));

/**
 * Takes a tensor name apart. Network names (`layers.{i}.…`) need the block
 * count to tell the embedding, the final norm and the lm_head apart.
 *
 * @param name The tensor name.
 * @param numLayers Number of blocks (only for network names).
 * @returns The parsed name, or `undefined` when it fits no scheme.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseTensorName } from "@modelhost/modelhost/models";
 * assert(parseTensorName("model.layers.0.mlp.up_proj.weight")?.role === "mlp_up");
 * assert(parseTensorName("layers.3.weight", 2)?.role === "final_norm");
 * assert(parseTensorName("vision_tower.x") === undefined);
 * ```
 */
export function parseTensorName(
  name: string,
  numLayers?: number,
): ParsedTensorName | undefined {
  const m = name.match(/^(.*)\.(weight|bias)$/);
  if (!m) return undefined;
  const [, stem, k] = m;
  const kind = k as "weight" | "bias";
  for (const [role, n] of Object.entries(TOP)) {
    if (n.gguf === stem) {
      return { scheme: "gguf", role: role as TensorRole, kind };
    }
    if (n.hf !== undefined && (n.hf === stem || `model.${stem}` === n.hf)) {
      return { scheme: "hf", role: role as TensorRole, kind };
    }
  }
  let b = stem.match(/^blk\.(\d+)\.(\w+)$/);
  if (b) {
    const p = byGguf.get(b[2]);
    if (p) return { scheme: "gguf", role: p.role, layer: Number(b[1]), kind };
    return undefined;
  }
  b = stem.match(
    /^(?:model\.)?layers\.(\d+)\.mlp\.(experts|branches)\.(\d+)\.(gate_proj|up_proj|down_proj)$/,
  );
  if (b) {
    const isNetwork = b[2] === "branches";
    if (isNetwork && (numLayers === undefined || stem.startsWith("model."))) {
      return undefined;
    }
    const i = Number(b[1]);
    if (isNetwork && (i < 1 || i > numLayers!)) return undefined;
    return {
      scheme: isNetwork ? "network" : "hf",
      role: EXPERT_ROLES[b[4]],
      layer: isNetwork ? i - 1 : i,
      kind,
      expert: Number(b[3]),
    };
  }
  b = stem.match(/^(?:model\.)?layers\.(\d+)\.(.+)$/);
  if (b) {
    const p = byHf.get(b[2]);
    if (p) {
      const isNetwork = !stem.startsWith("model.") && numLayers !== undefined;
      const i = Number(b[1]);
      if (isNetwork) {
        return i >= 1 && i <= numLayers!
          ? { scheme: "network", role: p.role, layer: i - 1, kind }
          : undefined;
      }
      return { scheme: "hf", role: p.role, layer: i, kind };
    }
    return undefined;
  }
  b = stem.match(/^layers\.(\d+)$/);
  if (b && numLayers !== undefined) {
    const i = Number(b[1]);
    const role: TensorRole | undefined = i === 0
      ? "embedding"
      : i === numLayers + 1
      ? "final_norm"
      : i === numLayers + 2
      ? "lm_head"
      : undefined;
    if (role) return { scheme: "network", role, kind };
  }
  return undefined;
}

/**
 * Writes a tensor name in a scheme.
 *
 * @param scheme The scheme.
 * @param p Role, block index (for per-block roles) and kind.
 * @param numLayers Number of blocks (only for network names).
 * @returns The name.
 * @throws {TypeError} When the role has no name in the scheme, or a
 * per-block role has no block index.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { tensorName } from "@modelhost/modelhost/models";
 * assert(tensorName("gguf", { role: "attn_o", layer: 1, kind: "weight" }) === "blk.1.attn_output.weight");
 * assert(tensorName("network", { role: "lm_head", kind: "weight" }, 4) === "layers.6.weight");
 * ```
 */
export function tensorName(
  scheme: NameScheme,
  p: Pick<ParsedTensorName, "role" | "layer" | "kind" | "expert">,
  numLayers?: number,
): string {
  const fail = (why: string) =>
    new TypeError(`No ${scheme} name for ${p.role} ${p.kind}: ${why}`);
  if (p.role in TOP) {
    const role = p.role as keyof typeof TOP;
    if (scheme === "network") {
      if (role === "rope_freqs") throw fail("it is not a network weight");
      if (numLayers === undefined) throw fail("numLayers is needed");
      const i = role === "embedding"
        ? 0
        : role === "final_norm"
        ? numLayers + 1
        : numLayers + 2;
      return `layers.${i}.${p.kind}`;
    }
    const stem = TOP[role][scheme];
    if (stem === undefined) throw fail("the scheme has none");
    return `${stem}.${p.kind}`;
  }
  const part = BLOCK_PARTS.find((x) => x.role === p.role);
  if (!part) throw fail("unknown role");
  if (p.layer === undefined) throw fail("a block index is needed");
  if (p.expert !== undefined) {
    const proj = part.hf.replace(/^mlp\./, "");
    if (scheme === "gguf") {
      throw fail("GGUF stacks the experts in one ffn_*_exps tensor");
    }
    return scheme === "hf"
      ? `model.layers.${p.layer}.mlp.experts.${p.expert}.${proj}.${p.kind}`
      : `layers.${p.layer + 1}.mlp.branches.${p.expert}.${proj}.${p.kind}`;
  }
  if (scheme === "gguf") return `blk.${p.layer}.${part.gguf}.${p.kind}`;
  if (scheme === "hf") return `model.layers.${p.layer}.${part.hf}.${p.kind}`;
  return `layers.${p.layer + 1}.${part.hf}.${p.kind}`;
}

/**
 * Renames a tensor name to another scheme.
 *
 * @param name The name, in any scheme.
 * @param to The target scheme.
 * @param numLayers Number of blocks (needed when either side is the network scheme).
 * @returns The renamed name, or `undefined` when the name is not a
 * Llama-family tensor (or has no name in the target scheme).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { renameTensor } from "@modelhost/modelhost/models";
 * assert(renameTensor("model.embed_tokens.weight", "gguf") === "token_embd.weight");
 * assert(renameTensor("blk.0.ffn_down.weight", "network", 2) === "layers.1.mlp.down_proj.weight");
 * ```
 */
export function renameTensor(
  name: string,
  to: NameScheme,
  numLayers?: number,
): string | undefined {
  const p = parseTensorName(name, numLayers);
  if (!p || p.role === "unknown") return undefined;
  if (to === "network" && p.role === "rope_freqs") return undefined;
  return tensorName(to, p, numLayers);
}
