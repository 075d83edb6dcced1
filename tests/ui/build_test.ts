/**
 * `ui/dist` (committed, so that `serve --ui` needs no build step) is what
 * `deno task build:ui` makes from the current sources.
 */

import { assertEquals } from "@std/assert";
import { staleFiles } from "../../tools/build_ui.ts";

Deno.test("ui/dist is current (else run `deno task build:ui`)", async () => {
  assertEquals(await staleFiles(), [], "run `deno task build:ui`");
});
