// multi_head_attention with a key-padding mask (batched rows of different
// lengths), against PyTorch's scaled_dot_product_attention
// (tests/vectors/attention_mask.json from tests/vectors/gen/attention_mask.py)
// and against ONNX Runtime running our export with an attention_mask input.
import { assert, assertEquals, assertThrows } from "@std/assert";
import { buildNetwork, initNetwork } from "../../core/network.ts";
import { floatTensor, tensorFromF32 } from "../../core/tensor.ts";
import { exportOnnx } from "../../formats/onnx/mod.ts";
import { multiHeadAttentionLayer } from "../../layers/attention.ts";
import { defaultRegistry } from "../../mod.ts";
import { ort } from "../formats/_ort.ts";
import {
  assertClose,
  buildCase,
  type LayerCase,
} from "./_attention_vectors.ts";

const V = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/attention_mask.json", import.meta.url),
  ),
) as { cases: (LayerCase & { mask: number[] })[] };

for (const c of V.cases) {
  const [B, T, Dm] = c.input.shape;
  const x = () => floatTensor(new Float32Array(c.input.data), [B, T, Dm]);

  Deno.test(`attention mask (${c.name}): a padded batch equals PyTorch's masked attention`, () => {
    const layer = buildCase(multiHeadAttentionLayer, c);
    const y = layer.forward(x(), undefined, { attentionMask: c.mask });
    assertEquals(y.shape, [B, T, Dm]);
    assertClose(y.data, c.output.data, 1e-5, c.name);
    // without the mask the padded rows differ (the mask is not a no-op)
    const plain = layer.forward(x()).data;
    let diff = 0;
    for (let i = 0; i < plain.length; i++) {
      diff = Math.max(diff, Math.abs(plain[i] - c.output.data[i]));
    }
    assert(diff > 1e-3, `${c.name}: unmasked output equals masked (${diff})`);
  });

  Deno.test(`attention mask (${c.name}): ONNX Runtime on our export with attention_mask equals PyTorch`, async () => {
    const reg = defaultRegistry();
    const config = { layers: [c.config] };
    const init = initNetwork(reg, config, 1);
    const tensors = new Map(
      [...init.keys()].map((n) => {
        const short = n.slice(n.lastIndexOf(".", n.lastIndexOf(".") - 1) + 1);
        const w = c.weights[short];
        assert(w, `no reference weight for ${n}`);
        return [n, tensorFromF32(n, new Float32Array(w.data), w.shape)];
      }),
    );
    const net = buildNetwork(reg, config, tensors);
    // Network.forward hands the mask to its layers
    assertClose(
      net.forward(x(), undefined, { attentionMask: c.mask }).data,
      c.output.data,
      1e-5,
      `${c.name} (Network.forward)`,
    );
    const bytes = exportOnnx(net, {
      attentionMask: true,
      maxSequenceLength: 16,
    });
    const session = await ort.InferenceSession.create(bytes);
    try {
      assertEquals([...session.inputNames].sort(), ["attention_mask", "input"]);
      const out = await session.run({
        input: new ort.Tensor("float32", new Float32Array(c.input.data), [
          B,
          T,
          Dm,
        ]),
        attention_mask: new ort.Tensor(
          "int64",
          BigInt64Array.from(c.mask.map(BigInt)),
          [B, T],
        ),
      });
      const y = out[session.outputNames[0]];
      assertEquals(y.dims.map(Number), [B, T, Dm]);
      assertClose(y.data as Float32Array, c.output.data, 1e-5, c.name);
    } finally {
      await session.release();
    }
  });
}

Deno.test("attention mask: Network.forward refuses a mask that is no array", () => {
  const reg = defaultRegistry();
  const config = { layers: [V.cases[0].config] };
  const net = buildNetwork(reg, config, initNetwork(reg, config, 1));
  const [B, T, Dm] = V.cases[0].input.shape;
  assertThrows(
    () =>
      net.forward(
        floatTensor(new Float32Array(B * T * Dm), [B, T, Dm]),
        undefined,
        {
          attentionMask: 5 as unknown as number[],
        },
      ),
    TypeError,
    "attentionMask must be an array",
  );
});

Deno.test("attention mask: wrong length or a KV cache is refused", () => {
  const c = V.cases[0];
  const layer = buildCase(multiHeadAttentionLayer, c);
  const [B, T, Dm] = c.input.shape;
  const x = floatTensor(new Float32Array(c.input.data), [B, T, Dm]);
  assertThrows(
    () => layer.forward(x, undefined, { attentionMask: c.mask.slice(1) }),
    TypeError,
    "19 entries for a [4, 5] batch",
  );
  assertThrows(
    () => layer.forward(x, {}, { attentionMask: c.mask }),
    TypeError,
    "KV cache",
  );
});

Deno.test("attention: a sliding window that is not causal runs without a mask (all keys real) and refuses a KV cache", () => {
  const c = V.cases.find((k) => k.name === "bidirectional window")!;
  const layer = buildCase(multiHeadAttentionLayer, c);
  const [, T, Dm] = c.input.shape;
  // row 0 has no padding: the layer alone (no mask) gives PyTorch's values
  const row0 = floatTensor(new Float32Array(c.input.data.slice(0, T * Dm)), [
    1,
    T,
    Dm,
  ]);
  assertClose(
    layer.forward(row0).data,
    c.output.data.slice(0, T * Dm),
    1e-5,
    c.name,
  );
  assertThrows(() => layer.forward(row0, {}), TypeError, "not causal");
  assertThrows(
    () =>
      defaultRegistry().layer("decoder_block").parse({
        type: "decoder_block",
        d_model: 8,
        num_heads: 2,
        intermediate_size: 16,
        causal: false,
        sliding_window: 4,
      }, { path: "layers[0]", parseChild: () => ({}) as never }),
    TypeError,
    "layers[0].sliding_window: expected null when causal is false, got 4",
  );
});
