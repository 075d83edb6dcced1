// `layers`: lists the registered layer plugins.

import { parseFlags } from "./_args.ts";
import { type Command, JSON_FLAG } from "./_command.ts";

/** `modelhost layers`: the registered layer plugins. */
export const layersCommand: Command = {
  name: "layers",
  summary: "List registered layer plugins",
  usage: "layers [--json]",
  flags: () => [JSON_FLAG],
  run(args, ctx) {
    const { flags } = parseFlags(args, this.flags(ctx.reg, args));
    const rows = ctx.reg.layers().map((l) => ({
      type: l.type,
      aliases: [...(l.aliases ?? [])],
      init: typeof l.init === "function",
      description: l.description ?? "",
    }));
    if (flags.json) ctx.io.out(JSON.stringify(rows, null, 2));
    else if (rows.length === 0) ctx.io.out("No layer plugins registered.");
    else {
      for (const r of rows) {
        const alias = r.aliases.length ? ` (${r.aliases.join(", ")})` : "";
        ctx.io.out(`${(r.type + alias).padEnd(30)} ${r.description}`);
      }
    }
    return Promise.resolve(0);
  },
};
