/**
 * Prototype-free lookups for names that come from files: a key such as
 * `__proto__`, `constructor` or `toString` is an ordinary missing name here,
 * never a property inherited from `Object.prototype`.
 *
 * @module
 */

/**
 * The table's own value for `key`, or `undefined`.
 *
 * @param table A plain lookup table.
 * @param key A name read from a file.
 * @returns The value, when `key` is the table's own property.
 */
export function ownValue<T>(
  table: Readonly<Record<string, T>>,
  key: string,
): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/**
 * Sets `obj[key] = value` as an own data property, even for `__proto__`
 * (plain assignment would replace the object's prototype instead).
 *
 * @param obj The record being built.
 * @param key A name read from a file.
 * @param value The value.
 */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  } else obj[key] = value;
}
