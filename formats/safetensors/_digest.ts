/**
 * The header digest of a SafeTensors file (`modelhost.header_sha256`): one
 * SHA-256 over everything that gives the stored bytes their meaning, so a
 * dtype or shape relabel that keeps the byte length, a renamed tensor or an
 * edited `modelhost.quant` is caught, not only a changed byte.
 *
 * The digested text is the compact JSON (no spaces, `JSON.stringify` /
 * Python `json.dumps(..., separators=(",", ":"), ensure_ascii=False)`) of
 *
 * ```
 * {"quant": <the modelhost.quant string, or null>,
 *  "tensors": [[name, dtype, [dims...], byte sha256], ...]}
 * ```
 *
 * with the tensors sorted by name in UTF-16 code unit order, `dtype` as the
 * header spells it (`F32`, `BOOL`, `F8_E4M3`, ...), and the byte digest from
 * `modelhost.sha256`. Data offsets are left out, so the digest does not
 * depend on where the data lies. `tests/vectors/gen/safetensors_checksum.py`
 * computes it independently.
 *
 * @module
 */

import { dtypeInfo } from "../../core/dtypes.ts";
import type { SafetensorsTensorEntry } from "./_header.ts";

/** `__metadata__` key of the header digest. */
export const HEADER_SHA256_KEY = "modelhost.header_sha256";

/** One tensor as the digest sees it. */
export interface DigestTensor {
  name: string;
  /** The dtype as the header spells it. */
  dtype: string;
  shape: readonly number[];
  /** SHA-256 of the tensor's bytes, 64 lower-case hex digits. */
  sha256: string;
}

function hex(buf: ArrayBuffer): string {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** The text the header digest is taken of. */
export function headerDigestText(
  tensors: readonly DigestTensor[],
  quant: string | undefined,
): string {
  const rows = [...tensors].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0
  ).map((t) => [t.name, t.dtype, [...t.shape], t.sha256]);
  return JSON.stringify({ quant: quant ?? null, tensors: rows });
}

/**
 * The header digest of a file's tensors and quantization metadata.
 *
 * @param tensors Every tensor of the file.
 * @param quant The raw `modelhost.quant` value, if any.
 * @returns 64 lower-case hex digits.
 */
export async function headerDigest(
  tensors: readonly DigestTensor[],
  quant: string | undefined,
): Promise<string> {
  const text = new TextEncoder().encode(headerDigestText(tensors, quant));
  return hex(await crypto.subtle.digest("SHA-256", text));
}

/** The digest's view of header entries, with their recorded byte digests. */
export function digestTensorsOf(
  entries: readonly SafetensorsTensorEntry[],
  bytes: ReadonlyMap<string, string>,
): DigestTensor[] {
  return entries.map((e) => ({
    name: e.name,
    dtype: dtypeInfo(e.dtype).safetensors ?? e.dtype,
    shape: e.shape,
    sha256: bytes.get(e.name) ?? "",
  }));
}
