import { assert, assertEquals } from "@std/assert";
import {
  detectArchitecture,
  networkNameOf,
  type TensorShapeInfo,
} from "../../models/mod.ts";

/** HF tensors of a small model: d 64, 2 blocks, q 4×16, kv 2×16, ff 96. */
function hfTensors(
  opts: { qkvBias?: boolean; oBias?: boolean; head?: boolean } = {},
): TensorShapeInfo[] {
  const out: TensorShapeInfo[] = [{
    name: "model.embed_tokens.weight",
    shape: [50, 64],
  }];
  for (let n = 0; n < 2; n++) {
    const p = `model.layers.${n}.`;
    out.push({ name: p + "input_layernorm.weight", shape: [64] });
    for (
      const [x, r, c] of [["q", 64, 64], ["k", 32, 64], ["v", 32, 64], [
        "o",
        64,
        64,
      ]] as const
    ) {
      out.push({ name: `${p}self_attn.${x}_proj.weight`, shape: [r, c] });
      if ((x !== "o" && opts.qkvBias) || (x === "o" && opts.oBias)) {
        out.push({ name: `${p}self_attn.${x}_proj.bias`, shape: [r] });
      }
    }
    out.push({ name: p + "post_attention_layernorm.weight", shape: [64] });
    out.push({ name: p + "mlp.gate_proj.weight", shape: [96, 64] });
    out.push({ name: p + "mlp.up_proj.weight", shape: [96, 64] });
    out.push({ name: p + "mlp.down_proj.weight", shape: [64, 96] });
  }
  out.push({ name: "model.norm.weight", shape: [64] });
  if (opts.head) out.push({ name: "lm_head.weight", shape: [50, 64] });
  return out;
}

Deno.test("detect: roles of every tensor, llama from shapes, guesses listed", () => {
  const d = detectArchitecture([...hfTensors({ head: true }), {
    name: "model.layers.0.self_attn.rotary_emb.inv_freq",
    shape: [8],
  }]);
  assertEquals(d.family, "llama");
  assertEquals(d.naming, "hf");
  assertEquals(
    d.tensors.find((t) => t.name.endsWith("k_proj.weight"))?.role,
    "attn_k",
  );
  assertEquals(
    d.tensors.find((t) => t.name === "lm_head.weight")?.role,
    "lm_head",
  );
  assertEquals(d.tensors.at(-1)?.role, "unknown");
  assert(
    d.notes.some((n) => n.includes("1 tensor(s) with no Llama-family role")),
  );
  const c = d.config!;
  assertEquals([c.hiddenSize, c.numLayers, c.intermediateSize, c.vocabSize], [
    64,
    2,
    96,
    50,
  ]);
  // the head size is a guess: 64 below 4096 wide when it divides q and kv, else the next that does
  assertEquals([c.headDim, c.numHeads, c.numKvHeads, c.tieWordEmbeddings], [
    32,
    2,
    1,
    false,
  ]);
  assertEquals(d.guessed, [
    "headDim",
    "rmsNormEps",
    "ropeTheta",
    "maxPositionEmbeddings",
  ]);
  assertEquals(d.network!.layers.length, 5);
  const head = d.tensors.find((t) => t.role === "lm_head")!;
  assertEquals(networkNameOf(head, 2), "layers.4.weight");
});

Deno.test("detect: qwen2 from q/k/v biases without an o bias; tied without lm_head", () => {
  const d = detectArchitecture(hfTensors({ qkvBias: true }));
  assertEquals(d.family, "qwen2");
  assertEquals(d.config!.tieWordEmbeddings, true);
  assertEquals(d.config!.attentionBias, {
    q: true,
    k: true,
    v: true,
    o: false,
  });
  assertEquals(
    detectArchitecture(hfTensors({ qkvBias: true, oBias: true })).family,
    "llama",
  );
});

Deno.test("detect: a config.json decides the sizes; disagreeing shapes leave no config", () => {
  const cfgJson = {
    model_type: "mistral",
    vocab_size: 50,
    hidden_size: 64,
    intermediate_size: 96,
    num_hidden_layers: 2,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    sliding_window: 128,
    tie_word_embeddings: true,
  };
  const d = detectArchitecture(hfTensors(), cfgJson);
  assertEquals(d.family, "mistral");
  assertEquals([d.config!.headDim, d.config!.slidingWindow], [8, 128]);
  assertEquals(d.guessed, []);
  const bad = detectArchitecture(hfTensors(), {
    ...cfgJson,
    intermediate_size: 100,
  });
  assertEquals(bad.family, "mistral");
  assertEquals(bad.config, undefined);
  assert(
    bad.notes.some((n) =>
      n.includes(
        "model.layers.0.mlp.gate_proj.weight has shape [96, 64], the mistral config expects [100, 64]",
      )
    ),
  );
});

Deno.test("detect: GGUF names with metadata; non-decoders are unknown", () => {
  const gguf = hfTensors().map((t) => ({
    ...t,
    name: t.name
      .replace("model.embed_tokens", "token_embd").replace(
        "model.norm",
        "output_norm",
      )
      .replace(/model\.layers\.(\d+)\./, "blk.$1.")
      .replace("input_layernorm", "attn_norm").replace(
        "post_attention_layernorm",
        "ffn_norm",
      )
      .replace("self_attn.o_proj", "attn_output").replace(
        /self_attn\.(\w)_proj/,
        "attn_$1",
      )
      .replace(/mlp\.(\w+)_proj/, "ffn_$1"),
  }));
  const md = {
    "general.architecture": "llama",
    "llama.embedding_length": 64,
    "llama.block_count": 2,
    "llama.feed_forward_length": 96,
    "llama.attention.head_count": 4,
    "llama.attention.head_count_kv": 2,
    "llama.vocab_size": 50,
  };
  const d = detectArchitecture(gguf, md);
  assertEquals([d.family, d.naming, d.config?.ropeStyle], [
    "llama",
    "gguf",
    "interleaved",
  ]);
  assertEquals(d.tensors[1].role, "attn_norm");
  const bert = detectArchitecture([{
    name: "embeddings.word_embeddings.weight",
    shape: [10, 4],
  }]);
  assertEquals([bert.family, bert.config], ["unknown", undefined]);
  assert(
    bert.notes.some((n) =>
      n.startsWith("not a Llama-family decoder: no embedding")
    ),
  );
  const noBlocks = detectArchitecture(
    hfTensors().filter((t) => !t.name.includes("mlp.up_proj")),
  );
  assertEquals(noBlocks.family, "unknown");
  assert(noBlocks.notes.some((n) => n.includes("block 0 mlp_up")));
});
