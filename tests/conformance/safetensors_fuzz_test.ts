/**
 * Fuzzing the SafeTensors reader with 20,000 seeded mutations of real
 * fixture files: bit flips, truncations, header text edits (with the length
 * prefix fixed up so parsing goes deep), length-field edits, number and
 * dtype swaps. Every mutant must either read (and every tensor then loads
 * and widens) or fail with a typed error; reads stay within the file (the
 * total requested never exceeds the file size); no case takes long.
 */

import { assert, assertEquals } from "@std/assert";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { readSafetensors } from "../../formats/safetensors/mod.ts";
import { type ByteSource, checkRange } from "../../core/sources.ts";
import { toFloat32 } from "../../core/tensor.ts";
import { createRng, type Rng } from "../../core/rng.ts";

const SEEDS = [
  "hf-samples/overall.safetensors",
  "hf-samples/e.safetensors",
  "julia/non_sharded/model.numpy.safetensors",
  "julia/non_sharded/model.with_metadata.safetensors",
  "julia/sharded/model-00005-of-00006.safetensors",
  "candle/jfk-codes.safetensors",
  "syoyo-gen-model.safetensors",
  "synthetic/safetensors-two-tensors.bin",
  "malformed/hf-rust-tests/test_zero_sized_tensor.safetensors",
  "malformed/hf-rust-tests/test_empty_shapes_allowed.safetensors",
];

const MUTANTS = 20_000;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** A source that copies like a file source and tallies what it hands out. */
function tallySource(bytes: Uint8Array): ByteSource & { total: number } {
  const s = {
    name: "mutant",
    size: bytes.length,
    total: 0,
    read(offset: number, length: number): Promise<Uint8Array> {
      try {
        checkRange("mutant", bytes.length, offset, length);
      } catch (e) {
        return Promise.reject(e);
      }
      s.total += length;
      return Promise.resolve(bytes.slice(offset, offset + length));
    },
  };
  return s;
}

function headerLen(b: Uint8Array): number {
  if (b.length < 8) return 0;
  const n = new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true);
  return n > BigInt(b.length - 8) ? Math.max(0, b.length - 8) : Number(n);
}

function withHeader(
  b: Uint8Array,
  text: string,
  fixLength: boolean,
): Uint8Array {
  const n = headerLen(b);
  const h = enc.encode(text);
  const out = new Uint8Array(8 + h.length + (b.length - 8 - n));
  out.set(b.subarray(0, 8));
  if (fixLength) {
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  }
  out.set(h, 8);
  out.set(b.subarray(8 + n), 8 + h.length);
  return out;
}

const NUMBERS = [
  "0",
  "-1",
  "1",
  "2",
  "7",
  "9007199254740993",
  "18446744073709551615",
  "18446744073709551616",
  "1.5",
  "2.0",
  "1e3",
  "-0",
  "4294967296",
  "99999999999999999999999",
];
const DTYPES = [
  "F32",
  "F16",
  "BF16",
  "F64",
  "I8",
  "U8",
  "I64",
  "BOOL",
  "F8_E4M3",
  "F8_E5M2",
  "F4",
  "C64",
  "F128",
  "f32",
  "",
];
const PIECES = [
  "{",
  "}",
  "[",
  "]",
  '"',
  ",",
  ":",
  " ",
  "\\",
  "\\u0000",
  "\\ud800",
  "null",
  "__metadata__",
  '"x":1',
  "\u00e9",
  "\uFEFF",
];

function mutate(src: Uint8Array, rng: Rng): Uint8Array {
  const kind = rng.int(7);
  const n = headerLen(src);
  switch (kind) {
    case 0: { // bit flips, mostly in the header
      const b = src.slice();
      const flips = 1 + rng.int(4);
      for (let i = 0; i < flips; i++) {
        const at = rng.next() < 0.7 ? rng.int(8 + n) : rng.int(b.length);
        b[at] ^= 1 << rng.int(8);
      }
      return b;
    }
    case 1: // truncation
      return src.slice(0, rng.int(src.length));
    case 2: { // header text edit, length prefix usually fixed up
      let t = dec.decode(src.subarray(8, 8 + n));
      const at = rng.int(t.length + 1);
      const op = rng.int(3);
      if (op === 0) t = t.slice(0, at) + t.slice(at + 1 + rng.int(4));
      else if (op === 1) {
        t = t.slice(0, at) + PIECES[rng.int(PIECES.length)] + t.slice(at);
      } else {
        const from = rng.int(t.length + 1);
        t = t.slice(0, at) + t.slice(from, from + 1 + rng.int(40)) +
          t.slice(at);
      }
      return withHeader(src, t, rng.next() < 0.8);
    }
    case 3: { // length field
      const b = src.slice();
      const choices = [
        0n,
        1n,
        BigInt(n - 1),
        BigInt(n + 1),
        BigInt(b.length),
        100_000_001n,
        (1n << 64n) - 1n,
        1n << 53n,
        BigInt(rng.u32()),
      ];
      if (b.length >= 8) {
        new DataView(b.buffer).setBigUint64(
          0,
          choices[rng.int(choices.length)],
          true,
        );
      }
      return b;
    }
    case 4: { // swap a number in the header
      const t = dec.decode(src.subarray(8, 8 + n));
      const nums = [...t.matchAll(/-?\d+/g)];
      if (nums.length === 0) return src.slice();
      const m = nums[rng.int(nums.length)];
      const text = t.slice(0, m.index) + NUMBERS[rng.int(NUMBERS.length)] +
        t.slice(m.index! + m[0].length);
      return withHeader(src, text, true);
    }
    case 5: { // swap a dtype
      const t = dec.decode(src.subarray(8, 8 + n));
      const ds = [...t.matchAll(/"dtype":"([^"]*)"/g)];
      if (ds.length === 0) return src.slice();
      const m = ds[rng.int(ds.length)];
      const text = t.slice(0, m.index) +
        `"dtype":"${DTYPES[rng.int(DTYPES.length)]}"` +
        t.slice(m.index! + m[0].length);
      return withHeader(src, text, true);
    }
    default: { // grow or shrink the data section
      const extra = rng.int(9) - 4;
      if (extra < 0) return src.slice(0, Math.max(0, src.length + extra));
      const b = new Uint8Array(src.length + extra);
      b.set(src);
      return b;
    }
  }
}

conformanceTest(
  `safetensors fuzz: ${MUTANTS} seeded mutations of real files read or fail with a typed error`,
  async () => {
    const seeds = await Promise.all(
      SEEDS.map((f) => Deno.readFile(fixture("safetensors", f))),
    );
    const rng = createRng(0x5afe7e45);
    const outcomes = new Map<string, number>();
    let slowest = 0;
    const started = performance.now();
    for (let i = 0; i < MUTANTS; i++) {
      const bytes = mutate(seeds[i % seeds.length], rng);
      const src = tallySource(bytes);
      const t0 = performance.now();
      let outcome = "read";
      try {
        const m = (await readSafetensors(src)).models[0];
        for (const name of m.tensors.names()) {
          const t = await m.tensors.load(name);
          try {
            toFloat32(t);
          } catch (e) {
            if (e instanceof TypeError && e.name === "UnsupportedDTypeError") {
              continue;
            }
            throw e;
          }
        }
      } catch (e) {
        const ok = e instanceof RangeError || e instanceof TypeError ||
          e instanceof SyntaxError;
        if (!ok) {
          throw new Error(
            `mutant ${i} (seed ${
              SEEDS[i % SEEDS.length]
            }): untyped failure ${e}`,
            { cause: e },
          );
        }
        outcome = (e as Error).name;
      }
      const dt = performance.now() - t0;
      if (dt > slowest) slowest = dt;
      assert(
        src.total <= bytes.length,
        `mutant ${i}: read ${src.total} bytes of a ${bytes.length}-byte file`,
      );
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    const elapsed = performance.now() - started;
    console.log(
      `fuzz: ${MUTANTS} mutants in ${elapsed.toFixed(0)} ms, slowest ${
        slowest.toFixed(1)
      } ms:`,
      Object.fromEntries([...outcomes].sort()),
    );
    assert(slowest < 2000, `a mutant took ${slowest} ms`);
    // The mutations reach every layer: valid reads and each error class.
    for (
      const k of [
        "read",
        "RangeError",
        "SyntaxError",
        "TypeError",
        "UnsupportedDTypeError",
      ]
    ) {
      assert(
        (outcomes.get(k) ?? 0) > 100,
        `only ${outcomes.get(k) ?? 0} outcomes of ${k}`,
      );
    }
    assertEquals([...outcomes.values()].reduce((a, b) => a + b, 0), MUTANTS);
  },
);
