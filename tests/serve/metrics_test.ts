// /metrics: the Prometheus text format read back by an independent parser
// (npm parse-prometheus-text-format), label escaping, cumulative histogram
// buckets, and counts that match the requests a test made.

import { assert, assertEquals } from "@std/assert";
import parse from "parse-prometheus-text-format";
import { Metrics } from "../../serve/_metrics.ts";
import {
  bundleBytes,
  call,
  predictVectors,
  upload,
  withServer,
} from "./_helpers.ts";

interface Family {
  name: string;
  type: string;
  metrics: {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
  }[];
}

/** Every sample line: name, optional labels, a number. */
const SAMPLE =
  /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*",?)*\})? (-?[0-9.e+-]+|\+Inf|-Inf|NaN)$/;

function checkGrammar(text: string): void {
  assert(text.endsWith("\n"));
  for (const line of text.trimEnd().split("\n")) {
    if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue;
    assert(SAMPLE.test(line), `not a sample line: ${line}`);
  }
}

Deno.test("metrics: counters, gauges and histograms in the text format, escaping included", () => {
  const m = new Metrics();
  m.inc("a_total", "A help", { route: 'x"y\\z\nw' }, 3);
  m.inc("a_total", "A help", { route: 'x"y\\z\nw' });
  for (const v of [0.05, 0.5, 5]) m.observe("h_seconds", "H", [0.1, 1], {}, v);
  m.gaugeFn("g", "G", () => [{ labels: { k: "v" }, value: 2.5 }]);
  const text = m.render();
  checkGrammar(text);
  const fams = parse(text) as Family[];
  assertEquals(fams.map((f) => [f.name, f.type]), [
    ["a_total", "COUNTER"],
    ["h_seconds", "HISTOGRAM"],
    ["g", "GAUGE"],
  ]);
  assertEquals(fams[0].metrics[0], {
    value: "4",
    labels: { route: 'x"y\\z\nw' },
  });
  assertEquals(fams[1].metrics[0].buckets, {
    "0.1": "1",
    "1": "2",
    "+Inf": "3",
  });
  assert(text.includes("h_seconds_sum 5.55\nh_seconds_count 3\n"));
  assertEquals(fams[2].metrics[0], { value: "2.5", labels: { k: "v" } });
});

Deno.test("metrics: /metrics counts the requests made, by route and status", async () => {
  await withServer({ maxWaitMs: 0 }, async ({ url }) => {
    const v = await predictVectors();
    await upload(url, "mlp", await bundleBytes(v));
    for (let i = 0; i < 3; i++) {
      await call(`${url}/registry/models/mlp/predict`, {
        json: { inputs: v.inputs },
      });
    }
    await call(`${url}/registry/models/nope/predict`, {
      json: { inputs: v.inputs },
    });
    const res = await fetch(`${url}/metrics`);
    assertEquals(
      res.headers.get("content-type"),
      "text/plain; version=0.0.4; charset=utf-8",
    );
    const text = await res.text();
    checkGrammar(text);
    const fams = new Map((parse(text) as Family[]).map((f) => [f.name, f]));
    const requests = fams.get("modelhost_http_requests_total")!.metrics;
    const count = (route: string, status: string) =>
      requests.find((s) =>
        s.labels?.route === route && s.labels?.status === status
      )?.value;
    assertEquals(count("/registry/models/{name}/predict", "200"), "3");
    assertEquals(count("/registry/models/{name}/predict", "404"), "1");
    assertEquals(count("/registry/models/{name}", "201"), "1");
    const rows = fams.get("modelhost_predict_rows_total")!.metrics[0];
    assertEquals(rows, { value: "21", labels: { model: "mlp@1" } });
    assertEquals(
      fams.get("modelhost_predict_batch_size")!.metrics[0].buckets!["+Inf"],
      "3",
    );
    assertEquals(fams.get("modelhost_models_loaded")!.metrics[0].value, "1");
    assertEquals(fams.get("modelhost_model_loads_total")!.metrics[0], {
      value: "1",
      labels: { model: "mlp@1" },
    });
    const lat = fams.get("modelhost_http_request_duration_seconds")!.metrics;
    for (const h of lat) {
      const counts = Object.entries(h.buckets!).sort(([a], [b]) =>
        (a === "+Inf" ? Infinity : Number(a)) -
        (b === "+Inf" ? Infinity : Number(b))
      ).map(([, c]) => Number(c));
      assert(counts.every((c, i) => i === 0 || c >= counts[i - 1]));
    }
  });
});
