/**
 * Private helpers the layer plugins share: reading and checking config
 * fields (every error names the layer path and the field), and shape checks
 * on forward inputs.
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import type { ParseContext } from "../core/plugin.ts";
import type { FloatTensor } from "../core/tensor.ts";

/** A layer definition as parsed JSON. */
export type Fields = Record<string, unknown>;

/** The value as it appears in an error message. */
export function shown(v: unknown): string {
  if (v === undefined) return "nothing";
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  try {
    const s = JSON.stringify(v);
    return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    return String(v);
  }
}

/** A config error naming `path.field`. */
export function fieldError(
  path: string,
  field: string,
  msg: string,
): TypeError {
  return new TypeError(`${path}.${field}: ${msg}`);
}

/**
 * Checks that `json` is a layer definition object with only known fields.
 * `type` is always allowed.
 */
export function layerFields(
  json: LayerConfig,
  ctx: ParseContext,
  type: string,
  known: readonly string[],
): Fields {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new TypeError(
      `${ctx.path}: expected a layer definition object, got ${shown(json)}`,
    );
  }
  for (const key of Object.keys(json)) {
    if (key !== "type" && !known.includes(key)) {
      throw fieldError(
        ctx.path,
        key,
        `unknown field for a "${type}" layer (known fields: ${
          known.join(", ")
        })`,
      );
    }
  }
  return json;
}

/** An optional positive integer field. */
export function optPositiveInt(
  o: Fields,
  field: string,
  path: string,
): number | undefined {
  const v = o[field];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw fieldError(
      path,
      field,
      `expected a positive integer, got ${shown(v)}`,
    );
  }
  return v;
}

/** A positive integer field, required unless a default is given. */
export function positiveInt(
  o: Fields,
  field: string,
  path: string,
  fallback?: number,
): number {
  const v = optPositiveInt(o, field, path) ?? fallback;
  if (v === undefined) {
    throw fieldError(path, field, "required: expected a positive integer");
  }
  return v;
}

/** Limits of a number field. */
export interface NumberRange {
  /** Smallest allowed value (inclusive). */
  min?: number;
  /** Values must be strictly above this. */
  above?: number;
  /** Largest allowed value (inclusive). */
  max?: number;
}

/** A finite number field with a default. */
export function numberField(
  o: Fields,
  field: string,
  path: string,
  fallback: number,
  range: NumberRange = {},
): number {
  const v = o[field];
  if (v === undefined) return fallback;
  const what = range.above !== undefined
    ? `a number above ${range.above}`
    : range.min !== undefined && range.max !== undefined
    ? `a number in [${range.min}, ${range.max}]`
    : range.min !== undefined
    ? `a number ≥ ${range.min}`
    : "a finite number";
  if (
    typeof v !== "number" || !Number.isFinite(v) ||
    (range.above !== undefined && !(v > range.above)) ||
    (range.min !== undefined && v < range.min) ||
    (range.max !== undefined && v > range.max)
  ) {
    throw fieldError(path, field, `expected ${what}, got ${shown(v)}`);
  }
  return v;
}

/** A boolean field with a default. */
export function boolField(
  o: Fields,
  field: string,
  path: string,
  fallback: boolean,
): boolean {
  const v = o[field];
  if (v === undefined) return fallback;
  if (typeof v !== "boolean") {
    throw fieldError(path, field, `expected true or false, got ${shown(v)}`);
  }
  return v;
}

/** A string field restricted to `choices` (aliases map to a choice). */
export function choiceField<T extends string>(
  o: Fields,
  field: string,
  path: string,
  choices: readonly T[],
  fallback: T,
  aliases: Readonly<Record<string, T>> = {},
): T {
  const v = o[field];
  if (v === undefined) return fallback;
  if (typeof v === "string") {
    if ((choices as readonly string[]).includes(v)) return v as T;
    if (Object.hasOwn(aliases, v)) return aliases[v];
  }
  throw fieldError(
    path,
    field,
    `expected one of ${choices.join(", ")}, got ${shown(v)}`,
  );
}

/**
 * Resolves a size that may be given in the config and may be inferred from
 * the previous layer: both present must agree; one of them is required.
 */
export function resolveSize(
  o: Fields,
  field: string,
  ctx: ParseContext,
  inferred: number | undefined,
  inferredFrom = "the previous layer's output size",
): number {
  const given = optPositiveInt(o, field, ctx.path);
  if (given !== undefined && inferred !== undefined && given !== inferred) {
    throw fieldError(
      ctx.path,
      field,
      `expected ${inferred} (${inferredFrom}), got ${given}`,
    );
  }
  const size = given ?? inferred;
  if (size === undefined) {
    throw fieldError(
      ctx.path,
      field,
      "required: no previous layer to infer it from (set it here or set the network's input_size)",
    );
  }
  return size;
}

/** Number of rows (product of leading dims) of a tensor whose last dim is `cols`. */
export function rowsOf(x: FloatTensor): number {
  const cols = x.shape[x.shape.length - 1] ?? 1;
  return cols === 0 ? 0 : x.data.length / cols;
}

/**
 * Checks that a forward input has `expected` features in its last dimension.
 * @throws {TypeError} Naming the layer and both sizes.
 */
export function checkFeatures(
  x: FloatTensor,
  expected: number,
  path: string,
  type: string,
): void {
  const last = x.shape.length === 0 ? undefined : x.shape[x.shape.length - 1];
  if (last !== expected) {
    throw new TypeError(
      `${path} (${type}): input has ${last ?? 0} features (shape [${
        x.shape.join(", ")
      }]), expected ${expected}`,
    );
  }
}

/** The shape of `x` with the last dimension replaced by `n`. */
export function withLastDim(x: FloatTensor, n: number): number[] {
  const s = x.shape.slice();
  if (s.length === 0) return [n];
  s[s.length - 1] = n;
  return s;
}
