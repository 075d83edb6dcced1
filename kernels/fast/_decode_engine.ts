/**
 * Quantized projections of one activation row that already lies in kernel
 * memory, written to kernel memory: the one-token decode step of
 * `transformer_block` (`layers/_block_decode.ts`) keeps its residual
 * stream and every intermediate there, so a token makes no copies between
 * JavaScript arrays and the engine and allocates nothing per call.
 *
 * The kernels, their arguments and the split over threads are those that
 * `engineLinearMany` / `engineLinear` (`./_linear_engine.ts`) choose for
 * one x row, so the outputs are the same bits; what is saved is the
 * bookkeeping around them (descriptor, bias and counter blocks written
 * once per weight group instead of per call, no output arrays).
 *
 * @module
 */

import type { Tensor } from "../../core/tensor.ts";
import type { Engine } from "../wasm/_engine.ts";
import { type FastDType, rowBytes } from "../quant_ref.ts";
import {
  quantGrabRows,
  quantMmKernel,
  quantReadAhead,
  quantWeightStreams,
  runShared,
  state,
  touchAfter,
} from "./_dispatch.ts";
import {
  activationRule,
  META_ARRAYS,
  SEGMENT_BYTES,
} from "../wasm/_kernels_quant.ts";

const XQ = 32; // activation quantization block

/** The kernel family of each quantized dtype the one-row path runs. */
const KIND: Partial<Record<string, string>> = {
  Q8_0: "q8_0",
  Q4_0: "q4_0",
  Q5_0: "q5_0",
  Q4_K: "q4_k",
  Q6_K: "q6_k",
};

/**
 * Weights of one dtype and input size run as one job on one quantized x
 * (as `engineLinearMany` groups them), their outputs side by side in
 * kernel memory at `y`.
 */
export interface DecodeGroup {
  /** Kernel family (`q8_0`, `q4_k`, …). */
  kind: string;
  /** Its activation quantizer (`quantize_x` or `quantize_xk`). */
  quantize: string;
  /**
   * Whether every weight lies in kernel memory in place (read where the
   * file's bytes were put, never copied, so never moved or evicted).
   */
  inPlace: boolean;
  /** The weights. */
  ws: Tensor[];
  /** Outputs of each weight. */
  outs: number[];
  /** Sum of `outs`. */
  total: number;
  /** Inputs. */
  inF: number;
  /** Bytes per output row. */
  rb: number;
  /** Kernel-memory block: descriptors, then biases, then the counter. */
  desc: number;
  /** Where the biases start (zeros where a weight has none). */
  bias: number;
  /** The grab counter. */
  counter: number;
  /** Outputs, `total` F32 values. */
  y: number;
  /** Weight addresses the descriptors were last written with. */
  ptrs: number[];
  /** `ptr, bytes` pairs of the weights, for `touchAfter`. */
  ranges: number[];
}

/**
 * Groups for the weights `ws` (each `[out_i, inF]`) and their biases on
 * engine `e`, or null when one of them is not a quantized dtype this path
 * runs. Weights of one dtype share a group when all of them have that
 * dtype (as `linearMany`), else each runs alone (as `linear`). The
 * groups' blocks are allocated here, once, and `y` of each is `yAt` plus
 * the outputs of the groups before it.
 *
 * @param e The engine.
 * @param ws The weights.
 * @param biases Their biases (undefined entries: none).
 * @param yAt Kernel-memory address of the outputs (`Σ out_i` F32 values).
 * @returns The groups, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decodeGroups } from "./_decode_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const e = getEngine();
 * const w = tensorFromF32("w", new Float32Array(64), [2, 32]);
 * if (e) assert(decodeGroups(e, [w], [undefined], 0) === null); // F32: the layer path
 * ```
 */
export function decodeGroups(
  e: Engine,
  ws: Tensor[],
  biases: (Float32Array | undefined)[],
  yAt: number,
): DecodeGroup[] | null {
  const inF = ws[0].shape[1];
  for (const w of ws) {
    if (
      !KIND[w.dtype] || w.quant || w.shape.length !== 2 ||
      w.shape[1] !== inF || w.shape[0] <= 0 || inF % XQ !== 0 ||
      ((w.dtype === "Q4_K" || w.dtype === "Q6_K") && inF % 256 !== 0) ||
      w.bytes.byteLength < w.shape[0] * rowBytes(w.dtype as FastDType, inF)
    ) return null;
  }
  const same = ws.every((w) => w.dtype === ws[0].dtype);
  const sets = same ? [ws.map((_, i) => i)] : ws.map((_, i) => [i]);
  let y = yAt;
  return sets.map((idx) => {
    const list = idx.map((i) => ws[i]);
    const outs = list.map((w) => w.shape[0]);
    const total = outs.reduce((a, b) => a + b, 0);
    const n = list.length;
    const head = (n * SEGMENT_BYTES + 63) & ~63;
    const desc = e.alloc(head + ((total * 4 + 63) & ~63) + 64);
    const bias = desc + head;
    const counter = bias + ((total * 4 + 63) & ~63);
    const f = e.f32;
    f.fill(0, bias >> 2, (bias >> 2) + total);
    let off = 0;
    idx.forEach((i, j) => {
      const b = biases[i];
      if (b) f.set(b, (bias >> 2) + off);
      off += outs[j];
    });
    const dt = list[0].dtype as FastDType;
    const kind = KIND[dt]!;
    const g: DecodeGroup = {
      kind,
      quantize: activationRule(kind) === "q8_0" ? "quantize_x" : "quantize_xk",
      inPlace: list.every((w) => e.owns(w.bytes)),
      ws: list,
      outs,
      total,
      inF,
      rb: rowBytes(dt, inF),
      desc,
      bias,
      counter,
      y,
      ptrs: [],
      ranges: [],
    };
    y += total * 4;
    return g;
  });
}

/**
 * Frees the blocks of {@link decodeGroups}.
 *
 * @param e The engine they were made on.
 * @param groups The groups.
 *
 * @example
 * ```ts
 * import { decodeGroups, freeDecodeGroups } from "./_decode_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * import { quantizeGguf } from "@modelhost/modelhost/formats/gguf";
 * const e = getEngine();
 * const w = { name: "w", dtype: "Q8_0" as const, shape: [1, 32], bytes: quantizeGguf("Q8_0", new Float32Array(32)) };
 * const g = e && decodeGroups(e, [w], [undefined], e.alloc(64));
 * if (e && g) freeDecodeGroups(e, g);
 * ```
 */
export function freeDecodeGroups(e: Engine, groups: DecodeGroup[]): void {
  for (const g of groups) e.free(g.desc);
}

/** The weight's address in kernel memory (as `_linear_engine.ts` keeps it). */
function resident(e: Engine, g: DecodeGroup, w: Tensor, outF: number): number {
  const size = outF * g.rb;
  return e.resident(w.bytes, g.kind, w.bytes, (en) => {
    if (en.owns(w.bytes)) {
      return { ptr: w.bytes.byteOffset, size: 0, owned: false };
    }
    const ptr = en.alloc(size);
    en.u8.set(w.bytes.subarray(0, size), ptr);
    return { ptr, size, owned: true };
  }).ptr;
}

/** Scratch blocks of the quantized x. */
interface XScratch {
  q8: number;
  q16: number;
  meta: number;
  q5: number;
}

function xScratch(e: Engine, inF: number): XScratch {
  const nb = inF / XQ;
  return {
    q8: e.scratch("dec_xq8", inF + 64),
    q16: e.scratch("dec_xq16", inF * 2 + 64),
    meta: e.scratch("dec_xmeta", nb * 4 * META_ARRAYS + 64),
    q5: e.scratch("dec_xq5", inF * 2 + 64),
  };
}

/**
 * Runs the groups on the F32 row at kernel address `x` (`inF` values):
 * each group quantizes x by its kind's activation rule and runs its
 * weights as one job, outputs (plus biases) to its `y`. Every scratch
 * block is taken before the first kernel runs, so a memory growth cannot
 * come between them.
 *
 * @param e The engine.
 * @param groups From {@link decodeGroups}.
 * @param x Kernel address of the input row.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decodeGroups, freeDecodeGroups, runDecodeGroups } from "./_decode_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * import { quantizeGguf } from "@modelhost/modelhost/formats/gguf";
 * import { linear } from "@modelhost/modelhost/kernels";
 * const e = getEngine();
 * const v = Float32Array.from({ length: 64 }, (_, i) => i / 64 - 0.5);
 * const w = { name: "w", dtype: "Q8_0" as const, shape: [2, 32], bytes: quantizeGguf("Q8_0", v) };
 * const x = Float32Array.from({ length: 32 }, (_, i) => Math.cos(i));
 * if (e) {
 *   const io = e.alloc(34 * 4);
 *   const g = decodeGroups(e, [w], [undefined], io + 32 * 4)!;
 *   e.f32.set(x, io >> 2);
 *   runDecodeGroups(e, g, io);
 *   const want = linear(x, 1, w); // the layer path: the same bits
 *   assert(want.every((y, i) => y === e.f32[(io >> 2) + 32 + i]));
 *   freeDecodeGroups(e, g);
 *   e.free(io);
 * }
 * ```
 */
export function runDecodeGroups(
  e: Engine,
  groups: DecodeGroup[],
  x: number,
): void {
  for (const g of groups) {
    // weights first: a first use may copy them in (and grow the memory);
    // weights read in place stay where they are
    let changed = g.ptrs.length === 0;
    if (changed || !g.inPlace) {
      for (let i = 0; i < g.ws.length; i++) {
        const p = resident(e, g, g.ws[i], g.outs[i]);
        if (p !== g.ptrs[i]) {
          g.ptrs[i] = p;
          changed = true;
        }
      }
    }
    const xs = xScratch(e, g.inF);
    const f = e.f32;
    if (changed) {
      const d = new Int32Array(f.buffer, g.desc, g.ws.length * 4);
      let off = 0;
      g.ranges = [];
      for (let i = 0; i < g.ws.length; i++) {
        d[4 * i] = g.ptrs[i];
        d[4 * i + 1] = g.y + off * 4;
        d[4 * i + 2] = g.bias + off * 4;
        d[4 * i + 3] = g.outs[i];
        off += g.outs[i];
        g.ranges.push(g.ptrs[i], g.outs[i] * g.rb);
      }
    }
    runOne(e, g, x, xs, f);
  }
}

function runOne(
  e: Engine,
  g: DecodeGroup,
  x: number,
  xs: XScratch,
  f: Float32Array,
): void {
  const { kind, inF, total, rb } = g;
  // (the GEMM kernels take two rows or more: one row is always this job)
  e.fn[g.quantize](
    x,
    1,
    inF,
    xs.q8,
    xs.q16,
    xs.meta,
  );
  f[g.counter >> 2] = 0;
  let fn = quantMmKernel(e, kind);
  let q16 = xs.q16;
  if (fn === "q8_0s_mm" && state.split5 && e.fn.q8_split5) {
    q16 = xs.q5;
    e.fn.q8_split5(xs.q8, q16, inF);
    fn = "q8_0t_mm";
  }
  const readAhead = quantReadAhead(e, rb * total);
  const streams = quantWeightStreams();
  runShared(e, fn, inF * total, total, (parts, part) => [
    g.desc,
    g.ws.length,
    xs.q8,
    q16,
    xs.meta,
    1,
    inF,
    g.counter,
    quantGrabRows(total, parts, rb),
    total,
    readAhead,
    part > 0 ? 1 : 0,
    streams,
    0,
  ], () => touchAfter(e, g.ptrs[0], g.ranges));
}
