/**
 * Helpers shared by the bundle writer, reader and validator: tensor
 * collection, error context, SHA-256 and UTF-8 decoding. Private to
 * `formats/bundle/`.
 *
 * @module
 */

import { setOwn } from "../../core/_own.ts";
import { canonicalJson } from "./_json.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import type { TensorIndex } from "../../core/model.ts";
import type { Tensor } from "../../core/tensor.ts";
import type { BundleModelInput } from "./write.ts";

function isTensorIndex(x: unknown): x is TensorIndex {
  const o = x as TensorIndex;
  return typeof o?.names === "function" && typeof o?.load === "function";
}

/** A model's tensors by name, loaded from whichever form it gives them in. */
export async function tensorsOf(
  m: BundleModelInput,
): Promise<Map<string, Tensor>> {
  const out = new Map<string, Tensor>();
  const src = m.tensors;
  if (isTensorIndex(src)) {
    for (const name of src.names()) out.set(name, await src.load(name));
  } else if (src instanceof Map) {
    for (const [name, t] of src as ReadonlyMap<string, Tensor>) {
      out.set(name, t);
    }
  } else {
    for (const t of src as Iterable<Tensor>) {
      if (out.has(t.name)) {
        throw new TypeError(
          `Cannot save model "${m.id}": two tensors are named "${t.name}"`,
        );
      }
      out.set(t.name, t);
    }
  }
  return out;
}

/** How errors name a tensor. */
export function where(modelId: string, name: string): string {
  return `tensor "${name}" of model "${modelId}"`;
}

/** Re-throws an error of the same class with context in front of its message. */
export function rewrap(e: unknown, context: string): Error {
  if (!(e instanceof Error)) return new TypeError(`${context}: ${e}`);
  const msg = `${context}: ${e.message}`;
  if (e instanceof UnsupportedDTypeError) {
    const reason = e.message.replace(`Unsupported dtype ${e.dtype}: `, "");
    return new UnsupportedDTypeError(e.dtype, `${context}: ${reason}`);
  }
  if (e instanceof RangeError) return new RangeError(msg);
  if (e instanceof SyntaxError) return new SyntaxError(msg);
  if (e instanceof TypeError) return new TypeError(msg);
  return e;
}

function hex(digest: ArrayBuffer): string {
  const b = new Uint8Array(digest);
  let s = "";
  for (let i = 0; i < b.length; i++) s += b[i].toString(16).padStart(2, "0");
  return s;
}

export function sha256(bytes: Uint8Array): Promise<string> {
  return crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)
    .then(hex);
}

/**
 * The digest a model's `weights.sha256` records: SHA-256 of the canonical
 * JSON of every tensor entry without its `data` (dtype, shape, quantization
 * fields and scales, and the entry's own byte `sha256`), by tensor name. It
 * covers everything that gives the bytes their meaning.
 *
 * @param entries Tensor entries by name (plain JSON, long strings restored).
 * @returns The hex digest.
 */
export function descriptorDigest(
  entries: Record<string, unknown>,
): Promise<string> {
  const described: Record<string, unknown> = {};
  for (const name of Object.keys(entries)) {
    const e = entries[name];
    if (e === null || typeof e !== "object" || Array.isArray(e)) {
      setOwn(described, name, e);
      continue;
    }
    const rest: Record<string, unknown> = {};
    for (const k of Object.keys(e)) {
      if (k !== "data") setOwn(rest, k, (e as Record<string, unknown>)[k]);
    }
    setOwn(described, name, rest);
  }
  return sha256(new TextEncoder().encode(canonicalJson(described, "weights")));
}

/** The JSON text of a bundle (a leading BOM dropped), refusing bytes that are not UTF-8. */
export function textOf(input: string | Uint8Array): string {
  if (typeof input === "string") {
    return input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  }
  // The replacing decoder is several times faster than the fatal one; only
  // text that holds U+FFFD (rare, and never in base64) is decoded again
  // strictly to tell a real U+FFFD from a bad byte.
  const text = new TextDecoder().decode(input);
  if (text.indexOf("\uFFFD") >= 0) {
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch {
      throw new SyntaxError(
        "Cannot read bundle: the bytes are not UTF-8 text, so not JSON",
      );
    }
  }
  return text;
}
