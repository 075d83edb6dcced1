/**
 * What a model family adds to the Llama trunk, in one place per family
 * (`models/families/<name>.ts`): how its Hugging Face `config.json` and its
 * GGUF metadata carry the extra hyperparameters, and how its tensor names
 * differ. `config.ts`, `gguf_config.ts`, `convert.ts` and the loaders look a
 * family up in `FAMILY_SPECS` (`models/families/mod.ts`).
 *
 * @module
 */

import type { FamilyInfo, TransformerConfig } from "../config.ts";

/** A config object (parsed JSON). */
export type Json = Record<string, unknown>;

/** The hyperparameters a family adds to (or overrides in) the trunk's. */
export type FamilyExtras = Partial<TransformerConfig>;

/** Reads a `<arch>.<key>` GGUF value (bigints narrowed to numbers). */
export type GgufGet = (key: string) => unknown;

/** Writes a `<arch>.<key>` GGUF value with its GGUF type. */
export type GgufPut = (key: string, value: unknown, type: string) => void;

/**
 * One trunk-option family's specifics (the other kind, `decoder_block`
 * families, is `DecoderFamilySpec` in `_decoder_spec.ts`).
 */
export interface FamilySpec {
  /** Which mechanism runs it (see `families/mod.ts`). */
  kind: "trunk";
  /** Its row of the family table. */
  info: FamilyInfo;
  /** The `architectures[0]` its `config.json` names. */
  hfArchitecture: string;
  /**
   * Whether llama.cpp stores its q/k rows permuted for adjacent-pair rotary
   * (its rope type `NORM`: llama, granite, smollm3, mixtral as `llama`).
   */
  permuteQk: boolean;
  /** Whether llama.cpp's loader needs `output.weight` even when the embeddings are tied. */
  ggufNeedsOutput?: boolean;
  /** The extras read from a `config.json` (already checked to be this family). */
  fromHf(o: Json, where: string): FamilyExtras;
  /** The extra `config.json` fields of a config. */
  toHf(cfg: TransformerConfig): Json;
  /** The extras read from GGUF metadata and tensor names. */
  fromGguf(
    get: GgufGet,
    names: ReadonlySet<string>,
    where: string,
  ): FamilyExtras;
  /** Writes the extra GGUF metadata. */
  toGguf(cfg: TransformerConfig, put: GgufPut): void;
  /**
   * Renames a GGUF tensor name of the trunk's scheme to the family's
   * (`toFamily`) or back; absent when the family uses the trunk's names.
   */
  ggufNames?: {
    toFamily(name: string): string;
    fromFamily(name: string): string;
  };
  /** Renames a Hugging Face name of the trunk's scheme to the family's or back. */
  hfNames?: {
    toFamily(name: string): string;
    fromFamily(name: string): string;
  };
}

function shown(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined
    ? String(v)
    : s.length > 60
    ? s.slice(0, 57) + "..."
    : s;
}

/** The value under `key`, or under the first of several aliases present. */
function aliased(o: Json, key: string | readonly string[]): unknown {
  const keys = typeof key === "string" ? [key] : key;
  const k = keys.find((k) => o[k] !== undefined && o[k] !== null);
  return k === undefined ? undefined : o[k];
}

function firstKey(key: string | readonly string[]): string {
  return typeof key === "string" ? key : key[0];
}

/**
 * A positive integer field of a config (or of the first alias present:
 * `["hidden_size", "n_embd"]`), or its fallback.
 */
export function intField(
  o: Json,
  key: string | readonly string[],
  where: string,
  fallback?: number,
): number {
  const raw = aliased(o, key);
  const v = raw ?? fallback;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new TypeError(
      `${where}: "${firstKey(key)}" must be a positive integer, got ${
        shown(raw)
      }`,
    );
  }
  return v;
}

/** A number field above 0 of a config (or of the first alias present), or its fallback. */
export function numField(
  o: Json,
  key: string | readonly string[],
  where: string,
  fallback?: number,
): number {
  const raw = aliased(o, key);
  const v = raw ?? fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new TypeError(
      `${where}: "${firstKey(key)}" must be a number above 0, got ${
        shown(raw)
      }`,
    );
  }
  return v;
}

/** A boolean field of a config, or its fallback. */
export function boolField(
  o: Json,
  key: string,
  where: string,
  fallback: boolean,
): boolean {
  const v = o[key] ?? fallback;
  if (typeof v !== "boolean") {
    throw new TypeError(
      `${where}: "${key}" must be true or false, got ${shown(o[key])}`,
    );
  }
  return v;
}

/** A GGUF value read as a positive integer. */
export function ggufInt(get: GgufGet, key: string, where: string): number {
  const v = get(key);
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new TypeError(
      `${where}: ${key} must be a positive integer, got ${shown(v)}`,
    );
  }
  return v;
}

/** A GGUF FLOAT32 value, as the short decimal the converter wrote. */
export function ggufFloat(
  get: GgufGet,
  key: string,
  where: string,
  fallback?: number,
): number {
  const v = get(key) ?? fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new TypeError(
      `${where}: ${key} must be a number above 0, got ${shown(v)}`,
    );
  }
  return Number(v.toPrecision(7));
}
