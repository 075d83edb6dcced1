/**
 * Attention benchmarks: prefill of T = 128 tokens at d_model = 256 (8 heads
 * of 32) and one decode step against a KV cache of 128 positions, for the
 * `multi_head_attention` layer and a full `transformer_block`
 * (intermediate 688). Baseline of each group: the projections alone (what
 * `linear()` costs), so the ratio shows what RoPE + softmax attention add.
 *
 *   deno bench -A bench/attention_bench.ts     # Deno.bench table
 *   deno run -A bench/attention_bench.ts       # machine + tokens/s table
 */

import { multiHeadAttentionLayer } from "../layers/attention.ts";
import { transformerBlockLayer } from "../layers/transformer_block.ts";
import type { LayerPlugin, LayerState } from "../core/plugin.ts";
import { createRng } from "../core/rng.ts";
import { createScope } from "../core/scope.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../core/tensor.ts";
import { linear } from "../kernels/linear.ts";
import { cpuInfo } from "./_peer.ts";

const T = 128, D = 256, HEADS = 8, FF = 688;
const ctx = {
  path: "bench",
  parseChild: () => {
    throw new Error("no children");
  },
};

function setup<C>(plugin: LayerPlugin<C>, json: Record<string, unknown>) {
  const cfg = plugin.parse({ type: plugin.type, ...json }, ctx);
  const init = plugin.init!(cfg, createRng(1));
  const tensors = new Map<string, Tensor>(
    plugin.params(cfg).map((
      p,
    ) => [p.name, tensorFromF32(p.name, init.get(p.name)!, p.shape)]),
  );
  return { layer: plugin.build(cfg, createScope(tensors)), tensors };
}

const attn = setup(multiHeadAttentionLayer, { d_model: D, num_heads: HEADS });
const block = setup(transformerBlockLayer, {
  d_model: D,
  num_heads: HEADS,
  intermediate_size: FF,
});
const rng = createRng(2);
const xData = new Float32Array(T * D).map(() => rng.normal());
const prompt = floatTensor(xData, [1, T, D]);
const token = floatTensor(xData.slice(0, D), [1, 1, D]);
const proj = ["q_proj", "k_proj", "v_proj", "o_proj"].map((n) =>
  attn.tensors.get(`${n}.weight`)!
);

/** A state whose cache holds T positions; each decode step is rewound to T. */
function prefilled(layer: { forward: typeof attn.layer.forward }): LayerState {
  const s: LayerState = {};
  layer.forward(prompt, s);
  return s;
}
const attnState = prefilled(attn.layer);
const blockState = prefilled(block.layer);
const decode = (layer: typeof attn.layer, s: LayerState) => {
  layer.forward(token, s);
  (s.kv as { length: number }).length = T;
};

Deno.bench("4 projections only (linear), 128 tokens", {
  group: "prefill",
  baseline: true,
}, () => {
  for (const w of proj) linear(xData, T, w);
});
Deno.bench(
  "multi_head_attention prefill, 128 tokens",
  { group: "prefill" },
  () => {
    attn.layer.forward(prompt);
  },
);
Deno.bench(
  "transformer_block prefill, 128 tokens",
  { group: "prefill" },
  () => {
    block.layer.forward(prompt);
  },
);

Deno.bench("4 projections only (linear), 1 token", {
  group: "decode",
  baseline: true,
}, () => {
  for (const w of proj) linear(token.data, 1, w);
});
Deno.bench(
  "multi_head_attention decode step, 128 cached",
  { group: "decode" },
  () => {
    decode(attn.layer, attnState);
  },
);
Deno.bench(
  "transformer_block decode step, 128 cached",
  { group: "decode" },
  () => {
    decode(block.layer, blockState);
  },
);

function cpuModel(): string {
  return cpuInfo().model ?? "unknown CPU";
}

function perSecond(fn: () => void, minMs = 1500): number {
  fn();
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < minMs) {
    fn();
    n++;
    t = performance.now();
  }
  return (n * 1000) / (t - t0);
}

if (import.meta.main) {
  console.log(
    `machine: ${cpuModel()}, ${navigator.hardwareConcurrency} logical CPUs, ${Deno.build.os}/${Deno.build.arch}, Deno ${Deno.version.deno}`,
  );
  console.log(
    `d_model ${D}, ${HEADS} heads of ${
      D / HEADS
    }, intermediate ${FF}, F32, single thread\n`,
  );
  const rows: [string, number][] = [
    ["mha prefill T=128", T * perSecond(() => attn.layer.forward(prompt))],
    ["mha decode @128 cached", perSecond(() => decode(attn.layer, attnState))],
    ["block prefill T=128", T * perSecond(() => block.layer.forward(prompt))],
    [
      "block decode @128 cached",
      perSecond(() => decode(block.layer, blockState)),
    ],
  ];
  for (const [name, tps] of rows) {
    console.log(`${name.padEnd(26)} ${tps.toFixed(0).padStart(8)} tokens/s`);
  }
}
