/**
 * Encoder (BERT-family) embedding models on the local file system: load a
 * Hugging Face folder (with sentence-transformers' `modules.json` and
 * pooling configuration when present) or a GGUF file, and convert a folder
 * to GGUF.
 *
 * @example
 * ```ts ignore
 * import { loadEncoderModel } from "@modelhost/modelhost/io";
 * import { embedSentences } from "@modelhost/modelhost/models";
 * const { encoder, pipeline } = await loadEncoderModel("all-MiniLM-L6-v2");
 * const { embeddings } = embedSentences(encoder, pipeline, ["hello", "world"]);
 * ```
 *
 * @module
 */

import { join } from "@std/path";
import { memoryTensorIndex } from "../core/model.ts";
import type { Tensor } from "../core/tensor.ts";
import { tensorFromF32, toFloat32 } from "../core/tensor.ts";
import { isGguf, readGguf, writeGguf } from "../formats/gguf/mod.ts";
import type { GgufQuantType } from "../formats/gguf/mod.ts";
import { buildEncoder } from "../models/encoder.ts";
import {
  ENCODER_MODEL_TYPES,
  type EncoderConfig,
  encoderConfigFromGguf,
  encoderConfigFromHf,
  encoderConfigToGguf,
  type EncoderFamily,
  encoderTensorName,
} from "../models/encoder_config.ts";
import {
  type EncoderModel,
  type PoolingMode,
  readSentencePipeline,
  type SentencePipeline,
} from "../models/sentence.ts";
import { encoderGgufVocab } from "../models/encoder_vocab.ts";
import { keep } from "../models/transformer.ts";
import { createTokenizer } from "../tokenizers/mod.ts";
import type { TokenizerJson } from "../tokenizers/hf.ts";
import { readGgufForLoading } from "./_gguf_file.ts";
import { fileSource, writeFileAtomic } from "./file.ts";
import { openSafetensors } from "./safetensors.ts";

export type { EncoderModel } from "../models/sentence.ts";

const DEFAULT_PIPELINE: SentencePipeline = {
  pooling: "mean",
  normalize: true,
  prompts: {},
  defaultPrompt: undefined,
  maxSeqLength: undefined,
};

async function readJson(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new SyntaxError(`Cannot parse ${path}: ${(e as Error).message}`);
  }
}

/**
 * Whether a path is an encoder checkpoint: a folder whose `config.json`
 * names an encoder `model_type`, or a GGUF file of architecture `bert` /
 * `modern-bert`.
 *
 * @param path A folder or file.
 * @returns True for an encoder.
 *
 * @example
 * ```ts ignore
 * import { isEncoderModel } from "@modelhost/modelhost/io";
 * console.log(await isEncoderModel("all-MiniLM-L6-v2")); // true
 * ```
 */
export async function isEncoderModel(path: string): Promise<boolean> {
  let st: Deno.FileInfo;
  try {
    st = await Deno.stat(path);
  } catch {
    return false;
  }
  if (st.isDirectory) {
    const cfg = await readJson(join(path, "config.json")).catch(() =>
      undefined
    );
    const t = (cfg as { model_type?: unknown } | undefined)?.model_type;
    return ENCODER_MODEL_TYPES.includes(t as EncoderFamily);
  }
  const src = await fileSource(path);
  try {
    const head = await src.read(0, Math.min(4, src.size));
    if (!isGguf(head)) return false;
    const file = await readGguf(src);
    const a = file.models[0]?.metadata["general.architecture"];
    return a === "bert" || a === "modern-bert" || a === "nomic-bert";
  } catch {
    return false;
  } finally {
    src.close();
  }
}

/**
 * sentence-transformers' pipeline of a folder (`modules.json`, the pooling
 * and prompt files), for encoders and for decoder embedding models alike.
 *
 * @param dir The folder.
 * @returns The pipeline, or undefined when the folder has no `modules.json`.
 * @throws {TypeError} For a module that cannot run here (Dense, …).
 *
 * @example
 * ```ts ignore
 * import { loadTransformer, readSentencePipelineDir } from "@modelhost/modelhost/io";
 * import { embedSentences } from "@modelhost/modelhost/models";
 * const dir = "gte-Qwen2-1.5B-instruct";
 * const pipeline = await readSentencePipelineDir(dir); // last-token pooling
 * const { embeddings } = embedSentences(await loadTransformer(dir), pipeline!, ["hello"]);
 * ```
 */
export async function readSentencePipelineDir(
  dir: string,
): Promise<SentencePipeline | undefined> {
  return await readSentencePipeline((f) => readJson(join(dir, f)));
}

/** Loads encoder tensors from an index, under GGUF names. */
async function loadTensors(
  names: string[],
  load: (name: string) => Promise<Tensor>,
  rename: (name: string) => string | undefined,
): Promise<Map<string, Tensor>> {
  const out = new Map<string, Tensor>();
  for (const n of names) {
    const to = rename(n);
    if (to === undefined) continue;
    const t = keep(await load(n));
    out.set(to, { ...t, name: to });
  }
  return out;
}

/**
 * Loads an encoder embedding model from a Hugging Face folder or a GGUF
 * file written by {@link convertEncoderToGguf}.
 *
 * @param path The folder or `.gguf` file.
 * @returns The encoder and its sentence pipeline.
 * @throws {TypeError} For a checkpoint that is no supported encoder.
 *
 * @example
 * ```ts ignore
 * import { loadEncoderModel } from "@modelhost/modelhost/io";
 * const { encoder, pipeline } = await loadEncoderModel("bge-small-en-v1.5.gguf");
 * console.log(encoder.config.family, pipeline.pooling);
 * ```
 */
export async function loadEncoderModel(path: string): Promise<EncoderModel> {
  const st = await Deno.stat(path);
  if (st.isDirectory) {
    const hf = await readJson(join(path, "config.json"));
    if (!hf || typeof hf !== "object") {
      throw new TypeError(`Cannot load ${path}: no config.json`);
    }
    const config = encoderConfigFromHf(hf as Record<string, unknown>);
    const tj = await readJson(join(path, "tokenizer.json"));
    const tc = await readJson(join(path, "tokenizer_config.json"));
    const tokenizer = tj
      ? createTokenizer(tj as TokenizerJson, {
        config: tc as Record<string, unknown> | undefined,
      })
      : undefined;
    const file = await openSafetensors(path);
    try {
      const index = file.models[0].tensors;
      const tensors = await loadTensors(
        index.names(),
        (n) => index.load(n),
        encoderTensorName,
      );
      const pipeline = await readSentencePipeline((f) =>
        readJson(join(path, f))
      ) ?? DEFAULT_PIPELINE;
      const nameOf = (hf as Record<string, unknown>)._name_or_path;
      return {
        encoder: buildEncoder(config, tensors, {
          tokenizer,
          name: typeof nameOf === "string" && nameOf !== ""
            ? nameOf
            : config.family,
        }),
        pipeline,
      };
    } finally {
      file.close();
    }
  }
  const src = await fileSource(path);
  try {
    const file = await readGgufForLoading(src, path);
    const m = file.models[0];
    const md = m.metadata as Record<string, unknown>;
    const index = m.tensors;
    const rows = (n: string) => index.has(n) ? index.info(n).shape[0] : 0;
    const config = encoderConfigFromGguf(
      md,
      rows("token_types.weight"),
      rows("token_embd.weight"),
    );
    const tensors = await loadTensors(
      index.names(),
      (n) => index.load(n),
      (n) => n,
    );
    const tj = md["tokenizer.huggingface.json"];
    const tokenizer = typeof tj === "string"
      ? createTokenizer(JSON.parse(tj) as TokenizerJson, {
        config: typeof md["modelhost.tokenizer_config.json"] === "string"
          ? JSON.parse(md["modelhost.tokenizer_config.json"] as string)
          : undefined,
      })
      : "tokenizer.ggml.model" in md
      ? createTokenizer(md, { name: "GGUF metadata" })
      : undefined;
    const pooling = md["modelhost.sentence.pooling"];
    const prompts = md["modelhost.sentence.prompts"];
    const maxSeq = md["modelhost.sentence.max_seq_length"];
    const pipeline: SentencePipeline = {
      pooling: typeof pooling === "string"
        ? poolingMode(pooling, path)
        : POOLING_FROM_LLAMA[
          Number(md[`${md["general.architecture"]}.pooling_type`] ?? 1)
        ] ?? "mean",
      normalize: md["modelhost.sentence.normalize"] !== false,
      prompts: typeof prompts === "string" ? JSON.parse(prompts) : {},
      defaultPrompt: typeof md["modelhost.sentence.default_prompt"] === "string"
        ? md["modelhost.sentence.default_prompt"] as string
        : undefined,
      maxSeqLength: typeof maxSeq === "number" ? maxSeq : undefined,
    };
    const gname = md["general.name"];
    return {
      encoder: buildEncoder(config, tensors, {
        tokenizer,
        name: typeof gname === "string" ? gname : config.family,
      }),
      pipeline,
    };
  } finally {
    src.close();
  }
}

const POOLING_MODES: readonly string[] = [
  "cls",
  "mean",
  "max",
  "mean_sqrt_len",
  "lasttoken",
];

function poolingMode(v: string, path: string): PoolingMode {
  if (!POOLING_MODES.includes(v)) {
    throw new TypeError(
      `${path}: modelhost.sentence.pooling ${JSON.stringify(v)} is not one of ${
        POOLING_MODES.join(", ")
      }`,
    );
  }
  return v as PoolingMode;
}

/** llama.cpp's `pooling_type` numbers. */
const POOLING_TO_LLAMA: Partial<Record<PoolingMode, number>> = {
  mean: 1,
  cls: 2,
  lasttoken: 3,
};
const POOLING_FROM_LLAMA: Record<number, PoolingMode> = {
  1: "mean",
  2: "cls",
  3: "lasttoken",
};

/** Options of {@link convertEncoderToGguf}. */
export interface ConvertEncoderOptions {
  /** Store 2-D weights in this type (`Q8_0`, `F16` …). @default {the stored float types} */
  quantize?: GgufQuantType;
}

function ggufType(v: unknown): string {
  if (typeof v === "boolean") return "BOOL";
  if (typeof v === "string") return "STRING";
  if (typeof v === "number") {
    return Number.isInteger(v) && v >= 0 && v < 2 ** 32 ? "UINT32" : "FLOAT32";
  }
  throw new TypeError(`GGUF encoder: cannot store ${JSON.stringify(v)}`);
}

/**
 * Converts an encoder's Hugging Face folder to GGUF: llama.cpp's tensor
 * names and `bert` / `modern-bert` metadata (RoBERTa's position table
 * without its padding rows, as llama.cpp stores it), the tokenizer as
 * llama.cpp's `tokenizer.ggml.*` arrays (WordPiece as `bert`, byte-level
 * BPE as `gpt2`, SentencePiece Unigram as `t5`; a Unigram one is also
 * kept whole as `tokenizer.huggingface.json`, which our loader prefers), so
 * llama.cpp runs the file, and the sentence
 * pipeline under `modelhost.sentence.*` (plus llama.cpp's
 * `<arch>.pooling_type`). Written atomically.
 *
 * @param dir The folder.
 * @param out The `.gguf` file to write.
 * @param options Quantization.
 * @returns Bytes written.
 *
 * @example
 * ```ts ignore
 * import { convertEncoderToGguf } from "@modelhost/modelhost/io";
 * await convertEncoderToGguf("all-MiniLM-L6-v2", "minilm-q8_0.gguf", { quantize: "Q8_0" });
 * ```
 */
export async function convertEncoderToGguf(
  dir: string,
  out: string,
  options: ConvertEncoderOptions = {},
): Promise<number> {
  const hf = await readJson(join(dir, "config.json")) as Record<
    string,
    unknown
  >;
  const config: EncoderConfig = encoderConfigFromHf(hf ?? {});
  const values: Record<string, unknown> = encoderConfigToGguf(config);
  values["general.name"] = typeof hf._name_or_path === "string"
    ? hf._name_or_path
    : config.family;
  const tj = await readJson(join(dir, "tokenizer.json")) as
    | TokenizerJson
    | undefined;
  const tc = await readJson(join(dir, "tokenizer_config.json")) as
    | Record<string, unknown>
    | undefined;
  // llama.cpp's own tokenizer arrays where it has a kind for the
  // tokenizer (WordPiece, byte-level BPE, Unigram); the Hugging Face file
  // where it has none, and beside a Unigram one (whose Hugging Face
  // pre-tokenizer and normalizer the t5 arrays only approximate)
  const vocab = tj
    ? encoderGgufVocab(tj, tc, config.vocabSize, config.typeVocabSize)
    : undefined;
  const vocabTypes: Record<string, string> = vocab?.types ?? {};
  if (vocab) Object.assign(values, vocab.values);
  if (tj && (!vocab || tj.model?.type === "Unigram")) {
    values["tokenizer.huggingface.json"] = JSON.stringify(tj);
    if (tc) values["modelhost.tokenizer_config.json"] = JSON.stringify(tc);
  }
  const p = await readSentencePipeline((f) => readJson(join(dir, f))) ??
    DEFAULT_PIPELINE;
  const a = values["general.architecture"] as string;
  values["modelhost.sentence.pooling"] = p.pooling;
  values["modelhost.sentence.normalize"] = p.normalize;
  values["modelhost.sentence.prompts"] = JSON.stringify(p.prompts);
  if (p.defaultPrompt !== undefined) {
    values["modelhost.sentence.default_prompt"] = p.defaultPrompt;
  }
  if (p.maxSeqLength !== undefined) {
    values["modelhost.sentence.max_seq_length"] = p.maxSeqLength;
  }
  const lp = config.numLabels > 0 ? 4 : POOLING_TO_LLAMA[p.pooling];
  if (lp !== undefined) values[`${a}.pooling_type`] = lp;
  const types: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) {
    types[k] = vocabTypes[k] ?? ggufType(v);
    // llama.cpp reads these as f32 (an integer base included)
    if (/\.(layer_norm_epsilon|freq_base|freq_base_swa)$/.test(k)) {
      types[k] = "FLOAT32";
      values[k] = Math.fround(v as number);
    }
  }
  const file = await openSafetensors(dir);
  try {
    const index = file.models[0].tensors;
    const tensors: Tensor[] = [];
    for (const n of index.names()) {
      const to = encoderTensorName(n);
      if (to === undefined) continue;
      let t = await index.load(n);
      if (to === "position_embd.weight" && config.positionOffset > 0) {
        const [rows, d] = t.shape;
        const f = toFloat32(t).slice(config.positionOffset * d);
        t = tensorFromF32(to, f, [rows - config.positionOffset, d]);
      }
      tensors.push({ ...t, name: to });
    }
    const gguf = {
      format: "gguf",
      models: [{
        id: String(values["general.name"]),
        metadata: { ...values, "gguf.types": types },
        tensors: memoryTensorIndex(tensors),
      }],
    };
    return await writeFileAtomic(
      out,
      writeGguf(gguf, { quantize: options.quantize }),
    );
  } finally {
    file.close();
  }
}
