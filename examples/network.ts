/**
 * A small network from a JSON config: a dense encoder, a gated mixture of
 * two experts (a dense branch and a k-means branch) and a softmax head.
 * Fits the k-means centroids to data, then runs a batch.
 *
 *     deno run examples/network.ts
 *
 * @module
 */

import {
  buildNetwork,
  createRng,
  defaultRegistry,
  floatTensor,
  initNetwork,
  tensorFromF32,
} from "../mod.ts";
import { fitKMeans } from "../layers/mod.ts";

const reg = defaultRegistry();
const config = {
  input_size: 8,
  layers: [
    { type: "dense", output_size: 16, activation: "gelu" },
    {
      type: "parallel",
      combine_mode: "filter",
      filter_gate: { type: "dense" }, // output_size = 2 branches, inferred
      filter_softmax: "sparsemax",
      top_k: 1,
      branches: [
        { type: "dense", output_size: 6, activation: "tanh" },
        { type: "kmeans", num_clusters: 6, kmeans_temperature: 4 },
      ],
    },
    { type: "softmax" },
  ],
};

// Seeded weights: the same seed always gives the same bytes.
const weights = initNetwork(reg, config, 42);
let net = buildNetwork(reg, config, weights);
console.log("parameters:");
for (const p of net.paramSpecs()) console.log(`  ${p.name} [${p.shape}]`);

// A batch of 32 rows.
const rng = createRng(7);
const x = floatTensor(
  Float32Array.from({ length: 32 * 8 }, () => rng.normal()),
  [32, 8],
);

// Fit the k-means branch's centroids to what reaches it (the encoder's output).
const encoder = buildNetwork(
  reg,
  { input_size: 8, layers: [config.layers[0]] },
  weights,
);
const feats = encoder.forward(x);
const fit = fitKMeans(feats.data, 32, 16, { numClusters: 6, seed: 1 });
console.log(
  `k-means: ${fit.iterations} Lloyd iterations, inertia ${
    fit.inertia.toFixed(3)
  }`,
);
const name = "layers.1.branches.1.centroids";
weights.set(name, tensorFromF32(name, fit.centroids, [6, 16]));
net = buildNetwork(reg, config, weights);

const y = net.forward(x);
console.log(`output shape [${y.shape}]; first row:`);
console.log(`  ${[...y.data.slice(0, 6)].map((v) => v.toFixed(4)).join(" ")}`);
console.log("normalized config:");
console.log(JSON.stringify(net.config));
