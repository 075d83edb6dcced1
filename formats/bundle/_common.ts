/**
 * Helpers shared by the bundle writer, reader and validator: tensor
 * collection, error context, SHA-256 and UTF-8 decoding. Private to
 * `formats/bundle/`.
 *
 * @module
 */

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
