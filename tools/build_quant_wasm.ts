/**
 * Regenerates `core/quants/_k_wasm_bytes.ts` from the quantizer kernel
 * source (`kernels/wasm/_kernels_quantize_k.ts`) as base64. `--check` only
 * reports whether the stored file is current (exit code 1 when not).
 */

import { renderQuantizeKBytesFile } from "../kernels/wasm/_kernels_quantize_k.ts";

const target = new URL("../core/quants/_k_wasm_bytes.ts", import.meta.url);
const text = renderQuantizeKBytesFile();
if (Deno.args.includes("--check")) {
  const current = await Deno.readTextFile(target).catch(() => "");
  if (current !== text) {
    console.error(
      "core/quants/_k_wasm_bytes.ts is stale: run `deno task build:quant-wasm`",
    );
    Deno.exit(1);
  }
  console.log("core/quants/_k_wasm_bytes.ts is current");
} else {
  await Deno.writeTextFile(target, text);
  console.log(`wrote ${target.pathname} (${text.length} characters)`);
}
