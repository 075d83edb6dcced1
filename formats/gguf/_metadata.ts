// The typed metadata a model is written to GGUF with: descriptors carried in
// `gguf.types` (values that came back as text through SafeTensors'
// string-only metadata are read back into their types), inferred otherwise.

import type { Model } from "../../core/model.ts";
import { type GgufMetadataEntry, GgufType } from "./types.ts";
import {
  type Desc,
  inferDescriptor,
  parseDescriptor,
  typedValue,
} from "./_desc.ts";

/**
 * A typed value that came back as text through a format whose metadata is
 * strings only (SafeTensors `__metadata__`): JSON for arrays, numbers and
 * booleans, decimal text for 64-bit integers.
 */
function fromText(text: string, d: Desc): unknown {
  if (d.type === GgufType.STRING) return text;
  try {
    if (d.type === GgufType.UINT64 || d.type === GgufType.INT64) {
      return BigInt(text.replace(/^"|"$/g, ""));
    }
    const v = JSON.parse(text, (_k, x) => x);
    return d.type === GgufType.ARRAY && Array.isArray(v) &&
        d.inner?.some((i) =>
          i.type === GgufType.UINT64 || i.type === GgufType.INT64
        )
      ? v.map((x) =>
        typeof x === "string" || typeof x === "number" ? BigInt(x) : x
      )
      : v;
  } catch {
    return text;
  }
}

/**
 * The typed metadata a model is written with: its `gguf.types` descriptors
 * where the value still fits them, otherwise inferred types. Objects that
 * are not arrays are written as JSON strings; `null` and `undefined` are
 * skipped.
 */
export function modelMetadata(model: Model): GgufMetadataEntry[] {
  let rawTypes = model.metadata["gguf.types"] ?? {};
  if (typeof rawTypes === "string") {
    // carried as JSON text by a string-only format
    try {
      rawTypes = JSON.parse(rawTypes);
    } catch {
      rawTypes = {};
    }
  }
  const types: Record<string, unknown> =
    rawTypes !== null && typeof rawTypes === "object" &&
      !Array.isArray(rawTypes)
      ? rawTypes as Record<string, unknown>
      : {};
  const out: GgufMetadataEntry[] = [];
  const add = (key: string, raw: unknown) => {
    if (raw === undefined || raw === null) return;
    let value = raw;
    if (
      typeof value === "object" && !Array.isArray(value) &&
      !ArrayBuffer.isView(value)
    ) {
      value = JSON.stringify(value);
    }
    const desc = Object.hasOwn(types, key) ? types[key] : undefined;
    const given = typeof desc === "string" ? parseDescriptor(desc) : undefined;
    let d = given;
    let v = d ? typedValue(value, d) : undefined;
    if (v === undefined && d && typeof value === "string") {
      v = typedValue(fromText(value, d), d);
    }
    if (v === undefined) {
      d = inferDescriptor(value);
      v = d ? typedValue(value, d) : undefined;
    }
    if (v === undefined || !d) {
      throw new TypeError(
        `Cannot write metadata "${key}" to GGUF: ${
          Array.isArray(value)
            ? "an array mixing value kinds"
            : `a ${typeof value} value`
        } has no GGUF type`,
      );
    }
    out.push({ key, type: d.type, value: v });
  };
  for (const [key, value] of Object.entries(model.metadata)) {
    if (key === "gguf.types") continue;
    add(key, value);
  }
  if (model.config !== undefined && !("modelhost.config" in model.metadata)) {
    add("modelhost.config", JSON.stringify(model.config));
  }
  return out;
}
