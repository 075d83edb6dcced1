// The load generator behind bench/serve_load.ts and its quick twin in
// tests/serve/load_test.ts: N predict requests from C concurrent clients
// over loopback, each answer checked against the library's own forward
// pass, latencies collected, and the server's batch sizes read back from
// /metrics.

import { buildNetwork, initNetwork } from "../core/network.ts";
import type { Tensor } from "../core/tensor.ts";
import { saveBundle } from "../formats/bundle/mod.ts";
import { defaultRegistry } from "../mod.ts";

/** The benchmark network: dense 256 → 1024 (relu) → 256, where a batched forward pays. */
export const LOAD_CONFIG = {
  input_size: 256,
  layers: [
    { type: "dense", output_size: 1024, activation: "relu" },
    { type: "dense", output_size: 256 },
  ],
};

/** Distinct input rows the clients cycle through. */
const DISTINCT_ROWS = 64;

/** A model file for the load test and the outputs its rows must give. */
export interface LoadModel {
  /** The bundle text. */
  bundle: string;
  /** Input rows (JSON bodies, prebuilt). */
  bodies: string[];
  /** The library's output for each row. */
  expected: Float32Array[];
}

/** Builds the seeded network, its bundle, the request bodies and the expected outputs. */
export async function loadModel(): Promise<LoadModel> {
  const reg = defaultRegistry();
  const weights: Map<string, Tensor> = initNetwork(reg, LOAD_CONFIG, 2024);
  const net = buildNetwork(reg, LOAD_CONFIG, weights);
  const bodies: string[] = [];
  const expected: Float32Array[] = [];
  for (let r = 0; r < DISTINCT_ROWS; r++) {
    const row = new Float32Array(256);
    for (let i = 0; i < 256; i++) row[i] = Math.cos(0.1 * i + r) * 0.8;
    bodies.push(JSON.stringify({ inputs: [Array.from(row)] }));
    expected.push(net.forward({ data: row, shape: [1, 256] }).data);
  }
  const bundle = await saveBundle([{
    id: "dense",
    config: LOAD_CONFIG,
    tensors: weights,
  }]);
  return { bundle, bodies, expected };
}

/** What one load run measured. */
export interface LoadResult {
  /** Requests answered 200 with the right values. */
  ok: number;
  /** Requests that failed (status, transport, or wrong values). */
  errors: number;
  /** The first few error messages. */
  errorSamples: string[];
  /** Seconds from the first request to the last answer. */
  seconds: number;
  /** Requests per second. */
  throughput: number;
  /** Latency percentiles, milliseconds. */
  p50: number;
  /** 90th percentile, ms. */
  p90: number;
  /** 99th percentile, ms. */
  p99: number;
  /** Slowest, ms. */
  max: number;
  /** Mean rows per forward pass on the server (from /metrics). */
  meanBatch: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

function close(a: number[], b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (!(Math.abs(a[i] - b[i]) <= 1e-4 * Math.abs(b[i]) + 1e-5)) return false;
  }
  return true;
}

/** Reads `sum / count` of a histogram from Prometheus text. */
export function histogramMean(metrics: string, name: string): number {
  const sum = metrics.match(new RegExp(`^${name}_sum (\\S+)$`, "m"));
  const count = metrics.match(new RegExp(`^${name}_count (\\S+)$`, "m"));
  return sum && count ? Number(sum[1]) / Number(count[1]) : NaN;
}

/**
 * Sends `requests` predictions from `clients` concurrent loops to
 * `predictUrl` and checks every answer. Stops issuing new requests after
 * `timeLimitMs` (those not sent count as errors).
 */
export async function runLoad(
  baseUrl: string,
  predictUrl: string,
  model: LoadModel,
  requests: number,
  clients: number,
  timeLimitMs: number,
): Promise<LoadResult> {
  const before = await (await fetch(`${baseUrl}/metrics`)).text();
  const latencies: number[] = [];
  const errorSamples: string[] = [];
  let next = 0, errors = 0;
  const t0 = performance.now();
  const client = async () => {
    while (true) {
      const i = next++;
      if (i >= requests) return;
      if (performance.now() - t0 > timeLimitMs) {
        errors++;
        if (errorSamples.length < 5) errorSamples.push("time limit reached");
        continue;
      }
      const k = i % model.bodies.length;
      const s = performance.now();
      try {
        const res = await fetch(predictUrl, {
          method: "POST",
          body: model.bodies[k],
          headers: { "content-type": "application/json" },
        });
        const body = await res.json();
        if (res.status !== 200) throw new Error(`${res.status} ${body.error}`);
        if (!close(body.outputs[0], model.expected[k])) {
          throw new Error(`request ${i}: outputs differ from the library's`);
        }
        latencies.push(performance.now() - s);
      } catch (e) {
        errors++;
        if (errorSamples.length < 5) errorSamples.push(String(e));
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  const seconds = (performance.now() - t0) / 1000;
  const after = await (await fetch(`${baseUrl}/metrics`)).text();
  const count = (t: string, n: string) =>
    Number(t.match(new RegExp(`^${n} (\\S+)$`, "m"))?.[1] ?? 0);
  const rows = count(after, "modelhost_predict_batch_size_sum") -
    count(before, "modelhost_predict_batch_size_sum");
  const batches = count(after, "modelhost_predict_batch_size_count") -
    count(before, "modelhost_predict_batch_size_count");
  latencies.sort((a, b) => a - b);
  return {
    ok: latencies.length,
    errors,
    errorSamples,
    seconds,
    throughput: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? NaN,
    meanBatch: batches > 0 ? rows / batches : NaN,
  };
}
