/**
 * Regenerates `kernels/wasm/_module_bytes.ts` from the kernel source
 * (`kernels/wasm/_kernels.ts`): emits both module variants and stores them
 * as base64. Run with `deno task build:wasm`; `--check` only reports whether
 * the stored file is current (exit code 1 when not).
 */

import { renderModuleBytesFile } from "../kernels/wasm/_generate.ts";

const target = new URL("../kernels/wasm/_module_bytes.ts", import.meta.url);
const text = renderModuleBytesFile();
if (Deno.args.includes("--check")) {
  const current = await Deno.readTextFile(target).catch(() => "");
  if (current !== text) {
    console.error(
      "kernels/wasm/_module_bytes.ts is stale: run `deno task build:wasm`",
    );
    Deno.exit(1);
  }
  console.log("kernels/wasm/_module_bytes.ts is current");
} else {
  await Deno.writeTextFile(target, text);
  console.log(`wrote ${target.pathname} (${text.length} characters)`);
}
