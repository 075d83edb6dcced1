/**
 * SentencePiece's `precompiled_charsmap`: a double-array trie over UTF-8
 * bytes whose leaves point into a blob of NUL-terminated replacement
 * strings. Read by the Hugging Face `Precompiled` normalizer (shortest
 * prefix of a grapheme, as the `spm_precompiled` crate does) and by
 * llama.cpp's Unigram (`t5`) tokenizer (longest prefix of the rest of the
 * input). Private to `tokenizers/`.
 *
 * @module
 */

const decoder = new TextDecoder("utf-8", { fatal: true });

/** A parsed charsmap. */
export class Charsmap {
  readonly #array: Uint32Array;
  readonly #blob: Uint8Array;

  /**
   * Parses the binary charsmap: a little-endian u32 trie size in bytes, the
   * trie, then the replacement strings.
   *
   * @param bytes The charsmap.
   * @param where A name for messages.
   * @throws {RangeError} When the sizes do not fit the bytes.
   */
  constructor(bytes: Uint8Array, where = "precompiled_charsmap") {
    if (bytes.length < 4) {
      throw new RangeError(
        `${where}: ${bytes.length} bytes, too short for the 4-byte trie size`,
      );
    }
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const trieBytes = dv.getUint32(0, true);
    if (trieBytes % 4 !== 0 || 4 + trieBytes > bytes.length) {
      throw new RangeError(
        `${where}: trie of ${trieBytes} bytes does not fit in ${
          bytes.length - 4
        } bytes after the header`,
      );
    }
    const n = trieBytes / 4;
    this.#array = new Uint32Array(n);
    for (let i = 0; i < n; i++) this.#array[i] = dv.getUint32(4 + 4 * i, true);
    this.#blob = bytes.subarray(4 + trieBytes);
  }

  #unit(i: number): number {
    // out-of-range nodes read as 0: no label matches, the walk stops
    return i < this.#array.length ? this.#array[i] : 0;
  }

  /**
   * Walks the trie along `key[from..to)`, calling `leaf(length, value)` at
   * every prefix that has a replacement. Stops at a NUL byte, as both
   * readers do.
   */
  #walk(
    key: Uint8Array,
    from: number,
    to: number,
    leaf: (length: number, value: number) => boolean,
  ): void {
    const offset = (u: number) => (u >>> 10) << ((u & (1 << 9)) >>> 6);
    let pos = offset(this.#unit(0));
    for (let i = from; i < to; i++) {
      const c = key[i];
      if (c === 0) return;
      pos ^= c;
      const u = this.#unit(pos);
      if ((u & 0x800000ff) >>> 0 !== c) return;
      pos ^= offset(u);
      if ((u >>> 8) & 1) {
        if (!leaf(i - from + 1, this.#unit(pos) & 0x7fffffff)) return;
      }
    }
  }

  /** The replacement string at a blob offset (up to its NUL). */
  replacementAt(index: number): string {
    const blob = this.#blob;
    if (index > blob.length) {
      throw new RangeError(
        `precompiled_charsmap: replacement offset ${index} is past the ${blob.length}-byte string table`,
      );
    }
    let end = index;
    while (end < blob.length && blob[end] !== 0) end++;
    return decoder.decode(blob.subarray(index, end));
  }

  /**
   * The replacement of the shortest prefix of `key` in the map (what the
   * Hugging Face normalizer uses for a whole grapheme), or undefined.
   */
  shortest(key: Uint8Array): string | undefined {
    let found = -1;
    this.#walk(key, 0, key.length, (_len, value) => {
      found = value;
      return false;
    });
    return found < 0 ? undefined : this.replacementAt(found);
  }

  /**
   * The longest prefix of `key[from..]` in the map: its length in bytes and
   * the blob offset of its replacement (llama.cpp's `t5` normalizer), or
   * undefined.
   */
  longest(
    key: Uint8Array,
    from: number,
  ): { length: number; value: number } | undefined {
    let best: { length: number; value: number } | undefined;
    this.#walk(key, from, key.length, (length, value) => {
      best = { length, value };
      return true;
    });
    return best;
  }
}

/** Decodes standard base64 (what `tokenizer.json` stores the charsmap as). */
export function base64Bytes(text: string, where: string): Uint8Array {
  let bin: string;
  try {
    bin = atob(text);
  } catch {
    throw new SyntaxError(`${where}: precompiled_charsmap is not base64`);
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
