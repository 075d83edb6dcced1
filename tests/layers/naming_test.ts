// The layer plugin naming rule: each built-in layer plugin is exported from
// layers/mod.ts as `<type>Layer` (the type string in camel case), and the
// names without the suffix stay one release as deprecated aliases.

import { assert, assertEquals, assertStrictEquals } from "@std/assert";
import * as layers from "../../layers/mod.ts";
import { conv1d, conv1dLayer } from "../../examples/plugins/conv1d/mod.ts";

const camel = (type: string) =>
  type.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

Deno.test("layers: every built-in plugin is exported as <type>Layer", () => {
  const exported = layers as unknown as Record<string, unknown>;
  const names = layers.LAYER_PLUGINS.map((p) => `${camel(p.type)}Layer`);
  assertEquals(names, [
    "denseLayer",
    "softmaxLayer",
    "layerNormLayer",
    "rmsNormLayer",
    "embeddingLayer",
    "swigluLayer",
    "sequentialLayer",
    "residualLayer",
    "kmeansLayer",
    "parallelLayer",
    "multiHeadAttentionLayer",
    "transformerBlockLayer",
    "decoderBlockLayer",
    "decoderEmbeddingLayer",
  ]);
  layers.LAYER_PLUGINS.forEach((p, i) => {
    assertStrictEquals(exported[names[i]], p, names[i]);
  });
  assertEquals(conv1dLayer.type, "conv1d");
});

Deno.test("layers: the old export names are the same plugins (deprecated aliases)", () => {
  const pairs: [unknown, unknown][] = [
    [layers.dense, layers.denseLayer],
    [layers.swiglu, layers.swigluLayer],
    [layers.embedding, layers.embeddingLayer],
    [layers.kmeans, layers.kmeansLayer],
    [layers.parallel, layers.parallelLayer],
    [layers.sequential, layers.sequentialLayer],
    [layers.residual, layers.residualLayer],
    [layers.multiHeadAttention, layers.multiHeadAttentionLayer],
    [layers.transformerBlock, layers.transformerBlockLayer],
    [conv1d, conv1dLayer],
  ];
  for (const [old, now] of pairs) {
    assert(now !== undefined);
    assertStrictEquals(old, now);
  }
});
