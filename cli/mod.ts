/**
 * The command line's dispatch: global flags (`--plugin`, `--quiet`,
 * `--verbose`, `--debug`), plugin loading, help generated from the
 * registry, and the table of commands, one file each (`inspect.ts`,
 * `convert.ts`, …). The package's `./cli` entry (`cli.ts`) re-exports
 * {@link main}, {@link loadPlugin} and {@link CliIo} from here.
 *
 * @module
 */

import { resolve, toFileUrl } from "@std/path";
import denoJson from "../deno.json" with { type: "json" };
import { defaultRegistry } from "../mod.ts";
import type { Plugin } from "../core/plugin.ts";
import type { Registry } from "../registry.ts";
import { closest, flagHelp, type FlagSpec, UsageError } from "./_args.ts";
import type { CliIo, Command, CommandContext } from "./_command.ts";
import { convertCommand } from "./convert.ts";
import { embedCommand, rerankCommand } from "./embed.ts";
import { formatsCommand } from "./formats.ts";
import { generateCommand } from "./generate.ts";
import { inspectCommand } from "./inspect.ts";
import { layersCommand } from "./layers.ts";
import { quantizeCommand } from "./quantize.ts";
import { perplexityCommand } from "./perplexity.ts";
import { imatrixCommand } from "./imatrix.ts";
import { runCommand } from "./run.ts";
import { serveCommand } from "./serve.ts";
import { validateCommand } from "./validate.ts";

export type { CliIo } from "./_command.ts";

const encoder = new TextEncoder();
const consoleIo: CliIo = {
  out: (t) => console.log(t),
  err: (t) => console.error(t),
  progress: (t) => Deno.stderr.writeSync(encoder.encode(t)),
  tty: Deno.stderr.isTerminal(),
  write: (t) => {
    Deno.stdout.writeSync(encoder.encode(t));
  },
};

const GLOBAL_FLAGS: FlagSpec[] = [
  {
    name: "plugin",
    type: "list",
    value: "SPECIFIER",
    description:
      "Import a plugin module (path, jsr:, npm:, https:) first; repeatable",
  },
  {
    name: "quiet",
    short: "q",
    type: "boolean",
    description: "No progress output",
  },
  { name: "verbose", short: "v", type: "boolean", description: "More detail" },
  {
    name: "debug",
    type: "boolean",
    description: "Print stack traces on errors",
  },
  { name: "help", short: "h", type: "boolean", description: "Show help" },
];

/** The commands by name, in the order help lists them. */
const COMMANDS: Record<string, Command> = Object.fromEntries(
  [
    inspectCommand,
    validateCommand,
    convertCommand,
    quantizeCommand,
    perplexityCommand,
    imatrixCommand,
    runCommand,
    generateCommand,
    embedCommand,
    rerankCommand,
    serveCommand,
    formatsCommand,
    layersCommand,
  ].map((c) => [c.name, c]),
);

function mainHelp(): string {
  return [
    `modelhost ${denoJson.version}: read, check, convert and run model files`,
    "",
    "Usage: modelhost <command> [options]",
    "",
    "Commands:",
    ...Object.entries(COMMANDS).map(([n, c]) =>
      `  ${n.padEnd(12)} ${c.summary}`
    ),
    "",
    "Global options:",
    ...flagHelp(GLOBAL_FLAGS),
    "  -V, --version                      Print the version",
    "",
    "Run 'modelhost <command> --help' for a command's options.",
  ].join("\n");
}

function commandHelp(
  cmd: Command,
  reg: Registry,
  args: string[],
): string {
  return [
    `Usage: modelhost ${cmd.usage}`,
    "",
    cmd.summary,
    "",
    "Options:",
    ...flagHelp(cmd.flags(reg, args)),
    ...(cmd.more?.(reg) ?? []),
    "",
    `Global options: ${GLOBAL_FLAGS.map((f) => `--${f.name}`).join(", ")}`,
  ].join("\n");
}

/** Splits global flags (valid anywhere) from the rest. */
function takeGlobals(
  args: string[],
): { globals: Record<string, unknown>; rest: string[] } {
  const rest: string[] = [];
  const globals: Record<string, unknown> = { plugin: [] as string[] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      rest.push(...args.slice(i));
      break;
    }
    if (a === "--plugin") {
      if (args[i + 1] === undefined) {
        throw new UsageError("--plugin expects a module specifier");
      }
      (globals.plugin as string[]).push(args[++i]);
    } else if (a.startsWith("--plugin=")) {
      (globals.plugin as string[]).push(a.slice(9));
    } else if (a === "--quiet" || a === "-q") globals.quiet = true;
    else if (a === "--verbose" || a === "-v") globals.verbose = true;
    else if (a === "--debug") globals.debug = true;
    else rest.push(a);
  }
  return { globals, rest };
}

/**
 * Imports a plugin module and registers its default export: a plugin, a
 * zero-argument plugin factory (`npyFormat`), or a list of them.
 *
 * @param reg The registry to add to.
 * @param specifier A local path (relative to the working directory), or a
 * `jsr:`, `npm:`, `https:` or `file:` specifier.
 * @returns The plugins registered.
 *
 * @example
 * ```ts ignore
 * import { loadPlugin } from "@modelhost/modelhost/cli";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * await loadPlugin(defaultRegistry(), "./examples/plugins/npy/mod.ts");
 * ```
 */
export async function loadPlugin(
  reg: Registry,
  specifier: string,
): Promise<Plugin[]> {
  const url = /^(jsr|npm|https?|file|data):/.test(specifier)
    ? specifier
    : toFileUrl(resolve(specifier)).href;
  let mod: { default?: unknown };
  try {
    mod = await import(url);
  } catch (e) {
    throw new TypeError(
      `Cannot load plugin ${specifier}: ${
        e instanceof Error ? e.message.split("\n")[0] : e
      }`,
    );
  }
  const exp = mod.default;
  // A zero-argument factory (the naming rule's `<format>Format`) is called once.
  const list = (Array.isArray(exp) ? exp : [exp]).map((p) =>
    typeof p === "function" && p.length === 0 ? p() : p
  ) as Plugin[];
  if (
    !exp || list.some((p) => !p || (p.kind !== "format" && p.kind !== "layer"))
  ) {
    throw new TypeError(
      `Cannot load plugin ${specifier}: its default export must be a format or layer plugin (kind "format" | "layer"), a zero-argument factory of one, or a list of them`,
    );
  }
  reg.use(list);
  return list;
}

/**
 * Runs the CLI with the given arguments.
 *
 * @param args Command-line arguments (without the program name).
 * @param io Output sinks. @default the console
 * @param registry The registry to use. @default defaultRegistry()
 * @returns The exit code: 0 success, 1 failure or invalid input, 2 usage error.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { main } from "@modelhost/modelhost/cli";
 * const lines: string[] = [];
 * const code = await main(["--version"], { out: (t) => lines.push(t), err: () => {} });
 * assert(code === 0 && lines[0].startsWith("modelhost"));
 * ```
 */
export async function main(
  args: string[],
  io: CliIo = consoleIo,
  registry: Registry = defaultRegistry(),
): Promise<number> {
  let debug = false;
  try {
    const { globals, rest } = takeGlobals(args);
    debug = Boolean(globals.debug);
    for (const spec of globals.plugin as string[]) {
      await loadPlugin(registry, spec);
    }
    const [name, ...cmdArgs] = rest;
    if (
      name === undefined || name === "--help" || name === "-h" ||
      name === "help"
    ) {
      if (
        name === "help" && cmdArgs[0] && Object.hasOwn(COMMANDS, cmdArgs[0])
      ) {
        io.out(commandHelp(COMMANDS[cmdArgs[0]], registry, []));
        return 0;
      }
      io.out(mainHelp());
      return name === undefined ? 2 : 0;
    }
    if (name === "--version" || name === "-V") {
      io.out(`modelhost ${denoJson.version}`);
      return 0;
    }
    const cmd = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!cmd) {
      const guess = closest(name, Object.keys(COMMANDS));
      throw new UsageError(
        `Unknown command "${name}"${
          guess ? `; did you mean "${guess}"?` : ""
        }. Commands: ${Object.keys(COMMANDS).join(", ")}`,
      );
    }
    if (cmdArgs.includes("--help") || cmdArgs.includes("-h")) {
      io.out(commandHelp(cmd, registry, cmdArgs));
      return 0;
    }
    const quiet = Boolean(globals.quiet);
    const ctx: CommandContext = {
      reg: registry,
      io,
      quiet,
      verbose: Boolean(globals.verbose),
      progress: {
        tty: Boolean(io.tty && io.progress),
        quiet,
        write: (t) => io.progress?.(t),
      },
    };
    return await cmd.run(cmdArgs, ctx);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`error: ${e.message}`);
      io.err("Run 'modelhost --help' for usage.");
      return 2;
    }
    if (e instanceof Deno.errors.NotFound) {
      const m = e.message.match(/'([^']+)'/);
      io.err(`error: file not found: ${m ? m[1] : e.message}`);
      return 1;
    }
    io.err(`error: ${e instanceof Error ? e.message : String(e)}`);
    if (debug && e instanceof Error && e.stack) io.err(e.stack);
    return 1;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
