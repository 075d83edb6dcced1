/**
 * Importance matrices as llama.cpp's `llama-imatrix` collects them: the
 * text cut into chunks of `ctx` tokens (BOS in place of each chunk's first
 * token), every token fed, and for each weight matrix of the blocks the
 * sum over tokens of each input column's squared activation, with the
 * number of tokens. Stored in llama.cpp's GGUF imatrix format
 * (`<name>.in_sum2`, `<name>.counts`, `imatrix.*` keys) or its legacy
 * `.dat` format; both are read back.
 *
 * @module
 */

import { observeLinearInputs } from "../kernels/linear.ts";
import type { ModelFile } from "../core/model.ts";
import { memoryTensorIndex } from "../core/model.ts";
import { tensorFromF32, toFloat32 } from "../core/tensor.ts";
import { memorySource } from "../core/sources.ts";
import {
  type GgufMetadataEntry,
  GgufType,
  isGguf,
  readGguf,
  writeGgufBytes,
} from "../formats/gguf/mod.ts";
import type { Transformer } from "./transformer.ts";

/** One matrix's statistics. */
export interface ImatrixEntry {
  /** Sums of squared inputs, `nMat × columns` (experts one after another). */
  sums: Float32Array;
  /** Tokens summed, one count per matrix (a legacy file's call count). */
  counts: number[];
}

/** An importance matrix. */
export interface Imatrix {
  /** Entries by GGUF tensor name. */
  entries: Map<string, ImatrixEntry>;
  /** Text files it was computed from. */
  datasets: string[];
  /** Chunks processed. */
  chunkCount: number;
  /** Tokens per chunk (0 when unknown, as in legacy files). */
  chunkSize: number;
  /** Read from a legacy `.dat` file (sums already divided, times the call count). */
  legacy?: boolean;
}

/** The GGUF name of a Llama network weight (`layers.2.mlp.down_proj.weight` is `blk.1.ffn_down.weight`). */
function ggufNameOf(name: string, outputLayer: number): string | undefined {
  let m = /^layers\.(\d+)\.self_attn\.(q|k|v|o)_proj\.weight$/.exec(name);
  if (m) {
    const part = m[2] === "o" ? "output" : m[2];
    return `blk.${Number(m[1]) - 1}.attn_${part}.weight`;
  }
  m = /^layers\.(\d+)\.mlp\.(gate|up|down)_proj\.weight$/.exec(name);
  if (m) return `blk.${Number(m[1]) - 1}.ffn_${m[2]}.weight`;
  if (name === `layers.${outputLayer}.weight`) return "output.weight";
  return undefined;
}

/** Options of {@link computeImatrix}. */
export interface ImatrixOptions {
  /** Tokens per chunk (`-c`). @default {512} */
  ctx?: number;
  /** Most chunks (`--chunks`). @default {undefined} all */
  chunks?: number;
  /** Also collect `output.weight` (`--process-output`). @default {false} */
  processOutput?: boolean;
  /** The text file's name, recorded in `imatrix.datasets`. @default {undefined} */
  dataset?: string;
  /** Called after each chunk. @default {undefined} */
  onChunk?: (chunk: number, of: number) => void;
}

/**
 * Collects an importance matrix over tokens, as llama-imatrix does.
 *
 * @param model A Llama-family model.
 * @param tokens The text's tokens (BOS first when the model adds one).
 * @param options Context, chunks, whether to include the output matrix.
 * @returns The matrix, by GGUF tensor name.
 * @throws {RangeError} When the text is shorter than two contexts.
 *
 * @example
 * ```ts ignore
 * import { computeImatrix } from "@modelhost/modelhost/models";
 * const im = computeImatrix(model, model.tokenizer!.encode(text), { ctx: 128 });
 * ```
 */
export function computeImatrix(
  model: Transformer,
  tokens: readonly number[],
  options: ImatrixOptions = {},
): Imatrix {
  const ctx = options.ctx ?? 512;
  if (tokens.length < 2 * ctx) {
    throw new RangeError(
      `Cannot compute an importance matrix: the text is ${tokens.length} tokens, a context of ${ctx} needs at least ${
        2 * ctx
      } (llama-imatrix's rule)`,
    );
  }
  const max = Math.floor(tokens.length / ctx);
  const n = options.chunks === undefined || options.chunks < 0
    ? max
    : Math.min(options.chunks, max);
  const bos = model.tokenizer?.addBos ? model.tokenizer.bos : undefined;
  const outputLayer = Math.max(
    ...[...model.tensors.keys()].map((k) => {
      const m = /^layers\.(\d+)\.weight$/.exec(k);
      return m ? Number(m[1]) : -1;
    }),
  );
  const entries = new Map<string, ImatrixEntry>();
  const names = new Map<string, string | undefined>();
  const prev = observeLinearInputs((w, x, rows) => {
    if (rows < 16) return; // llama-imatrix skips batches under 16 tokens
    let g = names.get(w.name);
    if (!names.has(w.name)) {
      g = ggufNameOf(w.name, outputLayer);
      names.set(w.name, g);
    }
    if (!g || (g === "output.weight" && !options.processOutput)) return;
    const cols = w.shape[1];
    let e = entries.get(g);
    if (!e) {
      e = { sums: new Float32Array(cols), counts: [0] };
      entries.set(g, e);
    }
    const acc = e.sums;
    for (let r = 0; r < rows; r++) {
      const o = r * cols;
      for (let j = 0; j < cols; j++) {
        acc[j] = Math.fround(acc[j] + Math.fround(x[o + j] * x[o + j]));
      }
    }
    e.counts[0] += rows;
  });
  try {
    for (let c = 0; c < n; c++) {
      const ids = tokens.slice(c * ctx, (c + 1) * ctx);
      if (bos !== undefined) ids[0] = bos;
      model.forward(ids, undefined, { allPositions: true });
      options.onChunk?.(c + 1, n);
    }
  } finally {
    observeLinearInputs(prev);
  }
  return {
    entries,
    datasets: options.dataset !== undefined ? [options.dataset] : [],
    chunkCount: n,
    chunkSize: ctx,
  };
}

/**
 * The per-column weights a quantizer takes (`sums / count`), by tensor
 * name, as llama-quantize derives them from a file.
 *
 * @param im The matrix.
 * @returns Weights per GGUF tensor name (all experts one after another).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { imatrixWeights } from "@modelhost/modelhost/models";
 * const w = imatrixWeights({ entries: new Map([["a", { sums: new Float32Array([2, 4]), counts: [2] }]]),
 *   datasets: [], chunkCount: 1, chunkSize: 2 });
 * assert(w.get("a")![1] === 2);
 * ```
 */
export function imatrixWeights(im: Imatrix): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const [name, e] of im.entries) {
    if (im.legacy) {
      // a legacy file holds mean × call count: divide the count back out
      const ncall = e.counts[0] ?? 0;
      out.set(
        name,
        ncall > 0 ? e.sums.map((v) => Math.fround(v / ncall)) : e.sums.slice(),
      );
      continue;
    }
    const per = e.sums.length / e.counts.length;
    const w = new Float32Array(e.sums.length);
    for (let i = 0; i < w.length; i++) {
      const c = e.counts[Math.floor(i / per)];
      w[i] = c > 0 ? Math.fround(e.sums[i] / c) : 1;
    }
    out.set(name, w);
  }
  return out;
}

/**
 * An importance matrix in llama.cpp's GGUF imatrix format (entries in name
 * order, `general.type = imatrix`).
 *
 * @param im The matrix.
 * @returns The file's bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { imatrixToGguf, readImatrix } from "@modelhost/modelhost/models";
 * const im = { entries: new Map([["blk.0.ffn_up.weight", { sums: new Float32Array([1, 2]), counts: [3] }]]),
 *   datasets: ["t.txt"], chunkCount: 1, chunkSize: 3 };
 * const back = await readImatrix(await imatrixToGguf(im), "x.gguf");
 * assert(back.entries.get("blk.0.ffn_up.weight")!.counts[0] === 3);
 * ```
 */
export async function imatrixToGguf(im: Imatrix): Promise<Uint8Array> {
  const tensors = [];
  for (const name of [...im.entries.keys()].sort()) {
    const e = im.entries.get(name)!;
    const nMat = e.counts.length;
    tensors.push(
      tensorFromF32(`${name}.in_sum2`, e.sums, [nMat, e.sums.length / nMat]),
      tensorFromF32(`${name}.counts`, Float32Array.from(e.counts), [nMat, 1]),
    );
  }
  const metadata: GgufMetadataEntry[] = [
    { key: "general.type", type: GgufType.STRING, value: "imatrix" },
    {
      key: "imatrix.datasets",
      type: GgufType.ARRAY,
      value: { type: GgufType.STRING, items: im.datasets },
    },
    { key: "imatrix.chunk_count", type: GgufType.UINT32, value: im.chunkCount },
    { key: "imatrix.chunk_size", type: GgufType.UINT32, value: im.chunkSize },
  ];
  const file: ModelFile = {
    models: [{
      id: "imatrix",
      metadata: {},
      tensors: memoryTensorIndex(tensors),
    }],
  };
  return await writeGgufBytes(file, { metadata });
}

/**
 * An importance matrix in llama.cpp's legacy `.dat` format: per entry the
 * mean squared input times the call count (`ceil(count / chunk size)`),
 * then the chunk count and the dataset name.
 *
 * @param im The matrix (with its chunk size).
 * @returns The file's bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { imatrixToDat, readImatrix } from "@modelhost/modelhost/models";
 * const im = { entries: new Map([["blk.0.ffn_up.weight", { sums: new Float32Array([4, 8]), counts: [4] }]]),
 *   datasets: ["t.txt"], chunkCount: 2, chunkSize: 2 };
 * const back = await readImatrix(imatrixToDat(im), "x.dat");
 * assert(back.legacy && back.entries.get("blk.0.ffn_up.weight")!.sums[1] === 4);
 * ```
 */
export function imatrixToDat(im: Imatrix): Uint8Array {
  const enc = new TextEncoder();
  const names = [...im.entries.keys()].filter((n) =>
    im.entries.get(n)!.counts.some((c) => c > 0)
  ).sort();
  const parts: Uint8Array[] = [];
  const i32 = (v: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, v, true);
    parts.push(b);
  };
  i32(names.length);
  const cs = im.chunkSize || 1;
  for (const name of names) {
    const e = im.entries.get(name)!;
    const nb = enc.encode(name);
    i32(nb.length);
    parts.push(nb);
    const ncall = Math.floor((Math.max(...e.counts) + cs - 1) / cs);
    i32(ncall);
    i32(e.sums.length);
    const per = e.sums.length / e.counts.length;
    const v = new Float32Array(e.sums.length);
    for (let i = 0; i < v.length; i++) {
      let count = Math.fround(e.counts[Math.floor(i / per)]);
      let value = e.sums[i];
      if (count === 0) value = 1, count = 1;
      v[i] = Math.fround(Math.fround(value / count) * ncall);
    }
    parts.push(new Uint8Array(v.buffer));
  }
  i32(im.chunkCount);
  const ds = enc.encode(im.datasets.at(-1) ?? "");
  i32(ds.length);
  parts.push(ds);
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) out.set(p, o), o += p.length;
  return out;
}

/**
 * Reads an importance matrix: llama.cpp's GGUF format, or its legacy `.dat`.
 *
 * @param bytes The file.
 * @param name Its name, for messages.
 * @returns The matrix.
 * @throws {RangeError} A legacy file whose sizes run past its end.
 * @throws {TypeError} A GGUF file without `.in_sum2`/`.counts` pairs.
 *
 * @example
 * ```ts
 * import { assertRejects } from "@std/assert";
 * import { readImatrix } from "@modelhost/modelhost/models";
 * await assertRejects(() => readImatrix(new Uint8Array(4), "x.dat"), RangeError);
 * ```
 */
export async function readImatrix(
  bytes: Uint8Array,
  name: string,
): Promise<Imatrix> {
  if (isGguf(bytes)) {
    const file = await readGguf(memorySource(bytes, name));
    const m = file.models[0];
    const entries = new Map<string, ImatrixEntry>();
    const t = m.tensors;
    for (const n of t.names()) {
      if (!n.endsWith(".in_sum2")) continue;
      const base = n.slice(0, -".in_sum2".length);
      if (!t.has(`${base}.counts`)) {
        throw new TypeError(`${name}: ${n} has no ${base}.counts`);
      }
      const sums = toFloat32(await t.load(n));
      const counts = Array.from(
        toFloat32(await t.load(`${base}.counts`)),
        (c) => Math.round(c),
      );
      if (counts.length === 0 || sums.length % counts.length !== 0) {
        throw new TypeError(
          `${name}: ${base} has ${sums.length} sums for ${counts.length} counts`,
        );
      }
      entries.set(base, { sums, counts });
    }
    if (entries.size === 0) {
      throw new TypeError(`${name}: no importance-matrix entries (*.in_sum2)`);
    }
    const md = m.metadata;
    const ds = md["imatrix.datasets"];
    return {
      entries,
      datasets: Array.isArray(ds) ? ds.map(String) : [],
      chunkCount: Number(md["imatrix.chunk_count"] ?? 0),
      chunkSize: Number(md["imatrix.chunk_size"] ?? 0),
    };
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let o = 0;
  const need = (k: number, what: string) => {
    if (o + k > bytes.length) {
      throw new RangeError(
        `${name}: ${what} at offset ${o} needs ${k} bytes, the file has ${
          bytes.length - o
        } left`,
      );
    }
  };
  need(4, "the entry count");
  const n = v.getInt32(o, true);
  o += 4;
  if (n < 1) throw new RangeError(`${name}: ${n} entries`);
  const entries = new Map<string, ImatrixEntry>();
  const dec = new TextDecoder();
  for (let i = 0; i < n; i++) {
    need(4, `entry ${i}'s name length`);
    const len = v.getInt32(o, true);
    o += 4;
    need(len + 8, `entry ${i}'s name`);
    const key = dec.decode(bytes.subarray(o, o + len));
    o += len;
    const ncall = v.getInt32(o, true), nval = v.getInt32(o + 4, true);
    o += 8;
    if (nval < 1) throw new RangeError(`${name}: ${key} has ${nval} values`);
    need(4 * nval, `${key}'s ${nval} values`);
    const sums = new Float32Array(nval);
    for (let j = 0; j < nval; j++) sums[j] = v.getFloat32(o + 4 * j, true);
    o += 4 * nval;
    entries.set(key, { sums, counts: [ncall] });
  }
  let chunkCount = 0;
  const datasets: string[] = [];
  if (o + 4 <= bytes.length) {
    chunkCount = v.getInt32(o, true);
    o += 4;
    if (o + 4 <= bytes.length) {
      const len = v.getInt32(o, true);
      o += 4;
      if (len > 0 && o + len <= bytes.length) {
        datasets.push(dec.decode(bytes.subarray(o, o + len)));
      }
    }
  }
  return { entries, datasets, chunkCount, chunkSize: 0, legacy: true };
}
