/**
 * The modelhost command line, generated from the registry: every registered
 * format and layer plugin shows up in its listings and help.
 *
 * ```sh
 * deno run -A cli.ts formats
 * deno run -A cli.ts layers --json
 * ```
 *
 * @module
 */

import { parseArgs } from "@std/cli";
import denoJson from "./deno.json" with { type: "json" };
import { defaultRegistry } from "./mod.ts";
import type { Registry } from "./registry.ts";

/** Where the CLI writes; tests pass their own sinks. */
export interface CliIo {
  /** Standard output. */
  out(text: string): void;
  /** Standard error. */
  err(text: string): void;
}

const consoleIo: CliIo = {
  out: (t) => console.log(t),
  err: (t) => console.error(t),
};

interface Command {
  summary: string;
  usage: string;
  run(args: string[], reg: Registry, io: CliIo): Promise<number> | number;
}

const COMMANDS: Record<string, Command> = {
  formats: {
    summary: "List registered format plugins and what each can do",
    usage: "formats [--json]",
    run(args, reg, io) {
      const flags = parseArgs(args, { boolean: ["json"] });
      const rows = reg.formats().map((f) => ({
        name: f.name,
        extensions: [...f.extensions],
        read: typeof f.read === "function",
        write: typeof f.write === "function",
        detect: typeof f.detect === "function",
        description: f.description ?? "",
      }));
      if (flags.json) {
        io.out(JSON.stringify(rows, null, 2));
      } else if (rows.length === 0) {
        io.out("No format plugins registered.");
      } else {
        for (const r of rows) {
          const caps = [r.read ? "read" : "", r.write ? "write" : ""].filter(
            Boolean,
          ).join("+");
          io.out(
            `${r.name.padEnd(14)} ${r.extensions.join(" ").padEnd(22)} ${
              caps.padEnd(11)
            } ${r.description}`,
          );
        }
      }
      return 0;
    },
  },
  layers: {
    summary: "List registered layer plugins",
    usage: "layers [--json]",
    run(args, reg, io) {
      const flags = parseArgs(args, { boolean: ["json"] });
      const rows = reg.layers().map((l) => ({
        type: l.type,
        aliases: [...(l.aliases ?? [])],
        init: typeof l.init === "function",
        description: l.description ?? "",
      }));
      if (flags.json) {
        io.out(JSON.stringify(rows, null, 2));
      } else if (rows.length === 0) {
        io.out("No layer plugins registered.");
      } else {
        for (const r of rows) {
          const alias = r.aliases.length ? ` (${r.aliases.join(", ")})` : "";
          io.out(`${(r.type + alias).padEnd(28)} ${r.description}`);
        }
      }
      return 0;
    },
  },
};

function help(): string {
  const lines = [
    `modelhost ${denoJson.version}: read, check, convert and run model files`,
    "",
    "Usage: modelhost <command> [options]",
    "",
    "Commands:",
    ...Object.entries(COMMANDS).map(([n, c]) =>
      `  ${n.padEnd(12)} ${c.summary}`
    ),
    "",
    "Options: --help, --version",
  ];
  return lines.join("\n");
}

/**
 * Runs the CLI with the given arguments.
 *
 * @param args Command-line arguments (without the program name).
 * @param io Output sinks. @default console
 * @param registry The registry to use. @default defaultRegistry()
 * @returns The exit code: 0 success, 1 failure, 2 usage error.
 *
 * @example
 * ```ts
 * import { main } from "./cli.ts";
 * const lines: string[] = [];
 * const code = await main(["--version"], { out: (t) => lines.push(t), err: () => {} });
 * console.assert(code === 0 && lines[0].startsWith("modelhost"));
 * ```
 */
export async function main(
  args: string[],
  io: CliIo = consoleIo,
  registry: Registry = defaultRegistry(),
): Promise<number> {
  const [name, ...rest] = args;
  if (
    name === undefined || name === "--help" || name === "-h" || name === "help"
  ) {
    io.out(help());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-V") {
    io.out(`modelhost ${denoJson.version}`);
    return 0;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    io.err(
      `Unknown command "${name}". Commands: ${
        Object.keys(COMMANDS).join(", ")
      }`,
    );
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.out(`Usage: modelhost ${cmd.usage}\n\n${cmd.summary}`);
    return 0;
  }
  try {
    return await cmd.run(rest, registry, io);
  } catch (e) {
    io.err(`error: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
