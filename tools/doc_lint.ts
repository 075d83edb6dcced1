// Runs `deno doc --lint` on every entry point listed in deno.json `exports`,
// so the list cannot drift from what is published.

import denoJson from "../deno.json" with { type: "json" };

const entries = [
  ...new Set(Object.values(denoJson.exports as Record<string, string>)),
];
const { code } = await new Deno.Command(Deno.execPath(), {
  args: ["doc", "--lint", ...entries],
  stdout: "inherit",
  stderr: "inherit",
}).output();
Deno.exit(code);
