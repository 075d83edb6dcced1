/**
 * Nesting limit for JSON read from files, measured without recursion.
 *
 * @module
 */

/** Deepest nesting of arrays and objects accepted in JSON read from a file. */
export const MAX_JSON_DEPTH = 256;

/**
 * Throws when a parsed JSON value nests arrays/objects deeper than `limit`;
 * walks with an explicit stack, so any depth is measured safely.
 *
 * @param v The parsed value.
 * @param what What is being read, for the message (`"bundle"`).
 * @param limit The deepest nesting accepted. @default {MAX_JSON_DEPTH}
 * @throws {RangeError} Naming the depth reached and the limit.
 */
export function checkJsonDepth(
  v: unknown,
  what: string,
  limit: number = MAX_JSON_DEPTH,
): void {
  if (typeof v !== "object" || v === null) return;
  const stack: [object, number][] = [[v, 1]];
  while (stack.length > 0) {
    const [o, depth] = stack.pop()!;
    if (depth > limit) {
      throw new RangeError(
        `Cannot read ${what}: JSON nested more than ${limit} deep (MAX_JSON_DEPTH)`,
      );
    }
    const values = Array.isArray(o) ? o : Object.values(o);
    for (const x of values) {
      if (typeof x === "object" && x !== null) stack.push([x, depth + 1]);
    }
  }
}
