/**
 * Checks any format plugin can run: a write → read round trip and a seeded
 * hostile-input run (truncations, bit flips, byte overwrites).
 *
 * @module
 */

import { assert, assertEquals, AssertionError } from "@std/assert";
import type { DTypeName } from "../core/dtypes.ts";
import { loadAllTensors, type ModelFile } from "../core/model.ts";
import type {
  FormatPlugin,
  ReadOptions,
  WriteOptions,
  WriteResult,
} from "../core/plugin.ts";
import { createRng } from "../core/rng.ts";
import { memorySource } from "../core/sources.ts";
import { type Tensor, toFloat32 } from "../core/tensor.ts";

/** How many leading bytes the CLI hands to `detect` (see `io/open.ts`). */
const DETECT_BYTES = 64;

/**
 * Collects what a writer produced into one array, whether it returned all
 * bytes at once or streamed chunks.
 *
 * @param result What `plugin.write` returned.
 * @returns The bytes, in order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { collectBytes } from "@modelhost/modelhost/testing";
 * async function* chunks() { yield new Uint8Array([1]); yield new Uint8Array([2, 3]); }
 * const all = await collectBytes(chunks());
 * assert(all.join() === "1,2,3");
 * ```
 */
export async function collectBytes(result: WriteResult): Promise<Uint8Array> {
  if (result instanceof Promise) return await result;
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of result) {
    // A writer may reuse its buffer between chunks: keep a copy.
    parts.push(chunk.slice());
    total += chunk.byteLength;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Options of {@link assertFormatRoundTrip}. */
export interface FormatRoundTripOptions {
  /** Passed to `plugin.write`. @default {{}} */
  write?: WriteOptions;
  /** Passed to `plugin.read`. @default {{}} */
  read?: ReadOptions;
  /**
   * Name of the in-memory source the bytes are read from (readers may use
   * it in messages or for naming).
   * @default {"roundtrip" + plugin.extensions[0]}
   */
  sourceName?: string;
  /**
   * `"subset"`: every metadata key of each input model must come back with
   * an equal value (strings compare to strings; other values to their JSON
   * text, which is how string-only formats store them). `"ignore"`: the
   * format does not keep metadata.
   * @default {"subset"}
   */
  metadata?: "subset" | "ignore";
  /**
   * Whether a model's network config must come back equal. Formats that
   * hold only arrays pass `false`.
   * @default {true}
   */
  config?: boolean;
  /**
   * Whether the model ids must come back equal (formats that hold one
   * unnamed model make up their own id).
   * @default {false}
   */
  ids?: boolean;
  /**
   * The dtype a tensor is expected to have after the round trip, by
   * tensor name, when the writer converts it (`{ "w": "F16" }`). A tensor
   * not listed must keep its dtype, and then its bytes must be identical.
   * @default {{}}
   */
  dtypes?: Record<string, DTypeName>;
  /**
   * For tensors whose dtype changes: the largest allowed
   * `|after - before|`, as a fraction of the tensor's largest `|before|`
   * (NaN must stay NaN, infinities must stay equal).
   * @default {0}
   */
  tolerance?: number;
  /**
   * Whether writing twice must give the same bytes (writers are
   * deterministic in this project).
   * @default {true}
   */
  deterministic?: boolean;
}

/** What {@link assertFormatRoundTrip} produced. */
export interface FormatRoundTrip {
  /** The written bytes. */
  bytes: Uint8Array;
  /** The file read back from them. */
  file: ModelFile;
}

function valueText(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

function sameFloats(
  name: string,
  before: Float32Array,
  after: Float32Array,
  tolerance: number,
): void {
  assertEquals(
    after.length,
    before.length,
    `tensor "${name}": element count changed`,
  );
  let scale = 0;
  for (const v of before) {
    if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
  }
  const bound = tolerance * scale;
  for (let i = 0; i < before.length; i++) {
    const a = before[i], b = after[i];
    if (Number.isNaN(a) || !Number.isFinite(a)) {
      if (!Object.is(a, b) && !(Number.isNaN(a) && Number.isNaN(b))) {
        throw new AssertionError(
          `tensor "${name}" element ${i}: ${a} came back as ${b}`,
        );
      }
    } else if (!(Math.abs(a - b) <= bound)) {
      throw new AssertionError(
        `tensor "${name}" element ${i}: ${a} came back as ${b} (allowed error ${bound})`,
      );
    }
  }
}

function sameTensor(
  before: Tensor,
  after: Tensor,
  expected: DTypeName | undefined,
  tolerance: number,
): void {
  const name = before.name;
  assertEquals(after.shape, before.shape, `tensor "${name}": shape changed`);
  if (expected === undefined || expected === before.dtype) {
    assertEquals(after.dtype, before.dtype, `tensor "${name}": dtype changed`);
    assertEquals(
      after.quant,
      before.quant,
      `tensor "${name}": quantization params changed`,
    );
    if (!bytesEqual(after.bytes, before.bytes)) {
      throw new AssertionError(
        `tensor "${name}" (${before.dtype}): stored bytes changed (${before.bytes.byteLength} before, ${after.bytes.byteLength} after, first difference at byte ${
          firstDifference(before.bytes, after.bytes)
        })`,
      );
    }
    return;
  }
  assertEquals(after.dtype, expected, `tensor "${name}": dtype after writing`);
  sameFloats(name, toFloat32(before), toFloat32(after), tolerance);
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && firstDifference(a, b) < 0;
}

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.byteLength, b.byteLength);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.byteLength === b.byteLength ? -1 : n;
}

/**
 * Writes a model file with a format plugin, reads the bytes back with the
 * same plugin and asserts that nothing was lost: the same models, tensor
 * names, shapes and dtypes, byte-identical tensors where the dtype is kept
 * (values within `tolerance` where the writer converts), metadata and
 * config. It also checks that writing is deterministic and that `detect`
 * (when the plugin has one) recognizes the written bytes.
 *
 * @param plugin The format plugin; needs `read` and `write`.
 * @param file What to write.
 * @param options What the format keeps and how it converts.
 * @returns The bytes and the file read back, for further checks.
 * @throws {AssertionError} On the first difference, naming the tensor and
 * the element or byte.
 *
 * @example
 * ```ts
 * import { assertFormatRoundTrip } from "@modelhost/modelhost/testing";
 * import { safetensorsFormat } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array([1, -2]), [2])]);
 * await assertFormatRoundTrip(safetensorsFormat(), {
 *   models: [{ id: "m", metadata: { note: "hi" }, tensors }],
 * });
 * ```
 */
export async function assertFormatRoundTrip(
  plugin: FormatPlugin,
  file: ModelFile,
  options: FormatRoundTripOptions = {},
): Promise<FormatRoundTrip> {
  if (!plugin.read || !plugin.write) {
    throw new AssertionError(
      `format "${plugin.name}" needs both read and write for a round trip`,
    );
  }
  const read = plugin.read.bind(plugin);
  const write = plugin.write.bind(plugin);
  const writeOptions = options.write ?? {};
  const bytes = await collectBytes(write(file, writeOptions));
  if (options.deterministic ?? true) {
    const again = await collectBytes(write(file, writeOptions));
    if (!bytesEqual(bytes, again)) {
      throw new AssertionError(
        `format "${plugin.name}": writing the same file twice gave different bytes (first difference at byte ${
          firstDifference(bytes, again)
        })`,
      );
    }
  }
  if (plugin.detect) {
    assert(
      plugin.detect(bytes.subarray(0, DETECT_BYTES)),
      `format "${plugin.name}": detect() does not recognize the bytes its own writer produced`,
    );
  }
  const name = options.sourceName ??
    `roundtrip${plugin.extensions[0] ?? ""}`;
  const back = await read(memorySource(bytes, name), options.read);
  assertEquals(
    back.models.length,
    file.models.length,
    `format "${plugin.name}": model count changed`,
  );
  for (let m = 0; m < file.models.length; m++) {
    const a = file.models[m], b = back.models[m];
    if (options.ids) assertEquals(b.id, a.id, `model ${m}: id changed`);
    assertEquals(
      [...b.tensors.names()].sort(),
      [...a.tensors.names()].sort(),
      `model "${a.id}": tensor names changed`,
    );
    if ((options.metadata ?? "subset") === "subset") {
      for (const [k, v] of Object.entries(a.metadata)) {
        if (v === undefined) continue;
        assert(
          Object.hasOwn(b.metadata, k),
          `model "${a.id}": metadata key "${k}" was lost`,
        );
        assertEquals(
          valueText(b.metadata[k]),
          valueText(v),
          `model "${a.id}": metadata "${k}" changed`,
        );
      }
    }
    if ((options.config ?? true) && a.config !== undefined) {
      assertEquals(b.config, a.config, `model "${a.id}": config changed`);
    }
    const before = await loadAllTensors(a.tensors);
    for (const [tname, t] of before) {
      const info = b.tensors.info(tname);
      assertEquals(
        info.shape,
        t.shape,
        `tensor "${tname}": shape in the index changed`,
      );
      sameTensor(
        t,
        await b.tensors.load(tname),
        options.dtypes?.[tname],
        options.tolerance ?? 0,
      );
    }
  }
  return { bytes, file: back };
}

/** An error class a reader may throw on bad input. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/** Options of {@link assertHostileInputs}. */
export interface HostileInputOptions {
  /** Seed of the mutation generator; a failure message names it. @default {1} */
  seed?: number;
  /** Truncated copies to try, besides lengths 0 and size − 1. @default {32} */
  truncations?: number;
  /** Mutated copies to try (bit flips and byte overwrites). @default {200} */
  mutations?: number;
  /**
   * Half of the mutations land in the first `headBytes` bytes, where the
   * headers are.
   * @default {256}
   */
  headBytes?: number;
  /**
   * Longest a single case may take, in milliseconds (reading, then loading
   * every tensor). A reader that never settles fails here.
   * @default {2000}
   */
  timeLimitMs?: number;
  /**
   * The error classes a reader may throw (subclasses count).
   * @default {[RangeError, TypeError, SyntaxError]}
   */
  errors?: readonly ErrorClass[];
  /** Also load every tensor (and widen it to F32) when a mutant reads. @default {true} */
  loadTensors?: boolean;
  /** Passed to `plugin.read`. @default {{}} */
  read?: ReadOptions;
  /** Name of the in-memory source. @default {"hostile" + plugin.extensions[0]} */
  sourceName?: string;
}

/** What {@link assertHostileInputs} saw. */
export interface HostileInputReport {
  /** Cases run (the intact file included). */
  cases: number;
  /** Mutants that read (and loaded) without an error. */
  accepted: number;
  /** Mutants refused, counted by error class name. */
  refused: Record<string, number>;
  /** The slowest case, in milliseconds. */
  slowestMs: number;
}

interface Case {
  what: string;
  bytes: Uint8Array;
}

function* hostileCases(
  bytes: Uint8Array,
  options: HostileInputOptions,
): Generator<Case> {
  const n = bytes.byteLength;
  const rng = createRng(options.seed ?? 1);
  const cuts = new Set<number>([0, Math.max(0, n - 1)]);
  const truncations = options.truncations ?? 32;
  for (let i = 0; i < truncations && n > 1; i++) cuts.add(rng.int(n));
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    yield { what: `truncated to ${cut} bytes`, bytes: bytes.slice(0, cut) };
  }
  const head = Math.min(n, options.headBytes ?? 256);
  const mutations = options.mutations ?? 200;
  const interesting = [0x00, 0xff, 0x7f, 0x80, 0x01, 0x20, 0x30, 0x39];
  for (let i = 0; i < mutations && n > 0; i++) {
    const copy = bytes.slice();
    const edits: string[] = [];
    const count = 1 + rng.int(3);
    for (let e = 0; e < count; e++) {
      const at = rng.next() < 0.5 ? rng.int(head) : rng.int(n);
      if (rng.next() < 0.5) {
        const bit = rng.int(8);
        copy[at] ^= 1 << bit;
        edits.push(`bit ${bit} of byte ${at}`);
      } else {
        const v = interesting[rng.int(interesting.length)];
        copy[at] = v;
        edits.push(`byte ${at} = 0x${v.toString(16)}`);
      }
    }
    yield { what: `mutation ${i} (${edits.join(", ")})`, bytes: copy };
  }
}

async function withDeadline<T>(
  work: Promise<T>,
  ms: number,
  what: () => string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new AssertionError(`${what()}: did not finish within ${ms} ms`),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Feeds a format plugin's reader with seeded damaged copies of a valid
 * file (truncations, bit flips, overwritten bytes) and asserts that each
 * one either reads (and its tensors load and widen) or is refused with one
 * of the allowed error classes, within a time limit. The intact file must
 * read. Every failure names the seed and the edit, so it can be replayed.
 *
 * @param plugin The format plugin; needs `read`.
 * @param bytes A valid file of the format.
 * @param options Seed, case counts, time limit and allowed errors.
 * @returns Counts of what happened.
 * @throws {AssertionError} When a case throws another error class, a
 * non-error value, or runs past the time limit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { assertHostileInputs } from "@modelhost/modelhost/testing";
 * import { safetensorsFormat, serializeSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array(4), [2, 2])]);
 * const bytes = await serializeSafetensors({ models: [{ id: "m", metadata: {}, tensors }] });
 * const report = await assertHostileInputs(safetensorsFormat(), bytes, { mutations: 20 });
 * assert(report.cases > 20);
 * ```
 */
export async function assertHostileInputs(
  plugin: FormatPlugin,
  bytes: Uint8Array,
  options: HostileInputOptions = {},
): Promise<HostileInputReport> {
  if (!plugin.read) {
    throw new AssertionError(`format "${plugin.name}" has no read`);
  }
  const read = plugin.read.bind(plugin);
  const allowed = options.errors ?? [RangeError, TypeError, SyntaxError];
  const limit = options.timeLimitMs ?? 2000;
  const load = options.loadTensors ?? true;
  const name = options.sourceName ?? `hostile${plugin.extensions[0] ?? ""}`;
  const seed = options.seed ?? 1;
  const report: HostileInputReport = {
    cases: 0,
    accepted: 0,
    refused: {},
    slowestMs: 0,
  };
  const attempt = async (c: Case): Promise<void> => {
    const file = await read(memorySource(c.bytes, name), options.read);
    if (!load) return;
    for (const m of file.models) {
      for (const t of m.tensors.names()) toFloat32(await m.tensors.load(t));
    }
  };
  const intact: Case = { what: "the intact file", bytes };
  for (const c of [intact, ...hostileCases(bytes, options)]) {
    report.cases++;
    const t0 = performance.now();
    const label = () => `format "${plugin.name}", seed ${seed}, ${c.what}`;
    let error: unknown;
    try {
      await withDeadline(attempt(c), limit, label);
    } catch (e) {
      if (e instanceof AssertionError) throw e;
      error = e;
    }
    const ms = performance.now() - t0;
    report.slowestMs = Math.max(report.slowestMs, ms);
    if (ms > limit) {
      throw new AssertionError(`${label()}: took ${ms.toFixed(0)} ms`);
    }
    if (error === undefined) {
      report.accepted++;
      continue;
    }
    if (c === intact) {
      throw new AssertionError(
        `format "${plugin.name}": the intact file does not read: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    }
    if (
      !(error instanceof Error) || !allowed.some((k) => error instanceof k)
    ) {
      const kind = error instanceof Error
        ? error.constructor.name
        : typeof error;
      throw new AssertionError(
        `${label()}: threw ${kind} (${
          error instanceof Error ? error.message : String(error)
        }); allowed: ${allowed.map((k) => k.name).join(", ")}`,
      );
    }
    const key = error.constructor.name;
    report.refused[key] = (report.refused[key] ?? 0) + 1;
  }
  return report;
}
