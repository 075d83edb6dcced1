// BERT-family encoders as networks of layer plugins (models/encoder_network.ts):
// our forward and ONNX Runtime on the ONNX export (padded batch with
// attention_mask) give sentence-transformers' embeddings (the vectors of
// tests/vectors/gen/encoders.py), pooled and normalized as the folder says.
import { assert, assertEquals } from "@std/assert";
import { fromFileUrl } from "@std/path";
import { buildNetwork, type Network } from "../../core/network.ts";
import { floatTensor, type Tensor } from "../../core/tensor.ts";
import { exportOnnx } from "../../formats/onnx/mod.ts";
import { convertEncoderToGguf } from "../../io/encoder.ts";
import { openModel } from "../../io/open.ts";
import { openSafetensors } from "../../io/safetensors.ts";
import { buildEncoder } from "../../models/encoder.ts";
import {
  encoderConfigFromGguf,
  encoderConfigFromHf,
  encoderTensorName,
} from "../../models/encoder_config.ts";
import { encoderNetwork } from "../../models/encoder_network.ts";
import { defaultRegistry } from "../../mod.ts";
import { ort } from "../formats/_ort.ts";
import {
  ENCODER_CASES,
  ENCODERS_DIR,
  type ExpectedEmbeddings,
  readExpected,
} from "../_helpers/encoder_vectors.ts";

async function load(name: string) {
  const hf = JSON.parse(
    await Deno.readTextFile(`${ENCODERS_DIR}${name}/config.json`),
  );
  const config = encoderConfigFromHf(hf);
  const file = await openSafetensors(`${ENCODERS_DIR}${name}`);
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
  return { config, hf, tensors, net: encoderNetwork(config, tensors) };
}

/** Pools `len` rows of `h` (row stride d) as sentence-transformers does. */
function pool(
  h: ArrayLike<number>,
  len: number,
  d: number,
  exp: ExpectedEmbeddings,
) {
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

/** Every element within `tol` × the largest magnitude of `want`. */
function closeRel(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  tol: number,
  what: string,
) {
  assertEquals(got.length, want.length, what);
  let worst = 0, scale = 0;
  for (let j = 0; j < want.length; j++) {
    worst = Math.max(worst, Math.abs(got[j] - want[j]));
    scale = Math.max(scale, Math.abs(want[j]));
  }
  assert(worst <= tol * scale, `${what}: max |diff| ${worst} (scale ${scale})`);
}

/**
 * The network of layer plugins `en` describes, and each text's token
 * vectors from it and from `buildEncoder` (the model path) on the same
 * tensors.
 */
function bothPaths(
  config: ReturnType<typeof encoderConfigFromHf>,
  en: ReturnType<typeof encoderNetwork>,
  tensors: Map<string, Tensor>,
  texts: number[][],
): { net: Network; pairs: [Float32Array, Float32Array][] } {
  const net = buildNetwork(defaultRegistry(), en.config, en.tensors);
  const packed = buildEncoder(config, tensors).forward(
    texts.map((ids) => ({ ids })),
  );
  const pairs = texts.map((ids, i): [Float32Array, Float32Array] => [
    net.forward(floatTensor(Float32Array.from(ids), [1, ids.length])).data,
    packed[i],
  ]);
  return { net, pairs };
}

for (const name of ENCODER_CASES) {
  Deno.test(`encoder network ${name}: layer plugins and ONNX Runtime equal sentence-transformers`, async () => {
    const exp = await readExpected(name);
    const { config, hf, tensors, net: en } = await load(name);
    const d = config.hiddenSize;
    const { net, pairs } = bothPaths(config, en, tensors, exp.ids);
    pairs.forEach(([y, packed], i) => {
      const n = exp.ids[i].length;
      close(pool(y, n, d, exp), exp.embeddings[i], `text ${i}`);
      // the model path (models/encoder.ts) gives the same token vectors
      closeRel(y, packed, 1e-5, `text ${i} against buildEncoder`);
    });
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
    // the same padded batch through Network.forward with the mask
    const y = net.forward(
      floatTensor(Float32Array.from(ids, Number), [B, T]),
      undefined,
      { attentionMask: Array.from(mask, Number) },
    );
    assertEquals(y.shape, [B, T, d]);
    const unmasked = net.forward(
      floatTensor(Float32Array.from(ids, Number), [B, T]),
    );
    let moved = 0;
    for (const [b, r] of exp.ids.entries()) {
      close(
        pool(y.data.subarray(b * T * d), r.length, d, exp),
        exp.embeddings[b],
        `masked network text ${b}`,
      );
      const u = pool(unmasked.data.subarray(b * T * d), r.length, d, exp);
      for (let j = 0; j < d; j++) {
        moved = Math.max(moved, Math.abs(u[j] - exp.embeddings[b][j]));
      }
    }
    // without the mask, the padded rows see their padding
    assert(moved > 1e-3, `unmasked equals masked (${moved})`);
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

// Fused projections (qkv, ModernBERT's Wi) are split by rows in their stored
// dtype: from our F16 and Q8_0 GGUF, the layer network gives the model path's
// vectors. (Q8_0 quantizes activations too, so float-rounding differences of
// the two paths can move an activation code: a looser bound; a misplaced row
// would be off by the vectors' own size.)
for (
  const [name, quantize, tol] of [
    ["nomic-bert-mean", "F16", 1e-5],
    ["modernbert-mean", "F16", 1e-5],
    ["nomic-bert-mean", "Q8_0", 5e-3],
    ["modernbert-mean", "Q8_0", 5e-3],
  ] as const
) {
  Deno.test(`encoder network ${name}: ${quantize} GGUF tensors split in place equal the model path`, async () => {
    const exp = await readExpected(name);
    const dir = await Deno.makeTempDir();
    try {
      const out = `${dir}/m.gguf`;
      await convertEncoderToGguf(`${ENCODERS_DIR}${name}`, out, { quantize });
      const { config } = await load(name);
      const opened = await openModel(defaultRegistry(), out);
      try {
        const index = opened.file.models[0].tensors;
        const tensors = new Map<string, Tensor>();
        for (const n of index.names()) tensors.set(n, await index.load(n));
        const qkv = [...tensors.values()].find((t) =>
          t.name.endsWith("attn_qkv.weight")
        );
        assertEquals(qkv?.dtype, quantize);
        const en = encoderNetwork(config, tensors);
        assertEquals(
          en.tensors.get("layers.2.layers.0.q_proj.weight")?.dtype,
          quantize,
        );
        const { pairs } = bothPaths(config, en, tensors, exp.ids);
        pairs.forEach(([y, packed], i) =>
          closeRel(y, packed, tol, `text ${i}`)
        );
      } finally {
        opened.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

// GGUF files written by llama.cpp's own converter (F16,
// tests/vectors/gen/encoders_llama_convert.py): their tensors and metadata
// make the same layer networks, which give sentence-transformers' vectors
// within F16's rounding.
for (
  const name of [
    "bert-mean",
    "nomic-bert-mean",
    "modernbert-mean",
    "xlm-roberta-unigram",
  ]
) {
  Deno.test(`encoder network ${name}: from llama.cpp's converter's GGUF equals sentence-transformers`, async () => {
    const exp = await readExpected(name);
    const opened = await openModel(
      defaultRegistry(),
      fromFileUrl(
        new URL(
          `../vectors/encoders_llama_convert/${name}.gguf`,
          import.meta.url,
        ),
      ),
    );
    try {
      const m = opened.file.models[0];
      const index = m.tensors;
      const rows = (n: string) => index.has(n) ? index.info(n).shape[0] : 0;
      const config = encoderConfigFromGguf(
        m.metadata as Record<string, unknown>,
        rows("token_types.weight"),
        rows("token_embd.weight"),
      );
      const tensors = new Map<string, Tensor>();
      for (const n of index.names()) tensors.set(n, await index.load(n));
      const en = encoderNetwork(config, tensors);
      const net = buildNetwork(defaultRegistry(), en.config, en.tensors);
      for (const [i, ids] of exp.ids.entries()) {
        const y = net.forward(
          floatTensor(Float32Array.from(ids), [1, ids.length]),
        );
        const v = pool(y.data, ids.length, config.hiddenSize, exp);
        let worst = 0;
        for (let j = 0; j < v.length; j++) {
          worst = Math.max(worst, Math.abs(v[j] - exp.embeddings[i][j]));
        }
        assert(worst <= 1e-3, `text ${i}: max |diff| ${worst}`);
      }
    } finally {
      opened.close();
    }
  });
}
