/**
 * Full validation of a SafeTensors file or checkpoint: every structural
 * rule, the modelhost metadata keys, the index of a sharded checkpoint and
 * the stored per-tensor SHA-256 digests. Problems are collected, not
 * thrown, so one run reports all of them.
 *
 * @module
 */

import type { ByteSource } from "../../core/sources.ts";
import type { SafetensorsHeader, SafetensorsTensorEntry } from "./_header.ts";
import {
  configFromMetadata,
  isJsonText,
  parseSafetensorsIndex,
  quantFromMetadata,
  readSafetensorsHeader,
  SAFETENSORS_KEYS,
  type SafetensorsIndex,
} from "./read.ts";
import { sha256Hex } from "./write.ts";
import { digestTensorsOf, headerDigest } from "./_digest.ts";

/** One problem found by {@link validateSafetensors}. */
export interface SafetensorsProblem {
  /** The file it was found in (a shard name, the index, or the source name). */
  file: string;
  /** The tensor concerned, when there is one. */
  tensor?: string;
  /** The class of error reading would throw (`RangeError`, `TypeError`, ...), or `"Mismatch"` for a digest or size that disagrees. */
  kind: string;
  /** What is wrong, with the numbers. */
  message: string;
}

/** What {@link validateSafetensors} found. */
export interface SafetensorsReport {
  /** True when no problem was found. */
  ok: boolean;
  /** Every problem, in the order found. */
  problems: SafetensorsProblem[];
  /** Files whose header was read (shards, or 1). */
  files: number;
  /** Tensors whose bytes were read. */
  tensors: number;
  /** Tensors whose stored SHA-256 matched or was compared. */
  hashed: number;
}

/** Options of {@link validateSafetensors}. */
export interface SafetensorsValidateOptions {
  /** Opens shard files named by an index or by a list of files. @default {undefined} */
  resolve?: (relativePath: string) => Promise<ByteSource>;
  /** Read every tensor's bytes, also those without a stored digest. @default {true} */
  readAll?: boolean;
  /** Count a tensor without a stored SHA-256 as a problem. @default {false} */
  requireSha256?: boolean;
}

const HEX64 = /^[0-9a-f]{64}$/;

function kindOf(e: unknown): string {
  return e instanceof Error ? e.name : "Error";
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

interface Opened {
  file: string;
  src: ByteSource;
  header: SafetensorsHeader;
  byName: Map<string, SafetensorsTensorEntry>;
}

/**
 * Validates a SafeTensors file, a sharded checkpoint (its index as `target`,
 * shards opened with `options.resolve`) or a list of shard files, and checks
 * every stored SHA-256 (`modelhost.sha256`) against the bytes. Nothing is
 * thrown for a bad file: every problem is listed in the report.
 *
 * @param target The file or index, or relative names of files to open with `resolve`.
 * @param options Resolver and strictness.
 * @returns The report.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { serializeSafetensors, validateSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, memorySource, tensorFromF32 } from "@modelhost/modelhost/core";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array([1, 2]), [2])]);
 * const bytes = await serializeSafetensors({ models: [{ id: "m", metadata: {}, tensors }] }, { sha256: true });
 * bytes[bytes.length - 1] ^= 1; // damage the data
 * const report = await validateSafetensors(memorySource(bytes));
 * assert(!report.ok && report.problems[0].tensor === "w");
 * ```
 */
export async function validateSafetensors(
  target: ByteSource | readonly string[],
  options: SafetensorsValidateOptions = {},
): Promise<SafetensorsReport> {
  const problems: SafetensorsProblem[] = [];
  const report = { files: 0, tensors: 0, hashed: 0 };
  const add = (file: string, kind: string, message: string, tensor?: string) =>
    problems.push(
      tensor === undefined
        ? { file, kind, message }
        : { file, tensor, kind, message },
    );

  let files: string[];
  let index: SafetensorsIndex | undefined;
  let indexName = "";
  let single: ByteSource | undefined;
  if (Array.isArray(target)) {
    files = [...target];
  } else {
    const src = target as ByteSource;
    indexName = src.name;
    const first = await src.read(0, Math.min(8, src.size)).catch(() =>
      new Uint8Array()
    );
    if (isJsonText(first)) {
      try {
        index = parseSafetensorsIndex(await src.read(0, src.size), src.name);
      } catch (e) {
        add(src.name, kindOf(e), messageOf(e));
        return { ok: false, problems, ...report };
      }
      files = [...new Set(index.weightMap.values())];
    } else {
      single = src;
      files = [src.name];
    }
  }
  if (!single && !options.resolve) {
    add(
      indexName || "<files>",
      "TypeError",
      "Opening the shards needs options.resolve",
    );
    return { ok: false, problems, ...report };
  }

  const opened: Opened[] = [];
  for (const file of files) {
    let src: ByteSource;
    try {
      src = single ?? await options.resolve!(file);
    } catch (e) {
      add(file, kindOf(e), `Cannot open ${file}: ${messageOf(e)}`);
      continue;
    }
    try {
      const header = await readSafetensorsHeader(src);
      const byName = new Map(header.tensors.map((t) => [t.name, t]));
      opened.push({ file, src, header, byName });
      report.files++;
    } catch (e) {
      add(file, kindOf(e), messageOf(e));
    }
  }

  // Index consistency: every listed tensor in its shard, nothing unlisted, total size.
  const where = new Map<string, string>();
  for (const o of opened) {
    for (const t of o.header.tensors) {
      const before = where.get(t.name);
      if (before !== undefined) {
        add(
          o.file,
          "TypeError",
          `Tensor ${JSON.stringify(t.name)} is in both ${before} and ${o.file}`,
          t.name,
        );
      } else {
        where.set(t.name, o.file);
      }
    }
  }
  if (index) {
    const byFile = new Map(opened.map((o) => [o.file, o]));
    let total = 0;
    let complete = true;
    for (const [name, file] of index.weightMap) {
      if (!byFile.has(file)) {
        complete = false; // already reported
        continue;
      }
      const t = byFile.get(file)!.byName.get(name);
      if (!t) {
        complete = false;
        add(
          file,
          "RangeError",
          `Tensor ${
            JSON.stringify(name)
          } is listed in the index for ${file}, but that shard has no such tensor`,
          name,
        );
      } else {
        total += t.byteLength;
      }
    }
    for (const o of opened) {
      for (const t of o.header.tensors) {
        if (index.weightMap.get(t.name) !== o.file) {
          add(
            o.file,
            "TypeError",
            `Tensor ${JSON.stringify(t.name)} is in ${o.file} but the index ${
              index.weightMap.has(t.name)
                ? `places it in ${index.weightMap.get(t.name)}`
                : "does not list it"
            }`,
            t.name,
          );
        }
      }
    }
    const declared = index.metadata.total_size;
    if (declared !== undefined && complete && declared !== total) {
      add(
        indexName,
        "Mismatch",
        `The index declares total_size ${
          JSON.stringify(declared)
        }, the listed tensors hold ${total} bytes`,
      );
    }
  }

  for (const o of opened) {
    const meta = o.header.metadata;
    try {
      configFromMetadata(meta, o.file);
    } catch (e) {
      add(o.file, kindOf(e), messageOf(e));
    }
    try {
      quantFromMetadata(meta, o.byName, o.file);
    } catch (e) {
      add(o.file, kindOf(e), messageOf(e));
    }
    const digests = new Map<string, string>();
    if (meta && Object.hasOwn(meta, SAFETENSORS_KEYS.sha256)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(meta[SAFETENSORS_KEYS.sha256]);
      } catch (e) {
        add(
          o.file,
          "SyntaxError",
          `Cannot read __metadata__["${SAFETENSORS_KEYS.sha256}"]: ${
            messageOf(e)
          }`,
        );
      }
      if (parsed !== undefined) {
        if (
          typeof parsed !== "object" || parsed === null || Array.isArray(parsed)
        ) {
          add(
            o.file,
            "TypeError",
            `__metadata__["${SAFETENSORS_KEYS.sha256}"] must be an object of tensor name to hex digest`,
          );
        } else {
          for (const [name, d] of Object.entries(parsed)) {
            if (typeof d !== "string" || !HEX64.test(d)) {
              add(
                o.file,
                "TypeError",
                `The stored SHA-256 of ${
                  JSON.stringify(name)
                } is not 64 lowercase hex digits`,
                name,
              );
            } else if (!o.byName.has(name)) {
              add(
                o.file,
                "TypeError",
                `A SHA-256 is stored for ${
                  JSON.stringify(name)
                }, which is not a tensor of this file`,
                name,
              );
            } else {
              digests.set(name, d);
            }
          }
        }
      }
    }
    if (meta && Object.hasOwn(meta, SAFETENSORS_KEYS.headerSha256)) {
      const want = meta[SAFETENSORS_KEYS.headerSha256];
      const key = `__metadata__["${SAFETENSORS_KEYS.headerSha256}"]`;
      if (!HEX64.test(want)) {
        add(o.file, "TypeError", `${key} is not 64 lowercase hex digits`);
      } else if (
        o.header.tensors.some((t) => !digests.has(t.name))
      ) {
        add(
          o.file,
          "Mismatch",
          `${key} is recorded but __metadata__["${SAFETENSORS_KEYS.sha256}"] does not give every tensor's byte digest (a removed checksum)`,
        );
      } else {
        const quant = Object.hasOwn(meta, SAFETENSORS_KEYS.quant)
          ? meta[SAFETENSORS_KEYS.quant]
          : undefined;
        const got = await headerDigest(
          digestTensorsOf(o.header.tensors, digests),
          quant,
        );
        if (got !== want) {
          add(
            o.file,
            "Mismatch",
            `${key} records ${want}, the tensors' names, dtypes, shapes and byte digests with __metadata__["${SAFETENSORS_KEYS.quant}"] hash to ${got}`,
          );
        }
      }
    }
    for (const t of o.header.tensors) {
      const want = digests.get(t.name);
      if (want === undefined && options.requireSha256) {
        add(
          o.file,
          "Mismatch",
          `Tensor ${JSON.stringify(t.name)} has no stored SHA-256`,
          t.name,
        );
      }
      if (want === undefined && options.readAll === false) continue;
      let bytes: Uint8Array;
      try {
        bytes = await o.src.read(t.byteOffset, t.byteLength);
        report.tensors++;
      } catch (e) {
        add(
          o.file,
          kindOf(e),
          `Cannot read tensor ${JSON.stringify(t.name)}: ${messageOf(e)}`,
          t.name,
        );
        continue;
      }
      if (want === undefined) continue;
      const got = await sha256Hex(bytes);
      report.hashed++;
      if (got !== want) {
        add(
          o.file,
          "Mismatch",
          `Tensor ${
            JSON.stringify(t.name)
          }: SHA-256 of its ${t.byteLength} bytes is ${got}, the header records ${want}`,
          t.name,
        );
      }
    }
  }
  return { ok: problems.length === 0, problems, ...report };
}
