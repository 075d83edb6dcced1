// Flag parsing for the CLI: typed flags from specs, unknown flags answered
// with the closest known one, and help text generated from the same specs.

import { parseArgs } from "@std/cli";
import type { OptionSpec } from "../core/plugin.ts";

/** One flag of a command. */
export interface FlagSpec {
  /** Long name without dashes, kebab-case (`max-shard-size`). */
  name: string;
  /** Value type; `list` collects repeated string flags. */
  type: "string" | "number" | "boolean" | "list";
  /** One-letter alias. */
  short?: string;
  /** Other long names that mean the same flag (llama.cpp's spellings: `temp`, `n-predict`). */
  aliases?: readonly string[];
  /** One line for help. */
  description: string;
  /** Shown in help; applied when absent. */
  default?: string | number | boolean;
  /** Allowed values. */
  choices?: readonly string[];
  /** Placeholder in help (`FILE`). */
  value?: string;
}

/** Thrown for a usage problem; the CLI prints it and exits with 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Parsed flags and positional arguments. */
export interface Parsed {
  flags: Record<string, string | number | boolean | string[] | undefined>;
  positional: string[];
}

export function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** Turns a plugin's option specs into flags. */
export function flagsFromOptions(
  options: readonly OptionSpec[] | undefined,
): FlagSpec[] {
  return (options ?? []).map((o) => ({
    name: kebab(o.name),
    type: o.type,
    description: o.description,
    default: o.default,
    choices: o.choices,
  }));
}

/** Edit distance counting insertions, deletions, substitutions and adjacent transpositions, for "did you mean". */
export function distance(a: string, b: string): number {
  const rows = a.length + 1, cols = b.length + 1;
  const d: number[][] = Array.from(
    { length: rows },
    (_, i) =>
      Array.from({ length: cols }, (_, j) => i === 0 ? j : j === 0 ? i : 0),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(
        d[i - 1][j] + 1,
        d[i][j - 1] + 1,
        d[i - 1][j - 1] + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/** The closest candidate within a small edit distance, if any. */
export function closest(
  word: string,
  candidates: Iterable<string>,
): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const dd = distance(word, c);
    if (dd < bestD) {
      bestD = dd;
      best = c;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(word.length / 3))
    ? best
    : undefined;
}

/** Parses `args` against `specs`; throws {@link UsageError} on unknown flags or bad values. */
export function parseFlags(args: string[], specs: readonly FlagSpec[]): Parsed {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const alias: Record<string, string[]> = {};
  for (const s of specs) {
    const names = [...(s.short ? [s.short] : []), ...(s.aliases ?? [])];
    if (names.length) alias[s.name] = names;
  }
  const unknown: string[] = [];
  const raw = parseArgs(args, {
    string: specs.filter((s) => s.type !== "boolean").map((s) => s.name),
    boolean: specs.filter((s) => s.type === "boolean").map((s) => s.name),
    collect: specs.filter((s) => s.type === "list").map((s) => s.name),
    alias,
    "--": true,
    unknown: (arg: string) => {
      if (arg.startsWith("-") && arg !== "-") {
        unknown.push(arg);
        return false;
      }
      return true;
    },
  });
  if (unknown.length) {
    const flag = unknown[0].replace(/=.*$/, "");
    const name = flag.replace(/^-+/, "");
    const guess = closest(name, byName.keys());
    throw new UsageError(
      `Unknown flag ${flag}${guess ? `; did you mean --${guess}?` : ""}`,
    );
  }
  const flags: Parsed["flags"] = {};
  for (const s of specs) {
    const v = (raw as Record<string, unknown>)[s.name];
    if (
      v === undefined ||
      (s.type === "list" && Array.isArray(v) && v.length === 0)
    ) {
      flags[s.name] = s.default;
      continue;
    }
    if (s.type === "number") {
      const n = Number(v);
      if (typeof v !== "string" || v.trim() === "" || !Number.isFinite(n)) {
        throw new UsageError(`--${s.name} expects a number, got "${v}"`);
      }
      flags[s.name] = n;
    } else if (s.type === "string") {
      if (typeof v !== "string") {
        throw new UsageError(`--${s.name} expects a value`);
      }
      if (s.choices && !s.choices.includes(v)) {
        const guess = closest(v, s.choices);
        throw new UsageError(
          `--${s.name} must be one of ${s.choices.join(", ")}; got "${v}"${
            guess ? ` (did you mean ${guess}?)` : ""
          }`,
        );
      }
      flags[s.name] = v;
    } else if (s.type === "list") {
      flags[s.name] = (v as unknown[]).map(String);
    } else {
      flags[s.name] = Boolean(v);
    }
  }
  const rest = (raw as { "--"?: string[] })["--"] ?? [];
  return { flags, positional: [...raw._.map(String), ...rest] };
}

/** Help lines for a list of flags. */
export function flagHelp(specs: readonly FlagSpec[]): string[] {
  return specs.map((s) => {
    const short = s.short ? `-${s.short}, ` : "    ";
    const value = s.type === "boolean"
      ? ""
      : ` ${
        s.value ?? (s.choices ? s.choices.join("|") : s.type.toUpperCase())
      }`;
    const def = s.default !== undefined && s.type !== "boolean"
      ? ` (default: ${s.default})`
      : "";
    const left = `  ${short}--${s.name}${value}`;
    const also = s.aliases?.length
      ? ` (also ${s.aliases.map((a) => `--${a}`).join(", ")})`
      : "";
    return `${left.padEnd(36)} ${s.description}${def}${also}`;
  });
}
