import { assert, assertEquals, assertThrows } from "@std/assert";
import { parseNetwork } from "../../core/network.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import {
  configFromGguf,
  configFromHf,
  configToGguf,
  configToHf,
  FAMILIES,
  transformerNetwork,
} from "../../models/mod.ts";
import { createRegistry } from "../../registry.ts";

const BASE = {
  vocab_size: 100,
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 3,
  num_attention_heads: 8,
};

Deno.test("configFromHf: unknown model_type names the supported families", () => {
  const e = assertThrows(
    () => configFromHf({ ...BASE, model_type: "gpt_neox" }),
    TypeError,
    'model_type "gpt_neox" is not supported; supported: llama (',
  );
  for (const f of FAMILIES) assert(e.message.includes(f.modelType));
  assertThrows(
    () => configFromHf({ ...BASE }),
    TypeError,
    "model_type nothing",
  );
});

Deno.test("configFromHf: sizes, activation and rope scaling are checked", () => {
  assertThrows(
    () =>
      configFromHf({ ...BASE, model_type: "llama", hidden_size: undefined }),
    TypeError,
    'config.json: "hidden_size" must be a positive integer, got nothing',
  );
  assertThrows(
    () => configFromHf({ ...BASE, model_type: "llama", hidden_act: "gelu" }),
    TypeError,
    'hidden_act "gelu" is not supported',
  );
  assertThrows(
    () =>
      configFromHf({
        ...BASE,
        model_type: "llama",
        rope_scaling: { type: "yarn", factor: 4 },
      }),
    TypeError,
    'rope_scaling type "yarn" is not supported (supported: linear, llama3)',
  );
  assertThrows(
    () =>
      configFromHf({ ...BASE, model_type: "llama", num_attention_heads: 7 }),
    TypeError,
    "hidden_size 64 is not a multiple of num_attention_heads 7",
  );
});

Deno.test("configFromHf: family specifics", () => {
  const llama = configFromHf({ ...BASE, model_type: "llama" });
  assertEquals(llama.numKvHeads, 8);
  assertEquals(llama.headDim, 8);
  assertEquals(llama.rmsNormEps, 1e-6);
  assertEquals(llama.ropeStyle, "neox");
  assertEquals(llama.attentionBias, { q: false, k: false, v: false, o: false });

  const smol = configFromHf({
    ...BASE,
    model_type: "llama",
    num_key_value_heads: 2,
    head_dim: 16,
    tie_word_embeddings: true,
    attention_bias: true,
    eos_token_id: [2, 7],
  });
  assertEquals([smol.headDim, smol.numKvHeads, smol.tieWordEmbeddings], [
    16,
    2,
    true,
  ]);
  assertEquals(smol.attentionBias.o, true);
  assertEquals(smol.eosTokenIds, [2, 7]);

  assertEquals(
    configFromHf({ ...BASE, model_type: "mistral", sliding_window: 4096 })
      .slidingWindow,
    4096,
  );
  assertEquals(
    configFromHf({ ...BASE, model_type: "mistral", sliding_window: null })
      .slidingWindow,
    null,
  );
  const qwen = configFromHf({
    ...BASE,
    model_type: "qwen2",
    sliding_window: 4096,
    use_sliding_window: false,
  });
  assertEquals(qwen.slidingWindow, null);
  assertEquals(qwen.attentionBias, { q: true, k: true, v: true, o: false });
  const l3 = configFromHf({
    ...BASE,
    model_type: "llama",
    rope_scaling: {
      rope_type: "llama3",
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8192,
    },
  });
  assertEquals(l3.ropeScaling?.rope_type, "llama3");
});

Deno.test("configToHf / configFromHf round trip, and the network parses with the right parameters", () => {
  const cfg = configFromHf({
    ...BASE,
    model_type: "qwen2",
    num_key_value_heads: 2,
    tie_word_embeddings: true,
    rope_theta: 1e6,
  });
  assertEquals(configFromHf(configToHf(cfg)), cfg);
  const spec = parseNetwork(
    createRegistry().use(LAYER_PLUGINS),
    transformerNetwork(cfg),
  );
  assertEquals(spec.layers.length, 3 + 3);
  assertEquals(spec.outputSize, 100);
  const names = spec.layers[1].plugin.params(spec.layers[1].cfg).map((p) =>
    p.name
  );
  assert(
    names.includes("self_attn.q_proj.bias") &&
      !names.includes("self_attn.o_proj.bias"),
  );
});

const GGUF_MD = {
  "general.architecture": "llama",
  "llama.embedding_length": 64,
  "llama.block_count": 2,
  "llama.feed_forward_length": 96,
  "llama.attention.head_count": 4,
  "llama.attention.head_count_kv": 2,
  "llama.attention.layer_norm_rms_epsilon": Math.fround(1e-5),
  "llama.rope.freq_base": 500000,
  "llama.context_length": 4096,
  "llama.vocab_size": 50,
};

Deno.test("configFromGguf: llama hyperparameters, interleaved rotary, ties from tensors", () => {
  const cfg = configFromGguf(GGUF_MD, [
    "token_embd.weight",
    "blk.0.attn_q.bias",
  ]);
  assertEquals(cfg.family, "llama");
  assertEquals(cfg.headDim, 16);
  assertEquals(cfg.rmsNormEps, 1e-5); // the float32 value read back as its short decimal
  assertEquals(cfg.ropeStyle, "interleaved");
  assertEquals(cfg.tieWordEmbeddings, true);
  assertEquals(cfg.attentionBias.q, true);
  const qwen = configFromGguf(
    Object.fromEntries(
      Object.entries(GGUF_MD).map((
        [k, v],
      ) => [
        k.replace(/^llama\./, "qwen2."),
        k === "general.architecture" ? "qwen2" : v,
      ]),
    ),
    ["output.weight"],
  );
  assertEquals([qwen.family, qwen.ropeStyle, qwen.tieWordEmbeddings], [
    "qwen2",
    "neox",
    false,
  ]);
  const mistral = configFromGguf({
    ...GGUF_MD,
    "llama.attention.sliding_window": 4096,
  }, []);
  assertEquals([mistral.family, mistral.slidingWindow], ["mistral", 4096]);
});

Deno.test("configFromGguf: refuses other architectures, partial rotary, uneven blocks", () => {
  assertThrows(
    () => configFromGguf({ "general.architecture": "mamba" }, []),
    TypeError,
    'GGUF file: general.architecture "mamba" is not supported; supported: llama, qwen2',
  );
  assertThrows(
    () => configFromGguf({ ...GGUF_MD, "llama.rope.dimension_count": 8 }, []),
    TypeError,
    "llama.rope.dimension_count 8 differs from the head size 16; partial rotary is not supported",
  );
  assertThrows(
    () =>
      configFromGguf(
        { ...GGUF_MD, "llama.attention.head_count_kv": [2, 4] },
        [],
      ),
    TypeError,
    "llama.attention.head_count_kv differs between blocks ([2,4])",
  );
  assertEquals(
    configFromGguf({ ...GGUF_MD, "llama.attention.head_count_kv": [2, 2] }, [])
      .numKvHeads,
    2,
  );
  assertThrows(
    () => configFromGguf({ ...GGUF_MD, "llama.rope.scaling.type": "yarn" }, []),
    TypeError,
    'rope.scaling.type "yarn" is not supported',
  );
});

Deno.test("configToGguf: llama.cpp keys with their types; reads back to the same config", () => {
  const cfg = configFromHf({
    ...BASE,
    model_type: "llama",
    num_key_value_heads: 2,
    head_dim: 16,
    rms_norm_eps: 1e-5,
    rope_scaling: { type: "linear", factor: 2 },
  });
  const { values, types } = configToGguf(cfg, "tiny");
  assertEquals(values["general.architecture"], "llama");
  assertEquals(values["llama.attention.key_length"], 16); // head_dim · heads ≠ hidden
  assertEquals(types["llama.attention.layer_norm_rms_epsilon"], "FLOAT32");
  assertEquals(
    values["llama.attention.layer_norm_rms_epsilon"],
    Math.fround(1e-5),
  );
  assertEquals(values["llama.rope.scaling.type"], "linear");
  const back = configFromGguf(values, ["output.weight"]);
  assertEquals(back, { ...cfg, ropeStyle: "interleaved", eosTokenIds: [] });
});
