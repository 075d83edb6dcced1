import { assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { createRegistry } from "../registry.ts";
import type { FormatPlugin, LayerPlugin, Plugin } from "../core/plugin.ts";

const fmt = (name: string, ext: string, magic?: number): FormatPlugin => ({
  kind: "format",
  name,
  extensions: [ext],
  detect: magic === undefined ? undefined : (h) => h[0] === magic,
});

const layer = (type: string, aliases: string[] = []): LayerPlugin<unknown> => ({
  kind: "layer",
  type,
  aliases,
  parse: () => ({}),
  outputSize: () => undefined,
  toJSON: () => ({ type }),
  params: () => [],
  build: () => ({ forward: (x) => x }),
});

Deno.test("registry: use chains and lookups find plugins by name, extension and magic", () => {
  const a = fmt("alpha", ".alp", 0x41);
  const b = fmt("beta", ".bet", 0x42);
  const reg = createRegistry().use(a).use([
    b,
    layer("dense"),
    layer("multi_head_attention", ["mha"]),
  ]);
  assertStrictEquals(reg.format("alpha"), a);
  assertStrictEquals(reg.formatForPath("/x/y/model.BET"), b);
  assertStrictEquals(reg.formatForPath(".alp"), a);
  assertStrictEquals(reg.detect(new Uint8Array([0x42, 0])), b);
  assertEquals(reg.detect(new Uint8Array([0x43])), undefined);
  assertEquals(reg.layer("mha").type, "multi_head_attention");
  assertEquals(reg.formats().map((f) => f.name), ["alpha", "beta"]);
  assertEquals(reg.layers().map((l) => l.type), [
    "dense",
    "multi_head_attention",
  ]);
});

Deno.test("registry: duplicates throw TypeError naming the clash", () => {
  const reg = createRegistry().use(fmt("alpha", ".alp")).use(
    layer("dense", ["fc"]),
  );
  assertThrows(
    () => reg.use(fmt("alpha", ".other")),
    TypeError,
    'format "alpha"',
  );
  assertThrows(
    () => reg.use(layer("linear", ["fc"])),
    TypeError,
    'name "fc" is already taken by layer "dense"',
  );
  assertThrows(
    () => reg.use(layer("dense")),
    TypeError,
    'Cannot register layer "dense"',
  );
  assertThrows(
    () => reg.use({ kind: "widget" } as unknown as Plugin),
    TypeError,
    'kind must be "format" or "layer"',
  );
});

Deno.test("registry: failed lookups list what is registered", () => {
  const reg = createRegistry().use([
    fmt("alpha", ".alp"),
    fmt("beta", ".bet"),
    layer("dense"),
  ]);
  assertThrows(
    () => reg.format("gamma"),
    TypeError,
    "registered formats: alpha, beta",
  );
  assertThrows(
    () => reg.formatForPath("m.xyz"),
    TypeError,
    ".alp (alpha), .bet (beta)",
  );
  assertThrows(
    () => reg.layer("conv9d"),
    TypeError,
    "registered layer types: dense",
  );
  assertThrows(() => createRegistry().layer("x"), TypeError, "none");
});

Deno.test("registry: use takes zero-argument plugin factories, alone or in a list", () => {
  let calls = 0;
  const alphaFormat = (): FormatPlugin => {
    calls++;
    return fmt("alpha", ".alp", 0x41);
  };
  // A factory whose one parameter has a default still has length 0.
  const betaFormat = (o: { ext?: string } = {}): FormatPlugin =>
    fmt("beta", o.ext ?? ".bet");
  const reg = createRegistry().use(alphaFormat).use([
    betaFormat,
    layer("dense"),
  ]);
  assertEquals(calls, 1);
  assertEquals(reg.formats().map((f) => f.name), ["alpha", "beta"]);
  assertEquals(reg.formatForPath("m.bet").name, "beta");
  assertEquals(reg.detect(new Uint8Array([0x41]))?.name, "alpha");
  assertEquals(reg.layer("dense").type, "dense");
  // The factory's result goes through the same checks as a plugin.
  assertThrows(() => reg.use(alphaFormat), TypeError, 'format "alpha"');
  assertEquals(calls, 2);
});

Deno.test("registry: a factory that needs arguments or returns no plugin is refused", () => {
  const reg = createRegistry();
  const needsName = (name: string): FormatPlugin => fmt(name, ".x");
  assertThrows(
    () => reg.use(needsName as unknown as () => Plugin),
    TypeError,
    "Cannot register plugin factory needsName: it takes 1 argument(s)",
  );
  assertThrows(
    () => reg.use((() => undefined) as unknown as () => Plugin),
    TypeError,
    "returned undefined, not a plugin object",
  );
  assertThrows(
    () => reg.use((() => ({ kind: "widget" })) as unknown as () => Plugin),
    TypeError,
    'kind must be "format" or "layer"',
  );
  assertEquals(reg.formats().length, 0);
});
