/**
 * F16 → F32 widening of whole arrays by whichever of two paths measures
 * faster on the machine it runs on: the lookup table
 * ({@link F16_TO_F32_BITS}) or the platform's `Float16Array` conversion.
 * Both give the same bits for all 65,536 codes: the platform quiets a
 * signaling NaN (sets bit 22), so its output gets one more pass that
 * rewrites NaNs from the table (payloads kept, a signaling NaN stays
 * signaling), and that pass is part of what is timed.
 *
 * The choice is made once, on the first call of 64 Ki codes or more, by
 * timing both paths on 256 Ki codes, alternating, 3 untimed rounds and 5
 * timed ones each (the medians; 20–60 ms once on a loaded 2-vCPU machine);
 * {@link f16WidenState} reports and overrides it.
 *
 * @module
 */

import { F16_TO_F32_BITS } from "./f16.ts";

/** Which path widens F16 arrays. */
export type F16WidenPath = "table" | "platform";

/**
 * The widening path: `path` is undefined until measured (or set by a
 * caller: tests and benchmarks force one), `timings` holds what the
 * measurement saw (milliseconds per 1 Mi codes, median of 5 rounds).
 */
export const f16WidenState: {
  path: F16WidenPath | undefined;
  timings?: { table: number; platform: number };
} = { path: undefined };

/** Calls this small never trigger the measurement (they use the table). */
const MEASURE_AT = 1 << 16;
/** Codes per timed round. */
const SAMPLE = 1 << 18;
/** Untimed rounds first (both paths reach the optimizing compiler), then timed ones. */
const WARM = 3, ROUNDS = 5;

/** Whether the platform has `Float16Array`. */
const HAS_F16 = typeof (globalThis as { Float16Array?: unknown })
  .Float16Array === "function";

/**
 * Widens by the table.
 *
 * @param h F16 codes.
 * @returns The values.
 */
export function widenF16Table(h: Uint16Array): Float32Array {
  const n = h.length;
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = F16_TO_F32_BITS[h[i]];
  return new Float32Array(out.buffer);
}

/**
 * Widens through the platform's `Float16Array`, then rewrites each NaN from
 * the table (the platform quiets signaling NaNs).
 *
 * @param h F16 codes.
 * @returns The values, bit for bit those of {@link widenF16Table}.
 * @throws {TypeError} Where the platform has no `Float16Array`.
 */
export function widenF16Platform(h: Uint16Array): Float32Array {
  if (!HAS_F16) {
    throw new TypeError("Cannot widen F16: this platform has no Float16Array");
  }
  const half = new Float16Array(h.buffer, h.byteOffset, h.length);
  const out = new Float32Array(h.length);
  out.set(half);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < out.length; i++) {
    // deno-lint-ignore no-self-compare
    if (out[i] !== out[i]) bits[i] = F16_TO_F32_BITS[h[i]];
  }
  return out;
}

function median(a: number[]): number {
  return a.sort((x, y) => x - y)[a.length >> 1];
}

/** Times both paths (alternating) and records the faster. */
function measure(): F16WidenPath {
  if (!HAS_F16) return "table";
  const h = new Uint16Array(SAMPLE);
  let s = 0x9e3779b9;
  for (let i = 0; i < SAMPLE; i++) {
    s = (s ^ (s << 13)) >>> 0;
    s ^= s >>> 17;
    s = (s ^ (s << 5)) >>> 0;
    h[i] = s & 0xfbff; // finite codes, as in weights
  }
  const t: number[] = [], p: number[] = [];
  for (let r = 0; r < WARM + ROUNDS; r++) {
    let t0 = performance.now();
    widenF16Table(h);
    const a = performance.now() - t0;
    t0 = performance.now();
    widenF16Platform(h);
    const b = performance.now() - t0;
    if (r >= WARM) t.push(a * 4), p.push(b * 4); // per 1 Mi codes
  }
  const table = median(t), platform = median(p);
  f16WidenState.timings = { table, platform };
  return platform < table ? "platform" : "table";
}

/**
 * Widens F16 codes to F32 by the path measured faster here (see the
 * module); same bits either way.
 *
 * @param h F16 codes.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { widenF16 } from "./f16_widen.ts";
 * const y = widenF16(new Uint16Array([0x3c00, 0xc000, 0x7c01]));
 * assert(y[0] === 1 && y[1] === -2);
 * assert(new Uint32Array(y.buffer)[2] === 0x7f802000); // signaling NaN kept
 * ```
 */
export function widenF16(h: Uint16Array): Float32Array {
  if (f16WidenState.path === undefined) {
    if (h.length < MEASURE_AT) return widenF16Table(h);
    f16WidenState.path = measure();
  }
  return f16WidenState.path === "platform" && HAS_F16
    ? widenF16Platform(h)
    : widenF16Table(h);
}
