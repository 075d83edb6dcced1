/**
 * llama-quantize's runs on the synthetic Llama models
 * (tests/vectors/imatrix/, made by tests/vectors/gen/imatrix.sh and
 * iq_presets.sh), and the check that our writer reproduces one, shared by
 * the importance-matrix and IQ-preset GGUF tests.
 */

import { assertEquals } from "@std/assert";
import { encodeHex } from "@std/encoding";
import type { DTypeName } from "../../core/dtypes.ts";
import type { ModelFile } from "../../core/model.ts";
import { type GgufTensorPlan, writeGgufBytes } from "../../formats/gguf/mod.ts";
import { type Imatrix, readImatrix } from "../../models/imatrix.ts";

/** The folder of llama-quantize's vectors and llama-imatrix's matrices. */
export const IMATRIX_DIR: URL = new URL(
  "../vectors/imatrix/",
  import.meta.url,
);

/** One llama-quantize run: its preset, matrix, and the file it wrote. */
export interface QuantizeCase {
  model: string;
  imatrix: string;
  type: string;
  failed?: boolean;
  sha256?: string;
  tensors?: [string, DTypeName][];
}

/** The runs a vector file under IMATRIX_DIR lists. */
export async function quantizeCases(name: string): Promise<QuantizeCase[]> {
  return JSON.parse(await Deno.readTextFile(new URL(name, IMATRIX_DIR)))
    .cases;
}

/** A matrix file under IMATRIX_DIR, read and named `name`. */
export async function readImatrixVector(name: string): Promise<Imatrix> {
  return await readImatrix(
    await Deno.readFile(new URL(name, IMATRIX_DIR)),
    name,
  );
}

/** The SHA-256 of `b`, in hex. */
export async function sha(b: Uint8Array): Promise<string> {
  return encodeHex(
    await crypto.subtle.digest("SHA-256", b as Uint8Array<ArrayBuffer>),
  );
}

/**
 * `file` written with `c`'s preset and `opts` gives llama-quantize's tensor
 * types, by name, and its whole file byte for byte.
 */
export async function assertWritesLikeLlamaQuantize(
  file: ModelFile,
  c: QuantizeCase,
  opts: Record<string, unknown>,
): Promise<void> {
  let plan: GgufTensorPlan[] = [];
  const out = await writeGgufBytes(file, {
    preset: c.type,
    ...opts,
    onPlan: (p) => (plan = p),
  });
  assertEquals(plan.map((p) => [p.name, p.to]), c.tensors);
  assertEquals(await sha(out), c.sha256, "whole file");
}
