// Reading an architecture's hyperparameters from GGUF metadata
// (`<arch>.<key>`), with the checks and messages both GGUF config readers
// share (the Llama-shaped one in gguf_config.ts and the decoder_block one
// in families/_decoder_gguf.ts).

/** A metadata value for a message: JSON, cut at 60 characters. */
export function describe(v: unknown): string {
  if (v === undefined) return "nothing";
  if (typeof v === "bigint") return `${v}`;
  const s = JSON.stringify(v);
  return s === undefined
    ? String(v)
    : s.length > 60
    ? s.slice(0, 57) + "..."
    : s;
}

/** Typed readers of one architecture's keys. */
export interface GgufFields {
  /** The raw value (a bigint narrowed to a number). */
  get(key: string): unknown;
  /** A positive integer; a per-block list must be uniform. */
  int(key: string, fallback?: number): number;
  /** A positive finite number, at the precision a FLOAT32 was written with. */
  float(key: string, fallback: number): number;
}

/** Readers of `<arch>.*` keys of `md`; errors name `where` and the key. */
export function ggufFields(
  md: Record<string, unknown>,
  arch: string,
  where: string,
): GgufFields {
  const get = (k: string) => {
    const v = md[`${arch}.${k}`];
    return typeof v === "bigint" ? Number(v) : v;
  };
  const int = (k: string, fallback?: number): number => {
    let v = get(k) ?? fallback;
    if (Array.isArray(v)) {
      // Per-layer values (some files list head_count_kv per block).
      const first = v[0];
      if (!v.every((x) => x === first)) {
        throw new TypeError(
          `${where}: ${arch}.${k} differs between blocks (${
            describe(v)
          }); only uniform blocks are supported`,
        );
      }
      v = first;
    }
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
      throw new TypeError(
        `${where}: ${arch}.${k} must be a positive integer, got ${
          describe(get(k))
        }`,
      );
    }
    return v;
  };
  const float = (k: string, fallback: number): number => {
    const v = get(k) ?? fallback;
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
      throw new TypeError(
        `${where}: ${arch}.${k} must be a number above 0, got ${
          describe(get(k))
        }`,
      );
    }
    // FLOAT32 values: keep the short decimal the converter wrote (1e-5, not 9.99999974737875e-6).
    return Number(v.toPrecision(7));
  };
  return { get, int, float };
}
