import { assert, assertEquals } from "@std/assert";
import { initNetwork } from "../../core/network.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import {
  bundleFormat,
  loadBundle,
  saveBundle,
  validate,
  validateBundle,
} from "../../formats/bundle/mod.ts";
import { memorySource } from "../../core/sources.ts";
import { defaultRegistry } from "../../mod.ts";

const reg = defaultRegistry();
const t = (name: string, values: number[], shape: number[]): Tensor =>
  tensorFromF32(name, new Float32Array(values), shape);

Deno.test("validate: a saved and reloaded network is clean", async () => {
  const cfg = {
    input_size: 4,
    layers: [
      { type: "dense", output_size: 8, activation: "relu" },
      { type: "layer_norm" },
      { type: "dense", output_size: 3, activation: "softmax" },
    ],
  };
  const text = await saveBundle([{
    id: "clf",
    config: cfg,
    tensors: initNetwork(reg, cfg, 1),
  }]);
  const [m] = (await loadBundle(text)).models;
  const r = await validate(m);
  assertEquals(r, {
    model: "clf",
    ok: true,
    problems: [],
    outputShape: [1, 3],
  });
});

Deno.test("validate: missing, extra, wrong shape and NaN weights are all listed, and the forward still runs", async () => {
  const cfg = {
    input_size: 2,
    layers: [
      { type: "dense", output_size: 2 },
      { type: "dense", output_size: 1 },
    ],
  };
  const r = await validate({
    id: "broken",
    config: cfg,
    tensors: [
      t("layers.0.weight", [1, 0, 0, NaN], [2, 2]),
      // layers.0.bias missing
      t("layers.1.weight", [1, 1, 1], [1, 3]),
      t("layers.1.bias", [0.5], [1]),
      t("layers.7.weight", [1], [1]),
    ],
  });
  assert(!r.ok);
  assertEquals(r.problems.map((p) => [p.kind, p.tensor]), [
    ["missing", "layers.0.bias"],
    ["extra", "layers.7.weight"],
    ["shape", "layers.1.weight"],
    ["weights", "layers.0.weight"],
    ["output", undefined],
  ]);
  assertEquals(r.problems[0].message, 'missing tensor "layers.0.bias" [2]');
  assertEquals(
    r.problems[2].message,
    'tensor "layers.1.weight" has shape [1, 3], the network expects [1, 2]',
  );
  assertEquals(
    r.problems[3].message,
    'tensor "layers.0.weight" holds 1 NaN of 4 values',
  );
  // Zero input: layer 0 gives [0·1 + 0·0, 0·0 + 0·NaN] = [0, NaN]; layer 1
  // (replaced by zeros) gives 0·0 + 0·NaN + 0.5 = NaN.
  assertEquals(
    r.problems[4].message,
    "the output [1, 1] of a zero input holds 1 NaN of 1 values",
  );
  assertEquals(r.outputShape, [1, 1]);
});

Deno.test("validate: finite weights whose output overflows to Inf", async () => {
  // 3e38 + 3e38 overflows F32: Inf without any Inf in the weights.
  const r = await validate({
    id: "big",
    config: { input_size: 1, layers: [{ type: "dense", output_size: 2 }] },
    tensors: [
      t("layers.0.weight", [1, 1], [2, 1]),
      t("layers.0.bias", [3e38, -3e38], [2]),
    ],
  }, { input: floatTensor(new Float32Array([3e38]), [1, 1]) });
  assertEquals(r.problems.map((p) => p.kind), ["output"]);
  assertEquals(
    r.problems[0].message,
    "the output [1, 2] of a given input holds 1 Inf of 2 values",
  );
});

Deno.test("validate: config problems, no config, undecodable dtypes and failing forwards", async () => {
  const bad = await validate({
    id: "x",
    config: { input_size: 2, layers: [{ type: "dense", output_size: -3 }] },
    tensors: [],
  });
  assertEquals(bad.problems.map((p) => p.kind), ["config"]);
  assert(bad.problems[0].message.includes("layers[0].output_size"));

  const none = await validate({ id: "raw", tensors: [] });
  assertEquals(none.problems, [{
    kind: "config",
    message: 'model "raw" has no network config to run',
  }]);

  const q: Tensor = {
    name: "layers.0.weight",
    dtype: "IQ4_NL", // a block of 32 needs 18 bytes: one short, not decodable
    shape: [1, 32],
    bytes: new Uint8Array(17),
  };
  const dt = await validate({
    id: "q",
    config: {
      input_size: 32,
      layers: [{ type: "dense", output_size: 1, bias: false }],
    },
    tensors: [q],
  });
  assertEquals(dt.problems.map((p) => [p.kind, p.tensor]), [[
    "dtype",
    "layers.0.weight",
  ]]);

  const resCfg = {
    input_size: 3,
    layers: [{ type: "dense", output_size: 2 }, { type: "residual" }],
  };
  const res = await validate({ id: "res", config: resCfg, tensors: [] });
  assertEquals(res.problems.map((p) => p.kind), ["config"]);

  const embCfg = {
    layers: [{ type: "embedding", vocab_size: 5, embedding_dim: 2 }],
  };
  const fwd = await validate(
    { id: "emb", config: embCfg, tensors: initNetwork(reg, embCfg, 0) },
    { input: floatTensor(new Float32Array([7]), [1, 1]) },
  );
  assertEquals(fwd.problems.map((p) => p.kind), ["forward"]);
  assert(
    fwd.problems[0].message.startsWith(
      "the forward pass on input [1, 1] failed:",
    ),
    fwd.problems[0].message,
  );
});

Deno.test("validate: token-id networks run on a zero id", async () => {
  const cfg = {
    layers: [
      { type: "embedding", vocab_size: 5, embedding_dim: 3 },
      { type: "dense", output_size: 2 },
    ],
  };
  const r = await validate({
    id: "tok",
    config: cfg,
    tensors: initNetwork(reg, cfg, 2),
  });
  assertEquals(r.problems, []);
  assertEquals(r.outputShape, [1, 1, 2]);
});

Deno.test("validateBundle / the plugin's validate hook: every model's problems, one bad model not hiding another", async () => {
  const cfg = { input_size: 2, layers: [{ type: "dense", output_size: 2 }] };
  const text = await saveBundle([
    { id: "a", config: cfg, tensors: initNetwork(reg, cfg, 1) },
    {
      id: "b",
      config: cfg,
      tensors: [t("layers.0.weight", [1, 0, 0, 1], [2, 2])],
    },
    { id: "c", tensors: [t("x", [1], [1])] },
  ]);
  const doc = JSON.parse(text);
  doc.models[0].weights.tensors["layers.0.bias"].sha256 = "0".repeat(64);
  const problems = await validateBundle(JSON.stringify(doc));
  assertEquals(problems.length, 2);
  assert(
    problems[0].startsWith(
      'model "a": Checksum mismatch in tensor "layers.0.bias"',
    ),
  );
  assertEquals(problems[1], 'model "b": missing tensor "layers.0.bias" [2]');
  const viaPlugin = await bundleFormat().validate(
    memorySource(new TextEncoder().encode(JSON.stringify(doc))),
  );
  assertEquals(viaPlugin, problems);
  assertEquals(await validateBundle(text.replace('"b"', '"c"')), [
    'Cannot read bundle: two models have the id "c"',
  ]);
  assertEquals(
    (await validateBundle("nope"))[0].startsWith(
      "Cannot read bundle: not JSON",
    ),
    true,
  );
});
