/**
 * Fuzz targets for the binary formats: SafeTensors, GGUF (any file, and
 * Llama models with their hyperparameters), npy and npz (the example
 * plugin). Each keeps a few valid seed files and mutates them knowing their
 * structure; `run` reads the result and checks what was accepted.
 *
 * @module
 */

import type { Rng } from "../../core/rng.ts";
import { memorySource } from "../../core/sources.ts";
import { memoryTensorIndex, type ModelFile } from "../../core/model.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { byteLengthOf, dtypeInfo } from "../../core/dtypes.ts";
import {
  readSafetensors,
  serializeSafetensors,
} from "../../formats/safetensors/mod.ts";
import { readGguf, writeGgufBytes } from "../../formats/gguf/mod.ts";
import {
  checkTransformerFile,
  hfToGguf,
  transformerFromGguf,
} from "../../models/mod.ts";
import {
  encodeNpy,
  readNpy,
  readNpz,
  writeNpz,
} from "../../examples/plugins/npy/mod.ts";
import { llamaTensors as sharedLlamaTensors } from "../../tests/_helpers/llama.ts";
import { type FuzzTarget, WrongAcceptance } from "./harness.ts";
import {
  INTERESTING_INTS,
  jsonText,
  mutateBytes,
  mutateJson,
  pick,
  text,
  utf8,
} from "./_mutate.ts";

/**
 * Loads every tensor of an accepted file and checks it against its own
 * header: shape entries are safe non-negative integers, the bytes have the
 * length the dtype and shape give, and float dtypes decode to that many
 * values.
 */
export async function checkModelFile(
  file: ModelFile,
  what: string,
): Promise<void> {
  for (const m of file.models) {
    for (const name of m.tensors.names()) {
      const info = m.tensors.info(name);
      if (!info.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
        throw new WrongAcceptance(
          `${what}: tensor ${name} has shape [${info.shape}]`,
        );
      }
      const t = await m.tensors.load(name);
      const count = t.shape.reduce((a, b) => a * b, 1);
      const want = byteLengthOf(t.dtype, count);
      if (t.bytes.byteLength !== want) {
        throw new WrongAcceptance(
          `${what}: tensor ${name} (${t.dtype} [${t.shape}]) has ${t.bytes.byteLength} bytes, its header means ${want}`,
        );
      }
      if (dtypeInfo(t.dtype).toF32 && count <= 1 << 20) {
        const f = toFloat32(t);
        if (f.length !== count) {
          throw new WrongAcceptance(
            `${what}: tensor ${name} decodes to ${f.length} values, not ${count}`,
          );
        }
      }
    }
  }
}

function raw(
  name: string,
  dtype: string,
  shape: number[],
  seed: number,
): Tensor {
  const n = byteLengthOf(dtype as never, shape.reduce((a, b) => a * b, 1));
  const bytes = Uint8Array.from(
    { length: n },
    (_, i) => (i * 37 + seed) & 0xff,
  );
  if (dtype === "BOOL") bytes.forEach((_, i) => (bytes[i] &= 1));
  return { name, dtype: dtype as Tensor["dtype"], shape, bytes };
}

function file(
  tensors: Tensor[],
  metadata: Record<string, unknown> = {},
): ModelFile {
  return {
    models: [{ id: "m", metadata, tensors: memoryTensorIndex(tensors) }],
  };
}

function once<T>(f: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= f());
}

// ---- SafeTensors ----

const safetensorsSeeds = once(async () => [
  await serializeSafetensors(
    file([
      tensorFromF32("a", Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]),
      raw("b", "F16", [4], 1),
      raw("c", "BF16", [2, 2], 2),
      raw("d", "I8", [3], 3),
      raw("e", "BOOL", [2], 4),
      raw("f", "I64", [1], 5),
    ], { note: "seed" }),
    { sha256: true },
  ),
  await serializeSafetensors(
    file([tensorFromF32("w", new Float32Array(16).fill(0.5), [4, 4])]),
  ),
]);

function splitSafetensors(
  b: Uint8Array,
): { header: string; data: Uint8Array } | undefined {
  if (b.length < 8) return undefined;
  const n = Number(new DataView(b.buffer, b.byteOffset).getBigUint64(0, true));
  if (n > b.length - 8) return undefined;
  return { header: text(b.subarray(8, 8 + n)), data: b.subarray(8 + n) };
}

function packSafetensors(
  header: string,
  data: Uint8Array,
  lie = 0,
): Uint8Array {
  const h = utf8(header);
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length + lie), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

const safetensorsTarget: FuzzTarget = {
  name: "safetensors",
  async generate(rng: Rng): Promise<Uint8Array> {
    const seed = pick(rng, await safetensorsSeeds());
    const parts = splitSafetensors(seed)!;
    if (rng.next() < 0.6) {
      const h = mutateJson(rng, JSON.parse(parts.header));
      const lie = rng.next() < 0.1 ? pick(rng, [-1, 1, 8]) : 0;
      return packSafetensors(jsonText(h), parts.data, lie);
    }
    return mutateBytes(rng, seed, 8 + parts.header.length);
  },
  async run(input: Uint8Array): Promise<void> {
    const f = await readSafetensors(memorySource(input, "fuzz.safetensors"));
    await checkModelFile(f, "safetensors");
  },
};

// ---- GGUF (any file) ----

const ggufSeeds = once(async () => {
  const md = {
    "general.architecture": "test",
    "general.name": "seed",
    "test.count": 7,
    "test.ratio": 0.25,
    "test.flag": true,
    "test.names": ["a", "b", "c"],
    "test.ids": [1, 2, 3],
  };
  const plain = file([
    tensorFromF32(
      "x",
      Float32Array.from({ length: 64 }, (_, i) => Math.sin(i)),
      [2, 32],
    ),
    raw("y", "F16", [8], 3),
  ], md);
  return {
    md,
    bytes: [
      await writeGgufBytes(plain),
      await writeGgufBytes(
        file([
          tensorFromF32(
            "q",
            Float32Array.from({ length: 512 }, (_, i) => Math.cos(i)),
            [2, 256],
          ),
        ], md),
        { quantize: "Q8_0" },
      ),
      await writeGgufBytes(
        file([
          tensorFromF32(
            "k",
            Float32Array.from({ length: 512 }, (_, i) => Math.cos(i)),
            [2, 256],
          ),
        ], md),
        { quantize: "Q4_K" },
      ),
    ],
  };
});

const ggufTarget: FuzzTarget = {
  name: "gguf",
  async generate(rng: Rng): Promise<Uint8Array> {
    const s = await ggufSeeds();
    if (rng.next() < 0.3) {
      // metadata-level: odd values, keys and types through the writer
      const md = mutateJson(rng, structuredClone(s.md)) as Record<
        string,
        unknown
      >;
      try {
        return await writeGgufBytes(file([raw("y", "F16", [8], 3)], md));
      } catch {
        // a value the writer cannot hold: fall through to bytes
      }
    }
    return mutateBytes(rng, pick(rng, s.bytes), 400, 6);
  },
  async run(input: Uint8Array): Promise<void> {
    const f = await readGguf(memorySource(input, "fuzz.gguf"));
    await checkModelFile(f, "gguf");
  },
};

// ---- GGUF Llama models: hyperparameters against tensors ----

const HF_CONFIG = {
  model_type: "llama",
  vocab_size: 16,
  hidden_size: 8,
  intermediate_size: 12,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  tie_word_embeddings: true,
};

function llamaTensors(): Tensor[] {
  return sharedLlamaTensors(HF_CONFIG, 4, (i, r) => Math.sin(i + r) * 0.3);
}

const llamaSeed = once(async () => {
  const g = hfToGguf({ config: HF_CONFIG, model: file(llamaTensors()) });
  const tensors = await Promise.all(
    g.models[0].tensors.names().map((n) => g.models[0].tensors.load(n)),
  );
  return { md: g.models[0].metadata, tensors, bytes: await writeGgufBytes(g) };
});

const HYPER = [
  "llama.block_count",
  "llama.embedding_length",
  "llama.attention.head_count",
  "llama.attention.head_count_kv",
  "llama.feed_forward_length",
  "llama.rope.dimension_count",
  "llama.context_length",
  "llama.vocab_size",
  "llama.attention.key_length",
  "llama.attention.layer_norm_rms_epsilon",
  "llama.rope.freq_base",
  "llama.attention.sliding_window",
  "general.architecture",
];

const ggufModelTarget: FuzzTarget = {
  name: "gguf-model",
  async generate(rng: Rng): Promise<Uint8Array> {
    const s = await llamaSeed();
    if (rng.next() < 0.8) {
      const md: Record<string, unknown> = { ...s.md };
      delete md["gguf.types"];
      const edits = 1 + rng.int(3);
      for (let i = 0; i < edits; i++) {
        const key = pick(rng, HYPER);
        const r = rng.next();
        md[key] = r < 0.6
          ? pick(rng, [
            ...INTERESTING_INTS.filter((x) => x >= 0 && x < 2 ** 32),
            4,
            5,
            6,
            8,
            16,
            24,
            32,
          ])
          : r < 0.7
          ? pick(rng, ["llama", "qwen2", "__proto__", "x"])
          : r < 0.8
          ? [1, 2, 3]
          : undefined;
        if (md[key] === undefined) delete md[key];
      }
      let tensors = s.tensors;
      if (rng.next() < 0.3) {
        // drop a tensor, or move a block's tensor to another block index
        const i = rng.int(tensors.length);
        tensors = tensors.slice();
        if (rng.next() < 0.5) tensors.splice(i, 1);
        else {
          tensors[i] = {
            ...tensors[i],
            name: tensors[i].name.replace(
              /^blk\.\d+/,
              `blk.${pick(rng, [3, 4, 7, 1023, 99999])}`,
            ),
          };
        }
      }
      try {
        return await writeGgufBytes(file(tensors, md));
      } catch {
        // the writer refused the edit: mutate bytes instead
      }
    }
    return mutateBytes(rng, s.bytes, 1200, 3);
  },
  async run(input: Uint8Array): Promise<void> {
    const f = await readGguf(memorySource(input, "fuzz.gguf"));
    await checkModelFile(f, "gguf-model");
    let checked: unknown;
    try {
      checkTransformerFile(f, { name: "fuzz.gguf" });
    } catch (e) {
      checked = e;
    }
    let model;
    try {
      model = await transformerFromGguf(f, { name: "fuzz.gguf" });
    } catch (e) {
      if (checked === undefined) {
        if (
          !(e instanceof RangeError || e instanceof TypeError ||
            e instanceof SyntaxError)
        ) throw e;
        throw new WrongAcceptance(
          `checkTransformerFile accepted a model the loader refuses: ${
            (e as Error).message
          }`,
        );
      }
      throw e;
    }
    if (checked !== undefined) {
      throw new WrongAcceptance(
        `the loader built a model checkTransformerFile refuses: ${
          (checked as Error).message
        }`,
      );
    }
    const logits = model.forward([0, 1]);
    if (logits.length !== model.config.vocabSize) {
      throw new WrongAcceptance(
        `forward gave ${logits.length} logits for a vocabulary of ${model.config.vocabSize}`,
      );
    }
  },
};

// ---- npy / npz ----

const npySeeds = once(() =>
  Promise.resolve([
    encodeNpy(
      tensorFromF32("a", Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]),
    ),
    encodeNpy(raw("b", "I8", [5], 2)),
    encodeNpy(raw("c", "F16", [2, 2], 1)),
    encodeNpy(raw("d", "BOOL", [3], 1)),
  ])
);

function npyHeader(b: Uint8Array): { start: number; len: number } | undefined {
  if (b.length < 10) return undefined;
  const major = b[6];
  const dv = new DataView(b.buffer, b.byteOffset);
  return major === 1
    ? { start: 10, len: dv.getUint16(8, true) }
    : { start: 12, len: dv.getUint32(8, true) };
}

const npyTarget: FuzzTarget = {
  name: "npy",
  async generate(rng: Rng): Promise<Uint8Array> {
    const seed = pick(rng, await npySeeds());
    const h = npyHeader(seed)!;
    if (rng.next() < 0.5) {
      // rewrite the header dict's values
      const dict = text(seed.subarray(h.start, h.start + h.len));
      const edited = dict
        .replace(
          /'descr': '[^']*'/,
          () =>
            `'descr': '${
              pick(rng, [
                "<f4",
                "<f8",
                "|b1",
                "<i8",
                ">f4",
                "<c8",
                "|O",
                "<U4",
                "<V2",
                "__proto__",
              ])
            }'`,
        )
        .replace(
          /'shape': \([^)]*\)/,
          () =>
            `'shape': (${
              pick(rng, [
                "",
                "0,",
                "-1,",
                "2, 3",
                "4294967296,",
                "9007199254740993,",
                "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,",
                "2, 3, 4",
              ])
            })`,
        )
        .replace(
          /'fortran_order': \w+/,
          () => `'fortran_order': ${pick(rng, ["False", "True", "1", "None"])}`,
        );
      const body = utf8(edited);
      const out = new Uint8Array(
        h.start + body.length + (seed.length - h.start - h.len),
      );
      out.set(seed.subarray(0, h.start));
      new DataView(out.buffer).setUint16(8, body.length, true);
      out.set(body, h.start);
      out.set(seed.subarray(h.start + h.len), h.start + body.length);
      return out;
    }
    return mutateBytes(rng, seed, h.start + h.len);
  },
  async run(input: Uint8Array): Promise<void> {
    await checkModelFile(await readNpy(memorySource(input, "fuzz.npy")), "npy");
  },
};

const npzSeeds = once(async () => {
  const out: Uint8Array[] = [];
  for (const compress of [false, true]) {
    const chunks: Uint8Array[] = [];
    for await (
      const c of writeNpz(
        file([
          tensorFromF32("a", Float32Array.from([1, 2, 3, 4]), [2, 2]),
          raw("b", "I8", [3], 1),
        ]),
        { compress },
      )
    ) chunks.push(c);
    const all = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
    let at = 0;
    for (const c of chunks) all.set(c, at), at += c.length;
    out.push(all);
  }
  return out;
});

const npzTarget: FuzzTarget = {
  name: "npz",
  async generate(rng: Rng): Promise<Uint8Array> {
    const seed = pick(rng, await npzSeeds());
    // the central directory sits at the end: aim half the mutations there
    if (rng.next() < 0.5) {
      const tail = mutateBytes(rng, seed.slice(seed.length - 200), 200, 4);
      const out = new Uint8Array(seed.length - 200 + tail.length);
      out.set(seed.subarray(0, seed.length - 200));
      out.set(tail, seed.length - 200);
      return out;
    }
    return mutateBytes(rng, seed, 200, 4);
  },
  async run(input: Uint8Array): Promise<void> {
    await checkModelFile(await readNpz(memorySource(input, "fuzz.npz")), "npz");
  },
};

/** The binary-format targets. */
export const fuzzTargets: FuzzTarget[] = [
  safetensorsTarget,
  ggufTarget,
  ggufModelTarget,
  npyTarget,
  npzTarget,
];
