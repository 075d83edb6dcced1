/**
 * `ropeScalingFromHf`, apart from `config.ts` so that the family readers in
 * `families/` can use it without importing `config.ts` (which lists the
 * families: importing it from a family file would be an import cycle).
 *
 * @module
 */

import type { RopeScaling } from "../kernels/rope.ts";

type Json = Record<string, unknown>;

function describe(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v);
  return s === undefined
    ? String(v)
    : s.length > 60
    ? s.slice(0, 57) + "..."
    : s;
}

function int(o: Json, key: string, where: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new TypeError(
      `${where}: "${key}" must be a positive integer, got ${describe(o[key])}`,
    );
  }
  return v;
}

function num(o: Json, key: string, where: string, fallback: number): number {
  const v = o[key] ?? fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new TypeError(
      `${where}: "${key}" must be a number above 0, got ${describe(o[key])}`,
    );
  }
  return v;
}

/**
 * The `rope_scaling` object of a config as the attention layers take it.
 *
 * @param raw The config's `rope_scaling` (null, `{type|rope_type: ...}`).
 * @param where Name of the config, for messages.
 * @returns The rule, or null for none.
 * @throws {TypeError} For a kind the layers do not implement (dynamic, yarn ...).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ropeScalingFromHf } from "@modelhost/modelhost/models";
 * const s = ropeScalingFromHf({ rope_type: "linear", factor: 2 }, "config.json");
 * assert(s?.rope_type === "linear");
 * ```
 */
export function ropeScalingFromHf(
  raw: unknown,
  where: string,
): RopeScaling | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new TypeError(
      `${where}: "rope_scaling" must be null or an object, got ${
        describe(raw)
      }`,
    );
  }
  const o = raw as Json;
  const kind = o.rope_type ?? o.type;
  if (kind === "default") return null;
  if (kind === "linear") {
    return {
      rope_type: "linear",
      factor: num(o, "factor", `${where} rope_scaling`, NaN),
    };
  }
  if (kind === "llama3") {
    const w = `${where} rope_scaling`;
    return {
      rope_type: "llama3",
      factor: num(o, "factor", w, NaN),
      low_freq_factor: num(o, "low_freq_factor", w, NaN),
      high_freq_factor: num(o, "high_freq_factor", w, NaN),
      original_max_position_embeddings: int(
        o,
        "original_max_position_embeddings",
        w,
      ),
    };
  }
  throw new TypeError(
    `${where}: rope_scaling type ${
      describe(kind)
    } is not supported (supported: linear, llama3)`,
  );
}
