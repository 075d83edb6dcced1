// `formats`: lists the registered format plugins and what each can do.

import { parseFlags } from "./_args.ts";
import { type Command, JSON_FLAG } from "./_command.ts";

/** `modelhost formats`: the registered format plugins. */
export const formatsCommand: Command = {
  name: "formats",
  summary: "List registered format plugins and what each can do",
  usage: "formats [--json]",
  flags: () => [JSON_FLAG],
  run(args, ctx) {
    const { flags } = parseFlags(args, this.flags(ctx.reg, args));
    const rows = ctx.reg.formats().map((f) => ({
      name: f.name,
      extensions: [...f.extensions],
      read: typeof f.read === "function",
      write: typeof f.write === "function",
      detect: typeof f.detect === "function",
      options: (f.options ?? []).map((o) => o.name),
      description: f.description ?? "",
    }));
    if (flags.json) ctx.io.out(JSON.stringify(rows, null, 2));
    else if (rows.length === 0) ctx.io.out("No format plugins registered.");
    else {
      for (const r of rows) {
        const caps = [r.read ? "read" : "", r.write ? "write" : ""].filter(
          Boolean,
        ).join("+");
        ctx.io.out(
          `${r.name.padEnd(14)} ${r.extensions.join(" ").padEnd(24)} ${
            caps.padEnd(11)
          } ${r.description}`,
        );
      }
    }
    return Promise.resolve(0);
  },
};
