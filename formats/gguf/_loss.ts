/**
 * What a conversion lost of GGUF metadata types.
 *
 * @module
 */

function typesOf(
  md: Record<string, unknown>,
): Record<string, unknown> | undefined {
  let t = md["gguf.types"];
  if (typeof t === "string") {
    try {
      t = JSON.parse(t);
    } catch {
      return undefined;
    }
  }
  return t !== null && typeof t === "object" && !Array.isArray(t)
    ? t as Record<string, unknown>
    : undefined;
}

/**
 * Compares the GGUF type table (`gguf.types`, as an object or as the JSON
 * text a string-only format keeps) of a source's metadata with a result's:
 * every key the source typed must still be there with the same type.
 *
 * @param source The source model's metadata.
 * @param result The converted model's metadata.
 * @returns One line per loss (`key: UINT32 became STRING`, `key: dropped`);
 * empty when nothing typed was lost or the source had no types.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ggufTypeLoss } from "@modelhost/modelhost/formats/gguf";
 * const src = { "a.n": 64, "gguf.types": { "a.n": "UINT32" } };
 * assertEquals(ggufTypeLoss(src, { "a.n": 64, "gguf.types": '{"a.n":"UINT32"}' }), []);
 * assertEquals(ggufTypeLoss(src, { "a.n": "64", "gguf.types": { "a.n": "STRING" } }), ["a.n: UINT32 became STRING"]);
 * ```
 */
export function ggufTypeLoss(
  source: Record<string, unknown>,
  result: Record<string, unknown>,
): string[] {
  const before = typesOf(source);
  if (!before) return [];
  const after = typesOf(result);
  if (!after) return ["gguf.types: the result keeps no metadata types"];
  const out: string[] = [];
  for (const [key, t] of Object.entries(before)) {
    if (!Object.hasOwn(result, key)) out.push(`${key}: dropped`);
    else if (!Object.hasOwn(after, key)) {
      out.push(`${key}: ${t} became untyped`);
    } else if (after[key] !== t) out.push(`${key}: ${t} became ${after[key]}`);
  }
  return out;
}
