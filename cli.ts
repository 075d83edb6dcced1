/**
 * The modelhost command line, generated from the registry: every registered
 * format and layer plugin shows up in its listings, in `inspect`, `validate`
 * and `convert`, and in help (a writer's option specs become `convert`
 * flags). `--plugin SPECIFIER` registers third-party plugins first.
 *
 * ```sh
 * deno run -A cli.ts inspect model.safetensors
 * deno run -A cli.ts convert model.gguf --to safetensors -o model.safetensors
 * deno run -A cli.ts formats --plugin ./my_format.ts
 * ```
 *
 * @module
 */

import { main } from "./cli/mod.ts";
import { cleanTempsOnSignals } from "./io/_temp.ts";

export { type CliIo, loadPlugin, main } from "./cli/mod.ts";

if (import.meta.main) {
  // commands that write models remove their temporary files on Ctrl-C / kill
  if (["convert", "quantize"].includes(Deno.args[0])) cleanTempsOnSignals();
  Deno.exit(await main(Deno.args));
}
