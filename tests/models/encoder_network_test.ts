// BERT-family encoders as networks of layer plugins (models/encoder_network.ts):
// our forward and ONNX Runtime on the ONNX export (padded batch with
// attention_mask) give sentence-transformers' embeddings (the vectors of
// tests/vectors/gen/encoders.py), pooled and normalized as the folder says.
import { assert, assertEquals, assertThrows } from "@std/assert";
import { fromFileUrl } from "@std/path";
import { buildNetwork } from "../../core/network.ts";
import { floatTensor, type Tensor } from "../../core/tensor.ts";
import { exportOnnx } from "../../formats/onnx/mod.ts";
import { openSafetensors } from "../../io/safetensors.ts";
import {
  encoderConfigFromHf,
  encoderTensorName,
} from "../../models/encoder_config.ts";
import { encoderNetwork } from "../../models/encoder_network.ts";
import { defaultRegistry } from "../../mod.ts";
import { ort } from "../formats/_ort.ts";

const DIR = fromFileUrl(new URL("../vectors/encoders/", import.meta.url));
const CASES = [
  "bert-mean",
  "bert-cls",
  "bert-max",
  "roberta-mean",
  "xlm-roberta-cls",
];

interface Expected {
  ids: number[][];
  pooling: string;
  normalize: boolean;
  embeddings: number[][];
}

async function load(name: string) {
  const hf = JSON.parse(await Deno.readTextFile(`${DIR}${name}/config.json`));
  const config = encoderConfigFromHf(hf);
  const file = await openSafetensors(`${DIR}${name}`);
  const tensors = new Map<string, Tensor>();
  try {
    const index = file.models[0].tensors;
    for (const n of index.names()) {
      const to = encoderTensorName(n);
      if (to) tensors.set(to, { ...(await index.load(n)), name: to });
    }
  } finally {
    file.close();
  }
  return { config, hf, net: encoderNetwork(config, tensors) };
}

/** Pools `len` rows of `h` (row stride d) as sentence-transformers does. */
function pool(h: ArrayLike<number>, len: number, d: number, exp: Expected) {
  const v = new Float64Array(d);
  if (exp.pooling === "cls") {
    for (let j = 0; j < d; j++) v[j] = h[j];
  } else if (exp.pooling === "max") {
    v.fill(-Infinity);
    for (let t = 0; t < len; t++) {
      for (let j = 0; j < d; j++) v[j] = Math.max(v[j], h[t * d + j]);
    }
  } else {
    for (let t = 0; t < len; t++) {
      for (let j = 0; j < d; j++) v[j] += h[t * d + j] / len;
    }
  }
  const n = exp.normalize ? Math.hypot(...v) : 1;
  return Array.from(v, (x) => x / n);
}

function close(got: number[], want: number[], what: string) {
  let worst = 0;
  for (let j = 0; j < want.length; j++) {
    worst = Math.max(worst, Math.abs(got[j] - want[j]));
  }
  assert(worst <= 1e-4, `${what}: max |diff| ${worst}`);
}

for (const name of CASES) {
  Deno.test(`encoder network ${name}: layer plugins and ONNX Runtime equal sentence-transformers`, async () => {
    const exp = JSON.parse(
      await Deno.readTextFile(`${DIR}${name}/expected.json`),
    ) as Expected;
    const { config, hf, net: en } = await load(name);
    const d = config.hiddenSize;
    const net = buildNetwork(defaultRegistry(), en.config, en.tensors);
    for (const [i, ids] of exp.ids.entries()) {
      const y = net.forward(
        floatTensor(Float32Array.from(ids), [1, ids.length]),
      );
      close(pool(y.data, ids.length, d, exp), exp.embeddings[i], `text ${i}`);
    }
    // the ONNX export on the whole batch, right-padded with the pad id
    const B = exp.ids.length, T = Math.max(...exp.ids.map((r) => r.length));
    const ids = new BigInt64Array(B * T).fill(BigInt(hf.pad_token_id ?? 0));
    const mask = new BigInt64Array(B * T);
    exp.ids.forEach((r, b) =>
      r.forEach((id, t) => {
        ids[b * T + t] = BigInt(id);
        mask[b * T + t] = 1n;
      })
    );
    const bytes = exportOnnx(net, {
      attentionMask: true,
      maxSequenceLength: config.maxPositions,
    });
    const session = await ort.InferenceSession.create(bytes);
    try {
      assertEquals(
        [...session.inputNames].sort(),
        ["attention_mask", "input_ids"],
      );
      const out = await session.run({
        input_ids: new ort.Tensor("int64", ids, [B, T]),
        attention_mask: new ort.Tensor("int64", mask, [B, T]),
      });
      const h = out[session.outputNames[0]];
      assertEquals(h.dims.map(Number), [B, T, d]);
      const data = h.data as Float32Array;
      for (const [b, r] of exp.ids.entries()) {
        close(
          pool(data.subarray(b * T * d), r.length, d, exp),
          exp.embeddings[b],
          `ONNX text ${b}`,
        );
      }
    } finally {
      await session.release();
    }
  });
}

Deno.test("encoder network: rotary / gated families are refused with a TypeError", () => {
  const c = encoderConfigFromHf({
    model_type: "modernbert",
    vocab_size: 50,
    hidden_size: 8,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    intermediate_size: 16,
  });
  assertThrows(() => encoderNetwork(c, new Map()), TypeError, "modernbert");
});
