/**
 * Perplexity and KL divergence as llama.cpp's `llama-perplexity` computes
 * them: the tokens cut into chunks of `ctx` tokens, BOS put in place of
 * each chunk's first token, and only the second half of each chunk scored
 * (position `ctx/2` onwards predicts its next token). The base-model file
 * of `--kl-divergence-base` is llama.cpp's format (`_logits_`, the
 * context, vocabulary, chunk count, the tokens, then per scored position
 * the log-probabilities in 16 bits with a scale and an offset).
 *
 * @module
 */

import type { Transformer } from "./transformer.ts";

/** Options of {@link perplexity} and {@link klDivergence}. */
export interface PerplexityOptions {
  /** Tokens per chunk (llama-perplexity `-c`). @default {512} */
  ctx?: number;
  /** Most chunks to score (`--chunks`); all that fit when absent. @default {undefined} */
  chunks?: number;
  /** Put BOS in place of each chunk's first token. @default {the tokenizer's addBos} */
  addBos?: boolean;
  /** Called after each chunk with the running estimate. @default {undefined} */
  onChunk?: (chunk: number, of: number, ppl: number) => void;
}

/** What {@link perplexity} returns. */
export interface PerplexityResult {
  /** `exp(mean negative log-likelihood)` over every scored token. */
  ppl: number;
  /** llama.cpp's "+/-": the standard error of the mean NLL times the perplexity. */
  uncertainty: number;
  /** Running estimate after each chunk (llama-perplexity's `[1]x,[2]y,…`). */
  perChunk: number[];
  /** Tokens scored. */
  count: number;
  /** Context length used. */
  ctx: number;
  /** Chunks scored. */
  chunks: number;
  /** The base-model file (llama.cpp's format), when asked for. */
  logitsFile?: Uint8Array;
}

const f = Math.fround;

/** `nearest_int` of ggml: round half to even through the float trick. */
function nearestInt(v: number): number {
  return Math.round(v) - (Math.abs(v % 1) === 0.5 && Math.round(v) % 2 ? 1 : 0);
}

function plan(
  model: Transformer,
  tokens: readonly number[],
  options: PerplexityOptions,
): { ctx: number; n: number; bos: number | undefined } {
  const ctx = options.ctx ?? 512;
  if (!Number.isInteger(ctx) || ctx < 4) {
    throw new RangeError(`Cannot compute perplexity with a context of ${ctx}`);
  }
  if (tokens.length < 2 * ctx) {
    throw new RangeError(
      `Cannot compute perplexity: the text is ${tokens.length} tokens, a context of ${ctx} needs at least ${
        2 * ctx
      } (llama-perplexity's rule)`,
    );
  }
  const max = Math.floor(tokens.length / ctx);
  const n = options.chunks === undefined || options.chunks < 0
    ? max
    : Math.min(options.chunks, max);
  const addBos = options.addBos ?? model.tokenizer?.addBos ?? false;
  const bos = addBos ? model.tokenizer?.bos : undefined;
  if (addBos && bos === undefined) {
    throw new TypeError("Cannot put BOS before each chunk: the model has none");
  }
  return { ctx, n, bos };
}

function chunkLogits(
  model: Transformer,
  tokens: readonly number[],
  start: number,
  ctx: number,
  bos: number | undefined,
): Float32Array {
  const ids = tokens.slice(start, start + ctx);
  if (bos !== undefined) ids[0] = bos;
  return model.forward(ids, undefined, { allPositions: true });
}

/**
 * Perplexity of a model on tokens, as llama-perplexity computes it; can
 * also produce the base-model file its `--kl-divergence-base` writes.
 *
 * @param model The model.
 * @param tokens The text's tokens (with BOS first when the model adds one, as `tokenizer.encode` gives them).
 * @param options Context, chunk limit, BOS, progress; `saveLogits` for the base file.
 * @returns The final estimate, its uncertainty, the running estimates.
 * @throws {RangeError} When the text is shorter than two contexts.
 *
 * @example
 * ```ts ignore
 * import { loadTransformer } from "@modelhost/modelhost/io";
 * import { perplexity } from "@modelhost/modelhost/models";
 * const model = await loadTransformer("stories260K.gguf");
 * const r = perplexity(model, model.tokenizer!.encode(text), { ctx: 128 });
 * console.log(r.ppl);
 * ```
 */
export function perplexity(
  model: Transformer,
  tokens: readonly number[],
  options: PerplexityOptions & { saveLogits?: boolean } = {},
): PerplexityResult {
  const { ctx, n, bos } = plan(model, tokens, options);
  const first = ctx >> 1;
  const scored = ctx - 1 - first;
  let vocab = 0;
  let nll = 0, nll2 = 0, count = 0;
  const perChunk: number[] = [];
  const parts: Uint8Array[] = [];
  for (let c = 0; c < n; c++) {
    const start = c * ctx;
    const logits = chunkLogits(model, tokens, start, ctx, bos);
    vocab = logits.length / ctx;
    const nv = 2 * ((vocab + 1) >> 1) + 4;
    const q = options.saveLogits ? new Uint16Array(scored * nv) : undefined;
    for (let i = 0; i < scored; i++) {
      const row = logits.subarray((first + i) * vocab, (first + i + 1) * vocab);
      const tok = tokens[start + first + i + 1];
      let v: number;
      if (q) {
        v = quantizedLogSoftmax(row, q.subarray(i * nv, (i + 1) * nv), tok);
      } else {
        let max = row[0];
        for (let k = 1; k < vocab; k++) if (row[k] > max) max = row[k];
        let sum = 0;
        for (let k = 0; k < vocab; k++) sum += f(Math.exp(f(row[k] - max)));
        v = -(f(row[tok] - max) - Math.log(sum));
      }
      nll += v;
      nll2 += v * v;
    }
    count += scored;
    perChunk.push(Math.exp(nll / count));
    if (q) parts.push(new Uint8Array(q.buffer));
    options.onChunk?.(c + 1, n, perChunk[c]);
  }
  const mean = nll / count;
  let var2 = nll2 / count - mean * mean;
  var2 = var2 > 0 ? Math.sqrt(var2 / (count - 1)) : 0;
  const ppl = Math.exp(mean);
  const result: PerplexityResult = {
    ppl,
    uncertainty: var2 * ppl,
    perChunk,
    count,
    ctx,
    chunks: n,
  };
  if (options.saveLogits) {
    const head = new DataView(new ArrayBuffer(20 + 4 * n * ctx));
    new Uint8Array(head.buffer).set(new TextEncoder().encode("_logits_"));
    head.setInt32(8, ctx, true);
    head.setInt32(12, vocab, true);
    head.setInt32(16, n, true);
    for (let i = 0; i < n * ctx; i++) {
      head.setInt32(20 + 4 * i, tokens[i], true);
    }
    let size = head.byteLength;
    for (const p of parts) size += p.byteLength;
    const out = new Uint8Array(size);
    out.set(new Uint8Array(head.buffer));
    let o = head.byteLength;
    for (const p of parts) {
      out.set(p, o);
      o += p.byteLength;
    }
    result.logitsFile = out;
  }
  return result;
}

/**
 * One position's log-probabilities in llama.cpp's 16-bit form (`scale`,
 * `min_log_prob` as two floats, then one code per token); returns the NLL.
 */
function quantizedLogSoftmax(
  logits: Float32Array,
  out: Uint16Array,
  tok: number,
): number {
  let max = logits[0], min = logits[0];
  for (let i = 1; i < logits.length; i++) {
    if (logits[i] > max) max = logits[i];
    if (logits[i] < min) min = logits[i];
  }
  min = Math.max(min, f(max - 16));
  let sum = 0;
  for (let i = 0; i < logits.length; i++) {
    sum += f(Math.exp(f(logits[i] - max)));
  }
  const lse = f(Math.log(sum));
  const minLogProb = f(f(min - max) - lse);
  const scale = f(f(max - min) / 65535);
  const head = new Float32Array(out.buffer, out.byteOffset, 2);
  head[0] = scale;
  head[1] = minLogProb;
  const codes = out.subarray(4);
  if (scale) {
    const inv = f(1 / scale);
    for (let i = 0; i < logits.length; i++) {
      codes[i] = logits[i] > min ? nearestInt(f(inv * f(logits[i] - min))) : 0;
    }
  } else codes.fill(0, 0, logits.length);
  return f(f(max + lse) - logits[tok]);
}

/** A base-model file of `llama-perplexity --kl-divergence-base`, parsed. */
export interface LogitsFile {
  /** Context length the base was computed with. */
  ctx: number;
  /** Vocabulary size. */
  vocab: number;
  /** Chunks in the file. */
  chunks: number;
  /** The evaluated tokens (`chunks × ctx`). */
  tokens: Int32Array;
  /** Per chunk, per scored position: `nv` 16-bit words (two floats, then codes). */
  logProbs: Uint16Array;
}

/**
 * Reads a `--kl-divergence-base` file (llama.cpp's or ours).
 *
 * @param bytes The file.
 * @param name The file's name, for messages.
 * @returns Its header, tokens and stored log-probabilities.
 * @throws {SyntaxError} Without the `_logits_` magic.
 * @throws {RangeError} When the sizes do not fit the file.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { readLogitsFile } from "@modelhost/modelhost/models";
 * assertThrows(() => readLogitsFile(new Uint8Array(8), "x"), SyntaxError);
 * ```
 */
export function readLogitsFile(bytes: Uint8Array, name: string): LogitsFile {
  if (
    bytes.length < 20 ||
    new TextDecoder().decode(bytes.subarray(0, 8)) !== "_logits_"
  ) {
    throw new SyntaxError(
      `${name} is not a llama-perplexity log-probability file (no "_logits_" magic)`,
    );
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ctx = v.getUint32(8, true),
    vocab = v.getInt32(12, true),
    chunks = v.getInt32(16, true);
  if (ctx < 4 || vocab < 1 || chunks < 1) {
    throw new RangeError(
      `${name}: context ${ctx}, vocabulary ${vocab}, chunks ${chunks} are not valid`,
    );
  }
  const nv = 2 * ((vocab + 1) >> 1) + 4;
  const scored = ctx - 1 - (ctx >> 1);
  const need = 20 + 4 * ctx * chunks + 2 * nv * scored * chunks;
  if (bytes.length < need) {
    throw new RangeError(
      `${name}: ${chunks} chunks of ${ctx} tokens over ${vocab} tokens need ${need} bytes, the file has ${bytes.length}`,
    );
  }
  const copy = bytes.slice(20, need);
  return {
    ctx,
    vocab,
    chunks,
    tokens: new Int32Array(copy.buffer, 0, ctx * chunks),
    logProbs: new Uint16Array(
      copy.buffer,
      4 * ctx * chunks,
      nv * scored * chunks,
    ),
  };
}

/** What {@link klDivergence} returns (llama-perplexity's summary). */
export interface KlDivergenceResult {
  /** Perplexity of this model on the base file's tokens. */
  ppl: number;
  /** Perplexity of the base model (from its stored log-probabilities). */
  pplBase: number;
  /** Mean of `ln(PPL(Q)/PPL(base))`. */
  lnPplRatio: number;
  /** Mean KL divergence of this model from the base, per token. */
  kld: number;
  /** Its uncertainty (standard error). */
  kldUncertainty: number;
  /** Root mean square of the change in the probability of the right token. */
  deltaPRms: number;
  /** Share of positions where both models rank the same token first. */
  sameTop: number;
  /** Positions scored. */
  count: number;
}

/**
 * KL divergence of a model from a base model's stored log-probabilities,
 * as `llama-perplexity --kl-divergence` computes it.
 *
 * @param model The model to compare.
 * @param base The base file ({@link readLogitsFile}).
 * @param options BOS and progress (the context and tokens come from the file).
 * @returns The summary.
 *
 * @example
 * ```ts ignore
 * import { klDivergence, readLogitsFile } from "@modelhost/modelhost/models";
 * const r = klDivergence(model, readLogitsFile(bytes, "base.kld"));
 * console.log(r.kld);
 * ```
 */
export function klDivergence(
  model: Transformer,
  base: LogitsFile,
  options: Omit<PerplexityOptions, "ctx" | "chunks"> = {},
): KlDivergenceResult {
  const tokens = Array.from(base.tokens);
  const { ctx, n, bos } = plan(model, tokens.concat(tokens), {
    ...options,
    ctx: base.ctx,
    chunks: base.chunks,
  });
  const first = ctx >> 1, scored = ctx - 1 - first;
  const vocab = base.vocab, nv = 2 * ((vocab + 1) >> 1) + 4;
  let sNll = 0, sNll2 = 0, sBase = 0, sKld = 0, sKld2 = 0, sP2 = 0;
  let same = 0, count = 0;
  for (let c = 0; c < Math.min(n, base.chunks); c++) {
    const start = c * ctx;
    const logits = chunkLogits(model, tokens, start, ctx, bos);
    if (logits.length !== ctx * vocab) {
      throw new RangeError(
        `The base file has a vocabulary of ${vocab}, the model ${
          logits.length / ctx
        }`,
      );
    }
    for (let i = 0; i < scored; i++) {
      const row = logits.subarray((first + i) * vocab, (first + i + 1) * vocab);
      const tok = tokens[start + first + i + 1];
      const word = (c * scored + i) * nv;
      const bp = base.logProbs.subarray(word, word + nv);
      const hdr = new Float32Array(bp.buffer, bp.byteOffset, 2);
      const scale = hdr[0], minLp = hdr[1];
      const codes = bp.subarray(4);
      let max = row[0], imax = 0;
      for (let k = 1; k < vocab; k++) {
        if (row[k] > max) max = row[k], imax = k;
      }
      let sum = 0;
      for (let k = 0; k < vocab; k++) sum += f(Math.exp(f(row[k] - max)));
      const lse = f(Math.log(sum));
      const nll = f(f(max + lse) - row[tok]);
      const nllBase = -f(f(scale * codes[tok]) + minLp);
      sNll += nll;
      sNll2 += nll * nll;
      sBase += nllBase;
      const top = f(max + lse);
      let kl = 0, imaxBase = -1, pMax = 0;
      for (let k = 0; k < vocab; k++) {
        const lp = f(f(scale * codes[k]) + minLp);
        if (k === 0 || lp > pMax) pMax = lp, imaxBase = k;
        if (lp > -16) kl += f(f(Math.exp(lp)) * f(f(lp - row[k]) + top));
      }
      sKld += kl;
      sKld2 += kl * kl;
      if (imax === imaxBase) same++;
      const dp = f(f(Math.exp(-nll)) - f(Math.exp(-nllBase)));
      sP2 += dp * dp;
      count++;
    }
    options.onChunk?.(c + 1, n, Math.exp(sNll / count));
  }
  const mKld = sKld / count;
  let dk = sKld2 / count - mKld * mKld;
  dk = dk > 0 && count > 10 ? Math.sqrt(dk / (count - 1)) : 0;
  void sNll2;
  return {
    ppl: Math.exp(sNll / count),
    pplBase: Math.exp(sBase / count),
    lnPplRatio: sNll / count - sBase / count,
    kld: mKld,
    kldUncertainty: dk,
    deltaPRms: Math.sqrt(sP2 / count),
    sameTop: same / count,
    count,
  };
}
