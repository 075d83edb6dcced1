/**
 * Seeded mutators shared by the fuzz targets: byte-level (flips, interesting
 * integers, truncation, splices) and JSON-level (replace, delete or add a
 * node with values chosen to hit limits, prototype names and deep nesting).
 *
 * @module
 */

import type { Rng } from "../../core/rng.ts";

/** Integers that sit on limits. */
export const INTERESTING_INTS: readonly number[] = [
  0,
  1,
  -1,
  2,
  3,
  7,
  255,
  256,
  65535,
  65536,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53,
  -(2 ** 31),
  1e300,
];

/** Names that reach Object.prototype when used as plain keys. */
export const PROTOTYPE_NAMES: readonly string[] = [
  "__proto__",
  "constructor",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "prototype",
];

/** Picks one element. */
export function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[rng.int(xs.length)];
}

/**
 * One to `max` byte-level mutations of a copy, half aimed at the first
 * `head` bytes (where headers are).
 */
export function mutateBytes(
  rng: Rng,
  input: Uint8Array,
  head = 256,
  max = 4,
): Uint8Array {
  let b = input.slice();
  const n = 1 + rng.int(max);
  for (let k = 0; k < n; k++) {
    if (b.length === 0) return b;
    const span = rng.next() < 0.5 ? Math.min(head, b.length) : b.length;
    const at = rng.int(span);
    switch (rng.int(7)) {
      case 0:
        b[at] ^= 1 << rng.int(8);
        break;
      case 1:
        b[at] = rng.int(256);
        break;
      case 2: { // an interesting little-endian integer, 4 or 8 bytes wide
        const v = BigInt.asUintN(
          64,
          BigInt(Math.trunc(pick(rng, INTERESTING_INTS) % 2 ** 64)),
        );
        const width = rng.next() < 0.5 ? 4 : 8;
        for (let i = 0; i < width && at + i < b.length; i++) {
          b[at + i] = Number((v >> BigInt(8 * i)) & 0xffn);
        }
        break;
      }
      case 3:
        b = b.slice(0, at);
        break;
      case 4: { // duplicate a chunk
        const len = 1 + rng.int(Math.min(64, b.length - at));
        const out = new Uint8Array(b.length + len);
        out.set(b.subarray(0, at + len));
        out.set(b.subarray(at), at + len);
        b = out;
        break;
      }
      case 5: { // delete a chunk
        const len = 1 + rng.int(Math.min(64, b.length - at));
        const out = new Uint8Array(b.length - len);
        out.set(b.subarray(0, at));
        out.set(b.subarray(at + len), at);
        b = out;
        break;
      }
      default:
        b[at] = pick(rng, [0, 0xff, 0x7f, 0x80, 0x22, 0x5c, 0x7b, 0x5b]);
    }
  }
  return b;
}

const DEEP = "\u0001deep:";

/** A placeholder {@link jsonText} writes as arrays/objects nested 300 to 100,000 deep. */
function deepValue(rng: Rng): unknown {
  return `${DEEP}${pick(rng, [300, 1000, 10_000, 100_000])}:${rng.int(2)}`;
}

/** A value meant to break whatever reads the node it replaces. */
export function interestingValue(rng: Rng, old?: unknown): unknown {
  switch (rng.int(12)) {
    case 0:
      return pick(rng, INTERESTING_INTS);
    case 1:
      return typeof old === "number" ? -old : -1;
    case 2:
      return typeof old === "number" ? old + pick(rng, [1, -1, 2, 1000]) : 0;
    case 3:
      return pick(rng, PROTOTYPE_NAMES);
    case 4:
      return null;
    case 5:
      return pick(rng, [
        "",
        "x",
        "F32",
        "I8",
        "BOOL",
        "Q4_0",
        "BF16",
        "F8_E4M3",
        "U64",
        "C64",
      ]);
    case 6:
      return [];
    case 7:
      return {};
    case 8:
      return deepValue(rng);
    case 9:
      return "x".repeat(pick(rng, [4097, 70_000]));
    case 10:
      return Array.isArray(old)
        ? old.map((x) =>
          typeof x === "number" ? pick(rng, INTERESTING_INTS) : x
        )
        : [pick(rng, INTERESTING_INTS), pick(rng, INTERESTING_INTS)];
    default:
      return pick(rng, [true, false, 0.5, NaN, "1e999"]);
  }
}

type Container = Record<string, unknown> | unknown[];

function containers(root: unknown, limit = 2000): Container[] {
  const out: Container[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0 && out.length < limit) {
    const v = stack.pop();
    if (typeof v !== "object" || v === null) continue;
    out.push(v as Container);
    for (const x of Array.isArray(v) ? v : Object.values(v)) {
      // long arrays of numbers (vocabularies, merges) are sampled, not all walked
      if (typeof x === "object" && x !== null && stack.length < 4000) {
        stack.push(x);
      }
    }
  }
  return out;
}

/**
 * Mutates a parsed JSON value in place, one to `max` times: replaces a
 * node's value, deletes a key, or adds a key (prototype names included).
 */
export function mutateJson(rng: Rng, root: unknown, max = 3): unknown {
  const n = 1 + rng.int(max);
  for (let k = 0; k < n; k++) {
    const cs = containers(root);
    if (cs.length === 0) return interestingValue(rng, root);
    const c = pick(rng, cs);
    if (Array.isArray(c)) {
      if (c.length === 0 || rng.next() < 0.2) c.push(interestingValue(rng));
      else {
        const i = rng.int(c.length);
        if (rng.next() < 0.2) c.splice(i, 1);
        else c[i] = interestingValue(rng, c[i]);
      }
      continue;
    }
    const keys = Object.keys(c);
    const r = rng.next();
    if (keys.length === 0 || r < 0.15) {
      Object.defineProperty(c, pick(rng, [...PROTOTYPE_NAMES, "x", ""]), {
        value: interestingValue(rng),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else if (r < 0.3) delete c[pick(rng, keys)];
    else {
      const key = pick(rng, keys);
      c[key] = interestingValue(rng, c[key]);
    }
  }
  return root;
}

/**
 * JSON text of a value: non-finite numbers become 1e308, deep placeholders
 * become nested arrays or objects.
 */
export function jsonText(v: unknown): string {
  const t = JSON.stringify(
    v,
    (_k, x) => (typeof x === "number" && !Number.isFinite(x) ? 1e308 : x),
  );
  return t.replace(/"\\u0001deep:(\d+):(\d)"/g, (_m, n, kind) => {
    const d = Number(n);
    return kind === "0"
      ? "[".repeat(d) + "]".repeat(d)
      : '{"a":'.repeat(d) + "1" + "}".repeat(d);
  });
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** UTF-8 bytes of a string. */
export function utf8(s: string): Uint8Array {
  return enc.encode(s);
}

/** A string of UTF-8 bytes (invalid sequences replaced). */
export function text(b: Uint8Array): string {
  return dec.decode(b);
}
