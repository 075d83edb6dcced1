/**
 * Pieces shared by the `tokenizer.json` pipeline parts: pattern matching
 * with the Hugging Face tokenizers library's rules (Oniguruma's iteration
 * over matches, character-class splits) and the split behaviours.
 * Private to `tokenizers/`.
 *
 * Segments are flat number arrays `[start, end, isMatch, ...]` over UTF-16
 * offsets, in order, covering the whole text.
 *
 * @module
 */

/** A JSON object. */
export type Json = Record<string, unknown>;

/** The value as a JSON object, or undefined. */
export const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? v as Json
    : undefined;

/**
 * The segments of `text` cut at the matches of `re` (a global regular
 * expression), iterating as the Oniguruma binding the library uses does:
 * an empty match right after a non-empty one is skipped, and every empty
 * match moves the search one character on. An empty text is one
 * non-matching segment.
 */
export function findMatches(text: string, re: RegExp): number[] {
  const n = text.length;
  if (n === 0) return [0, 0, 0];
  const segs: number[] = [];
  let prev = 0;
  let lastEnd = 0;
  let skipEmpty = false;
  while (lastEnd <= n) {
    re.lastIndex = lastEnd;
    const m = re.exec(text);
    if (m === null) break;
    const s = m.index;
    const e = s + m[0].length;
    lastEnd = e;
    if (e === s) {
      lastEnd += e < n ? charLen(text, e) : 1;
      if (skipEmpty) {
        skipEmpty = false;
        continue;
      }
    } else skipEmpty = true;
    if (prev !== s) segs.push(prev, s, 0);
    segs.push(s, e, 1);
    prev = e;
  }
  if (prev !== n) segs.push(prev, n, 0);
  return segs;
}

function charLen(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return 2;
  }
  return 1;
}

/** Segments where each character `test` accepts is a match of its own. */
export function findChars(
  text: string,
  test: (cp: number) => boolean,
): number[] {
  const n = text.length;
  if (n === 0) return [0, 0, 0];
  const segs: number[] = [];
  let last = 0;
  for (let i = 0; i < n;) {
    const cp = text.codePointAt(i)!;
    const len = cp > 0xffff ? 2 : 1;
    if (test(cp)) {
      if (last < i) segs.push(last, i, 0);
      segs.push(i, i + len, 1);
      last = i + len;
    }
    i += len;
  }
  if (n > last) segs.push(last, n, 0);
  return segs;
}

/** Swaps matches and non-matches. */
export function invert(segs: number[]): number[] {
  for (let i = 2; i < segs.length; i += 3) segs[i] = segs[i] ? 0 : 1;
  return segs;
}

/**
 * How a split keeps the matched delimiters (the Hugging Face
 * `SplitDelimiterBehavior` names).
 */
export type SplitBehavior =
  | "Isolated"
  | "Removed"
  | "MergedWithPrevious"
  | "MergedWithNext"
  | "Contiguous";

/**
 * Applies a split behaviour to segments: returns `[start, end, ...]` of the
 * pieces kept (empty ones included; callers drop them).
 */
export function applyBehavior(
  segs: number[],
  behavior: SplitBehavior,
): number[] {
  const out: number[] = [];
  switch (behavior) {
    case "Isolated":
      for (let i = 0; i < segs.length; i += 3) out.push(segs[i], segs[i + 1]);
      return out;
    case "Removed":
      for (let i = 0; i < segs.length; i += 3) {
        if (!segs[i + 2]) out.push(segs[i], segs[i + 1]);
      }
      return out;
    case "Contiguous": {
      let prev = 0;
      for (let i = 0; i < segs.length; i += 3) {
        const m = segs[i + 2];
        if (m === prev && out.length > 0) out[out.length - 1] = segs[i + 1];
        else out.push(segs[i], segs[i + 1]);
        prev = m;
      }
      return out;
    }
    case "MergedWithPrevious": {
      let prev = 0;
      for (let i = 0; i < segs.length; i += 3) {
        const m = segs[i + 2];
        if (m && !prev && out.length > 0) out[out.length - 1] = segs[i + 1];
        else out.push(segs[i], segs[i + 1]);
        prev = m;
      }
      return out;
    }
    case "MergedWithNext": {
      // walk backwards: a match joins the piece after it unless that is a match too
      const rev: number[] = [];
      let next = 0;
      for (let i = segs.length - 3; i >= 0; i -= 3) {
        const m = segs[i + 2];
        if (m && !next && rev.length > 0) rev[rev.length - 2] = segs[i];
        else rev.push(segs[i], segs[i + 1]);
        next = m;
      }
      for (let i = rev.length - 2; i >= 0; i -= 2) out.push(rev[i], rev[i + 1]);
      return out;
    }
  }
}
