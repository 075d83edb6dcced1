// The naming rule for format plugins: a factory `<format>Format(options?)`
// per format, registered with `registry.use(factory)` or
// `registry.use(factory())`; the old names stay one release as deprecated
// aliases that give the same plugin.

import { assert, assertEquals, assertStrictEquals } from "@std/assert";
import { createRegistry } from "../../registry.ts";
import { defaultRegistry } from "../../mod.ts";
import { bundleFormat } from "../../formats/bundle/mod.ts";
import {
  safetensors,
  safetensorsFormat,
} from "../../formats/safetensors/mod.ts";
import { gguf, ggufFormat } from "../../formats/gguf/mod.ts";
import { onnx, onnxFormat } from "../../formats/onnx/mod.ts";

const FACTORIES = [
  { factory: bundleFormat, name: "bundle", path: "m.bundle.json" },
  { factory: safetensorsFormat, name: "safetensors", path: "m.safetensors" },
  { factory: ggufFormat, name: "gguf", path: "m.gguf" },
  { factory: onnxFormat, name: "onnx", path: "m.onnx" },
] as const;

Deno.test("format plugins: each factory registers uncalled or called, under the format's name", () => {
  for (const { factory, name, path } of FACTORIES) {
    const a = createRegistry().use(factory);
    const b = createRegistry().use(factory());
    assertEquals(a.format(name).name, name);
    assertEquals(b.formatForPath(path).name, name);
    assertEquals(a.format(name).extensions, b.format(name).extensions);
    // A fresh object per call: registries do not share plugin objects.
    assert(factory() !== factory());
  }
});

Deno.test("format plugins: the default registry holds the four built-in formats in order", () => {
  assertEquals(
    defaultRegistry().formats().map((f) => f.name),
    ["bundle", "safetensors", "gguf", "onnx"],
  );
});

Deno.test("format plugins: deprecated aliases give the same plugins", () => {
  assertStrictEquals(safetensors, safetensorsFormat);
  assertStrictEquals(onnx, onnxFormat);
  // `gguf` was a plugin value and stays one.
  assertEquals(gguf.kind, "format");
  assertEquals(gguf.name, "gguf");
  assertEquals(gguf.extensions, ggufFormat().extensions);
  assertEquals(
    gguf.detect!(new TextEncoder().encode("GGUF")),
    ggufFormat().detect!(new TextEncoder().encode("GGUF")),
  );
  assertEquals(createRegistry().use(gguf).format("gguf"), gguf);
});
