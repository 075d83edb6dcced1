// `validate`: checks files against every structural rule of their format,
// their checksums, and the byte length of every tensor.

import { byteLengthOf, dtypeInfo } from "../core/dtypes.ts";
import { elementCount } from "../core/errors.ts";
import type { Registry } from "../registry.ts";
import { openModel } from "../io/open.ts";
import { parseFlags } from "./_args.ts";
import { type Command, JSON_FLAG, needFiles } from "./_command.ts";

/** Checks one file: structure (by reading it), the format's own validation, and every tensor's bytes. */
async function validateFile(
  reg: Registry,
  path: string,
): Promise<string[]> {
  const problems: string[] = [];
  let opened;
  try {
    opened = await openModel(reg, path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [`file not found: ${path}`];
    return [e instanceof Error ? e.message : String(e)];
  }
  try {
    if (opened.format.validate) {
      problems.push(
        ...await opened.format.validate(opened.source, {
          resolve: opened.resolve,
        }),
      );
    }
    for (const m of opened.file.models) {
      for (const name of m.tensors.names()) {
        try {
          const info = m.tensors.info(name);
          const need = byteLengthOf(
            dtypeInfo(info.dtype),
            elementCount(info.shape, `tensor "${name}"`),
          );
          const t = await m.tensors.load(name);
          if (t.bytes.byteLength !== need) {
            problems.push(
              `tensor "${name}": ${info.dtype} [${
                info.shape.join(", ")
              }] needs ${need} bytes, has ${t.bytes.byteLength}`,
            );
          }
        } catch (e) {
          problems.push(
            `tensor "${name}": ${e instanceof Error ? e.message : String(e)}`,
          );
        }
      }
    }
  } finally {
    opened.close();
  }
  return [...new Set(problems)];
}

/** `modelhost validate FILE…`. */
export const validateCommand: Command = {
  name: "validate",
  summary:
    "Check files against every structural rule of their format and their checksums",
  usage: "validate FILE… [--json]",
  flags: () => [JSON_FLAG],
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    needFiles(positional, "FILE to validate");
    const results = [];
    for (const p of positional) {
      results.push({ path: p, problems: await validateFile(ctx.reg, p) });
    }
    const ok = results.every((r) => r.problems.length === 0);
    if (flags.json) {
      ctx.io.out(
        JSON.stringify(
          results.map((r) => ({ ...r, valid: r.problems.length === 0 })),
          null,
          2,
        ),
      );
    } else {
      for (const r of results) {
        if (r.problems.length === 0) ctx.io.out(`${r.path}: valid`);
        else {
          ctx.io.out(
            `${r.path}: INVALID (${r.problems.length} problem${
              r.problems.length > 1 ? "s" : ""
            })`,
          );
          for (const p of r.problems) ctx.io.out(`  - ${p}`);
        }
      }
    }
    return ok ? 0 : 1;
  },
};
