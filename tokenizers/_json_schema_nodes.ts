// Schema → nodes: the compiler half of json_schema.ts (a tree of nodes the
// byte automaton in _json_schema_frames.ts walks).

/**
 * Keywords that describe a schema without constraining values; ignored.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { compileJsonSchema, IGNORED_KEYWORDS } from "@modelhost/modelhost/tokenizers";
 * assert(IGNORED_KEYWORDS.includes("description"));
 * compileJsonSchema({ type: "string", description: "a name" }); // fine
 * ```
 */
export const IGNORED_KEYWORDS: readonly string[] = [
  "$schema",
  "$id",
  "$comment",
  "$anchor",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "strict",
  "$defs",
  "definitions",
];

// ------------------------------------------------------------ schema → nodes

export type Node =
  | { kind: "obj"; props: Prop[]; free?: Node; id: number }
  | {
    kind: "arr";
    prefix: Node[];
    items: Node | null;
    min: number;
    max: number;
    id: number;
  }
  | { kind: "str"; min: number; max: number; id: number }
  | { kind: "num"; integer: boolean; id: number }
  | { kind: "lit"; values: Uint8Array[]; id: number }
  | { kind: "alt"; options: Node[]; id: number }
  | { kind: "any"; id: number }
  | { kind: "ref"; resolve: () => Node; id: number };

export type NoId<T> = T extends unknown ? Omit<T, "id"> : never;

export interface Prop {
  key: string;
  bytes: Uint8Array;
  node: Node;
  required: boolean;
}

export const enc = new TextEncoder();
export const TYPES = [
  "object",
  "array",
  "string",
  "number",
  "integer",
  "boolean",
  "null",
];
export const KNOWN = new Set([
  ...IGNORED_KEYWORDS,
  "type",
  "enum",
  "const",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "anyOf",
  "oneOf",
  "allOf",
  "$ref",
  "nullable",
]);

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function count(
  s: Record<string, unknown>,
  key: string,
  path: string,
): number | undefined {
  const v = s[key];
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || (v as number) < 0) {
    throw new TypeError(
      `JSON schema ${path}: "${key}" must be a whole number ≥ 0, got ${
        JSON.stringify(v)
      }`,
    );
  }
  return v as number;
}

export class Compiler {
  #root: unknown;
  #ids = 0;
  #refs = new Map<string, Node>();

  constructor(root: unknown) {
    this.#root = root;
  }

  node(n: NoId<Node>): Node {
    return { ...n, id: this.#ids++ } as Node;
  }

  compile(schema: unknown, path: string): Node {
    if (schema === true) return this.node({ kind: "any" });
    if (schema === false) {
      throw new TypeError(
        `JSON schema ${path} is false: no value validates, nothing can be generated`,
      );
    }
    if (!isObject(schema)) {
      throw new TypeError(
        `JSON schema ${path} must be an object or a boolean, got ${
          JSON.stringify(schema)
        }`,
      );
    }
    for (const k of Object.keys(schema)) {
      if (!KNOWN.has(k) && k !== "format") {
        throw new TypeError(
          `JSON schema ${path}: the keyword "${k}" is not supported by structured output (supported: type, enum, const, properties, required, additionalProperties, items, prefixItems, minItems, maxItems, minLength, maxLength, anyOf, oneOf, allOf of one schema, $ref, nullable)`,
        );
      }
    }
    if (schema.format !== undefined) {
      throw new TypeError(
        `JSON schema ${path}: "format" (${
          JSON.stringify(schema.format)
        }) is not supported by structured output`,
      );
    }
    if (schema.$ref !== undefined) {
      const others = Object.keys(schema).filter((k) =>
        k !== "$ref" && !IGNORED_KEYWORDS.includes(k)
      );
      if (others.length > 0) {
        throw new TypeError(
          `JSON schema ${path}: "$ref" beside ${
            others.join(", ")
          } is not supported`,
        );
      }
      return this.#ref(schema.$ref, path);
    }
    const base = this.#compileBase(schema, path);
    if (schema.nullable === true) {
      return this.node({
        kind: "alt",
        options: [
          base,
          this.node({ kind: "lit", values: [enc.encode("null")] }),
        ],
      });
    }
    return base;
  }

  #ref(ref: unknown, path: string): Node {
    if (typeof ref !== "string") {
      throw new TypeError(`JSON schema ${path}: "$ref" must be a string`);
    }
    const have = this.#refs.get(ref);
    if (have) return have;
    if (ref !== "#" && !/^#\/(\$defs|definitions)\/[^/]+$/.test(ref)) {
      throw new TypeError(
        `JSON schema ${path}: "$ref": "${ref}" is not supported (only "#", "#/$defs/NAME" and "#/definitions/NAME")`,
      );
    }
    let target: unknown = this.#root;
    if (ref !== "#") {
      const [, where, name] = ref.split("/");
      const table = isObject(this.#root) ? this.#root[where] : undefined;
      const key = name.replaceAll("~1", "/").replaceAll("~0", "~");
      target = isObject(table) ? table[key] : undefined;
      if (target === undefined) {
        throw new TypeError(
          `JSON schema ${path}: "$ref": "${ref}" names no schema`,
        );
      }
    }
    const box: { target?: Node } = {};
    const node: Node = this.node({
      kind: "ref",
      resolve: () => box.target!,
    });
    this.#refs.set(ref, node);
    box.target = this.compile(target, ref);
    return node;
  }

  #compileBase(s: Record<string, unknown>, path: string): Node {
    if (s.const !== undefined) return this.#literals([s.const], path);
    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || s.enum.length === 0) {
        throw new TypeError(
          `JSON schema ${path}: "enum" must be a non-empty list`,
        );
      }
      return this.#literals(s.enum, path);
    }
    if (s.allOf !== undefined) {
      if (!Array.isArray(s.allOf) || s.allOf.length !== 1) {
        throw new TypeError(
          `JSON schema ${path}: "allOf" is supported with one schema only`,
        );
      }
      const rest = { ...s };
      delete rest.allOf;
      if (Object.keys(rest).some((k) => !IGNORED_KEYWORDS.includes(k))) {
        throw new TypeError(
          `JSON schema ${path}: "allOf" beside other keywords is not supported`,
        );
      }
      return this.compile(s.allOf[0], `${path}/allOf/0`);
    }
    for (const k of ["anyOf", "oneOf"] as const) {
      if (s[k] === undefined) continue;
      const list = s[k];
      if (!Array.isArray(list) || list.length === 0) {
        throw new TypeError(
          `JSON schema ${path}: "${k}" must be a non-empty list`,
        );
      }
      const rest = { ...s };
      delete rest[k];
      const extra = Object.keys(rest).filter((x) =>
        !IGNORED_KEYWORDS.includes(x) && x !== "nullable"
      );
      if (extra.length > 0) {
        throw new TypeError(
          `JSON schema ${path}: "${k}" beside ${
            extra.join(", ")
          } is not supported (put them in each branch)`,
        );
      }
      return this.node({
        kind: "alt",
        options: list.map((x, i) => this.compile(x, `${path}/${k}/${i}`)),
      });
    }
    let types: string[];
    if (s.type === undefined) {
      const implied = this.#impliedTypes(s).map((t) => this.#typed(t, s, path));
      return implied.length === 1
        ? implied[0]
        : this.node({ kind: "alt", options: implied });
    } else if (typeof s.type === "string") types = [s.type];
    else if (
      Array.isArray(s.type) && s.type.length > 0 &&
      s.type.every((t) => typeof t === "string")
    ) types = s.type as string[];
    else {
      throw new TypeError(
        `JSON schema ${path}: "type" must be a type name or a list of them`,
      );
    }
    for (const t of types) {
      if (!TYPES.includes(t)) {
        throw new TypeError(
          `JSON schema ${path}: unknown type "${t}" (types: ${
            TYPES.join(", ")
          })`,
        );
      }
    }
    if (types.includes("integer") && types.includes("number")) {
      types = types.filter((t) => t !== "integer");
    }
    const options = types.map((t) => this.#typed(t, s, path));
    return options.length === 1
      ? options[0]
      : this.node({ kind: "alt", options });
  }

  /** Types a schema without `type` allows, from the keywords it uses. */
  #impliedTypes(s: Record<string, unknown>): string[] {
    const has = (...k: string[]) => k.some((x) => s[x] !== undefined);
    const out: string[] = [];
    if (has("properties", "required", "additionalProperties")) {
      out.push("object");
    }
    if (has("items", "prefixItems", "minItems", "maxItems")) out.push("array");
    if (has("minLength", "maxLength")) out.push("string");
    return out.length > 0 ? out : ["any"];
  }

  #typed(t: string, s: Record<string, unknown>, path: string): Node {
    switch (t) {
      case "any":
        return this.node({ kind: "any" });
      case "string": {
        const min = count(s, "minLength", path) ?? 0;
        const max = count(s, "maxLength", path) ?? Infinity;
        if (min > max) {
          throw new TypeError(
            `JSON schema ${path}: minLength ${min} is above maxLength ${max}`,
          );
        }
        return this.node({ kind: "str", min, max });
      }
      case "number":
      case "integer":
        return this.node({ kind: "num", integer: t === "integer" });
      case "boolean":
        return this.node({
          kind: "lit",
          values: [enc.encode("true"), enc.encode("false")],
        });
      case "null":
        return this.node({ kind: "lit", values: [enc.encode("null")] });
      case "array":
        return this.#array(s, path);
      default:
        return this.#object(s, path);
    }
  }

  #array(s: Record<string, unknown>, path: string): Node {
    const min = count(s, "minItems", path) ?? 0;
    const max = count(s, "maxItems", path) ?? Infinity;
    if (min > max) {
      throw new TypeError(
        `JSON schema ${path}: minItems ${min} is above maxItems ${max}`,
      );
    }
    let prefix: Node[] = [];
    if (s.prefixItems !== undefined) {
      if (!Array.isArray(s.prefixItems)) {
        throw new TypeError(
          `JSON schema ${path}: "prefixItems" must be a list`,
        );
      }
      prefix = s.prefixItems.map((x, i) =>
        this.compile(x, `${path}/prefixItems/${i}`)
      );
    }
    let items: Node | null;
    if (s.items === false) items = null;
    else if (s.items === undefined) items = this.node({ kind: "any" });
    else if (Array.isArray(s.items)) {
      throw new TypeError(
        `JSON schema ${path}: "items" as a list (draft 4 tuples) is not supported; use "prefixItems"`,
      );
    } else items = this.compile(s.items, `${path}/items`);
    if (items === null && min > prefix.length) {
      throw new TypeError(
        `JSON schema ${path}: minItems ${min} but only ${prefix.length} items are allowed`,
      );
    }
    return this.node({ kind: "arr", prefix, items, min, max });
  }

  #object(s: Record<string, unknown>, path: string): Node {
    const props: Prop[] = [];
    const required = s.required ?? [];
    if (
      !Array.isArray(required) || !required.every((r) => typeof r === "string")
    ) {
      throw new TypeError(
        `JSON schema ${path}: "required" must be a list of names`,
      );
    }
    if (s.properties !== undefined && !isObject(s.properties)) {
      throw new TypeError(
        `JSON schema ${path}: "properties" must be an object`,
      );
    }
    const declared = (s.properties ?? {}) as Record<string, unknown>;
    for (const [key, sub] of Object.entries(declared)) {
      props.push({
        key,
        bytes: enc.encode(JSON.stringify(key)),
        node: this.compile(sub, `${path}/properties/${key}`),
        required: required.includes(key),
      });
    }
    const additional = s.additionalProperties;
    for (const r of required) {
      if (declared[r] === undefined) {
        if (additional === false) {
          throw new TypeError(
            `JSON schema ${path}: "${r}" is required but not allowed (no property of that name, additionalProperties false)`,
          );
        }
        props.push({
          key: r,
          bytes: enc.encode(JSON.stringify(r)),
          node: additional === undefined || additional === true
            ? this.node({ kind: "any" })
            : this.compile(additional, `${path}/additionalProperties`),
          required: true,
        });
      }
    }
    if (props.length > 0) return this.node({ kind: "obj", props });
    if (additional === false) return this.node({ kind: "obj", props: [] });
    const free = additional === undefined || additional === true
      ? this.node({ kind: "any" })
      : this.compile(additional, `${path}/additionalProperties`);
    return this.node({ kind: "obj", props: [], free });
  }

  #literals(values: unknown[], path: string): Node {
    return this.node({
      kind: "lit",
      values: values.map((v, i) => {
        const text = JSON.stringify(v);
        if (text === undefined) {
          throw new TypeError(
            `JSON schema ${path}: enum value ${i} is not JSON`,
          );
        }
        return enc.encode(text);
      }),
    });
  }
}
