import { assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { buildNetwork, initNetwork, parseNetwork } from "../../core/network.ts";
import { createRng } from "../../core/rng.ts";
import { floatTensor, tensorFromF32 } from "../../core/tensor.ts";
import { fitKMeans, kmeansPlusPlus } from "../../layers/kmeans.ts";
import { defaultRegistry } from "../../mod.ts";
import { assertAllClose } from "../_helpers/close.ts";

const reg = defaultRegistry();
const vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/layers.json", import.meta.url)),
);

Deno.test("kmeans fit: Lloyd iterations match the NumPy reference from the same start", () => {
  const f = vectors.kmeans_fit;
  const data = new Float32Array(f.data.data);
  const [rows, dim] = f.data.shape;
  const fit = fitKMeans(data, rows, dim, {
    numClusters: 3,
    initialCentroids: f.init.data,
  });
  assertEquals(fit.converged, true);
  assertEquals(fit.iterations, f.iterations);
  assertEquals([...fit.assignments], f.assignments);
  assertAllClose(fit.centroids, f.centroids.data, "centroids");
});

Deno.test("kmeans fit: seeded k-means++ is deterministic and finds separated clusters", () => {
  const rng = createRng(9);
  const centers = [[0, 0], [20, 0], [0, 20], [20, 20]];
  const data = new Float32Array(4 * 25 * 2);
  for (let k = 0; k < 4; k++) {
    for (let i = 0; i < 25; i++) {
      data[(k * 25 + i) * 2] = centers[k][0] + rng.normal();
      data[(k * 25 + i) * 2 + 1] = centers[k][1] + rng.normal();
    }
  }
  const a = kmeansPlusPlus(data, 100, 2, 4, 3);
  assertEquals(a, kmeansPlusPlus(data, 100, 2, 4, 3));
  assertEquals(
    a.some((v, i) => v !== kmeansPlusPlus(data, 100, 2, 4, 4)[i]),
    true,
  );
  // Every picked centroid is a data row.
  for (let j = 0; j < 4; j++) {
    let found = false;
    for (let r = 0; r < 100; r++) {
      if (data[r * 2] === a[j * 2] && data[r * 2 + 1] === a[j * 2 + 1]) {
        found = true;
      }
    }
    assertEquals(found, true);
  }
  const fit = fitKMeans(data, 100, 2, { numClusters: 4, seed: 3 });
  assertEquals(fit.converged, true);
  // Each true center has a fitted centroid within 1.
  for (const [cx, cy] of centers) {
    let best = Infinity;
    for (let j = 0; j < 4; j++) {
      best = Math.min(
        best,
        Math.hypot(fit.centroids[j * 2] - cx, fit.centroids[j * 2 + 1] - cy),
      );
    }
    assertEquals(best < 1, true, `center ${cx},${cy}: ${best}`);
  }
  // Rows of one generated cluster share one assignment.
  for (let k = 0; k < 4; k++) {
    assertEquals(new Set(fit.assignments.slice(k * 25, k * 25 + 25)).size, 1);
  }
  assertThrows(
    () => fitKMeans(data, 100, 2, { numClusters: 101 }),
    RangeError,
    "Cannot pick 101 centroids from 100 rows",
  );
  assertThrows(
    () => fitKMeans(data, 99, 2, { numClusters: 2 }),
    RangeError,
    "data has 200 values, expected 99 rows × 2",
  );
});

Deno.test("kmeans: fitted centroids drop into a network (reconstruction, features, probabilities)", () => {
  const data = new Float32Array([0, 0, 0, 2, 10, 10, 10, 12]);
  const fit = fitKMeans(data, 4, 2, { numClusters: 2, seed: 0 });
  const c = tensorFromF32("layers.0.centroids", fit.centroids, [2, 2]);
  const lo = fit.centroids[0] < 5 ? 0 : 1;
  const x = floatTensor(new Float32Array([1, 1, 9, 12]), [2, 2]);
  const run = (mode: string, temp = 1) =>
    buildNetwork(reg, {
      input_size: 2,
      layers: [{
        type: "kmeans",
        num_clusters: 2,
        kmeans_output_mode: mode,
        kmeans_temperature: temp,
      }],
    }, new Map([[c.name, c]])).forward(x);
  assertEquals([...run("reconstruction").data], [0, 1, 10, 11]);
  // d² from [1, 1] to [0, 1] is 1 and to [10, 11] is 181: p = softmax([-1, -181] / 100)
  const p = run("probabilities", 100);
  const e = 1 / (1 + Math.exp(-180 / 100));
  assertAlmostEquals(p.data[lo], e, 1e-6);
  const f = run("features", 100);
  assertAlmostEquals(f.data[0], e * 0 + (1 - e) * 10, 1e-5);
});

Deno.test("kmeans config: sizes inferred, errors named", () => {
  const spec = parseNetwork(reg, {
    layers: [{
      type: "kmeans",
      num_clusters: 3,
      kmeans_output_mode: "features",
      attached_layer: { type: "dense", input_size: 5, output_size: 4 },
    }],
  });
  assertEquals(spec.inputSize, 5);
  assertEquals(spec.outputSize, 4);
  const bad = (layer: Record<string, unknown>) => () =>
    parseNetwork(reg, {
      input_size: 4,
      layers: [{ type: "kmeans", ...layer }],
    });
  assertThrows(
    bad({}),
    TypeError,
    "layers[0].num_clusters: required: expected a positive integer",
  );
  assertThrows(
    bad({ num_clusters: 2, kmeans_output_mode: "hard" }),
    TypeError,
    'layers[0].kmeans_output_mode: expected one of probabilities, features, reconstruction, got "hard"',
  );
  assertThrows(
    bad({ num_clusters: 2, distance_metric: "hamming" }),
    TypeError,
    'layers[0].distance_metric: expected one of euclidean, cosine, manhattan, got "hamming"',
  );
  assertThrows(
    bad({ num_clusters: 2, cluster_dim: 3 }),
    TypeError,
    "layers[0].cluster_dim: expected 4 (the input size), got 3",
  );
  assertThrows(
    bad({ num_clusters: 2, attached_layer: { type: "dense", output_size: 0 } }),
    TypeError,
    "layers[0].attached_layer.output_size: expected a positive integer, got 0",
  );
  assertThrows(
    () => parseNetwork(reg, { layers: [{ type: "kmeans", num_clusters: 2 }] }),
    TypeError,
    "layers[0].input_size: required: no previous layer or attached layer to infer it from",
  );
});

Deno.test("kmeans: init is deterministic and includes the attached layer", () => {
  const cfg = {
    input_size: 6,
    layers: [{
      type: "kmeans",
      num_clusters: 4,
      attached_layer: { type: "dense", output_size: 3 },
    }],
  };
  const a = initNetwork(reg, cfg, 5), b = initNetwork(reg, cfg, 5);
  assertEquals([...a.keys()], [
    "layers.0.centroids",
    "layers.0.attached.weight",
    "layers.0.attached.bias",
  ]);
  for (const [k, t] of a) assertEquals(t.bytes, b.get(k)!.bytes);
  assertEquals(a.get("layers.0.centroids")!.shape, [4, 3]);
});
