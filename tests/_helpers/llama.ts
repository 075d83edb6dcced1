/**
 * Tiny generated Llama checkpoints (Hugging Face tensor names) for tests
 * and the fuzz targets: each test picks its sizes and how the matrices are
 * filled, so the bytes stay those the test was written against.
 */

import { memoryTensorIndex, type ModelFile } from "../../core/model.ts";
import { type Tensor, tensorFromF32 } from "../../core/tensor.ts";

/** The sizes a generated Llama checkpoint is built from. */
export interface LlamaSizes {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
}

/**
 * Element `i` of a `rows`×`cols` matrix; `matrix` counts the matrices made
 * so far (0 for the embedding). Called in order, element by element and
 * matrix by matrix, so a stateful fill sees the same sequence every time.
 */
export type LlamaFill = (
  i: number,
  rows: number,
  cols: number,
  matrix: number,
) => number;

/**
 * The tensors of a Llama checkpoint: embedding, per block the two norms
 * (all ones) and seven projections (`kvRows` rows for k and v), the final
 * norm, and an untied `lm_head` when `lmHead` is set.
 */
export function llamaTensors(
  sizes: LlamaSizes,
  kvRows: number,
  fill: LlamaFill,
  lmHead = false,
): Tensor[] {
  const d = sizes.hidden_size, f = sizes.intermediate_size;
  let matrix = 0;
  const mat = (name: string, r: number, c: number) => {
    const m = matrix++;
    return tensorFromF32(
      name,
      Float32Array.from({ length: r * c }, (_, i) => fill(i, r, c, m)),
      [r, c],
    );
  };
  const ones = (name: string) =>
    tensorFromF32(name, new Float32Array(d).fill(1), [d]);
  const list = [mat("model.embed_tokens.weight", sizes.vocab_size, d)];
  for (let n = 0; n < sizes.num_hidden_layers; n++) {
    const p = `model.layers.${n}.`;
    list.push(
      ones(p + "input_layernorm.weight"),
      mat(p + "self_attn.q_proj.weight", d, d),
      mat(p + "self_attn.k_proj.weight", kvRows, d),
      mat(p + "self_attn.v_proj.weight", kvRows, d),
      mat(p + "self_attn.o_proj.weight", d, d),
      ones(p + "post_attention_layernorm.weight"),
      mat(p + "mlp.gate_proj.weight", f, d),
      mat(p + "mlp.up_proj.weight", f, d),
      mat(p + "mlp.down_proj.weight", d, f),
    );
  }
  list.push(ones("model.norm.weight"));
  if (lmHead) list.push(mat("lm_head.weight", sizes.vocab_size, d));
  return list;
}

/** A one-model file (id "m", no metadata) holding `tensors` in memory. */
export function llamaModelFile(tensors: Tensor[]): ModelFile {
  return {
    models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }],
  };
}
