// The server's registry and prediction endpoints: uploads (bundle and
// SafeTensors with config), listings with provenance, predictions checked
// against NumPy (tests/vectors/gen/serve_predict.py) and against the library
// forward pass, deletion, and every refusal with its status code and an
// unchanged registry folder.

import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "@std/path";
import { buildNetwork } from "../../core/network.ts";
import { floatTensor } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import { startServer } from "../../serve/mod.ts";
import { assertAllClose } from "../_helpers/close.ts";
import {
  bundleBytes,
  call,
  listing,
  predictVectors,
  safetensorsBytes,
  upload,
  vectorTensors,
  withServer,
} from "./_helpers.ts";

const V = await predictVectors();

/** The library's own forward pass of the reference network (what the server must return bit for bit when it runs the rows alone). */
function libraryForward(rows: number[][]): Float32Array {
  const reg = defaultRegistry();
  const net = buildNetwork(
    reg,
    V.config,
    new Map(vectorTensors(V).map((t) => [t.name, t])),
  );
  return net.forward(floatTensor(Float32Array.from(rows.flat()), [
    rows.length,
    rows[0].length,
  ])).data;
}

Deno.test("serve: upload a bundle and a SafeTensors file, list them with provenance, predict, delete", async () => {
  await withServer({ maxWaitMs: 0 }, async ({ url, dir, logs }) => {
    const a = await upload(url, "mlp", await bundleBytes(V));
    assertEquals(a.status, 201);
    assertEquals(a.body.version, "1");
    assertEquals(a.body.format, "bundle");
    assertEquals(a.body.kind, "network");
    assertEquals(a.res.headers.get("location"), "/v1/models/mlp/versions/1");
    assertMatch(a.res.headers.get("x-request-id")!, /^[0-9a-z]+-1$/);
    assertEquals(
      (a.body.provenance as Record<string, unknown>).git_commit,
      "0123abc",
    );
    assertEquals((a.body.provenance as Record<string, unknown>).seed, 7);
    assertEquals(a.body.models, [{ id: "mlp", inputSize: 6, outputSize: 4 }]);

    const b = await upload(url, "mlp", await safetensorsBytes(V));
    assertEquals(b.status, 201);
    assertEquals(b.body.version, "2");
    assertEquals(b.body.format, "safetensors");
    assertEquals(b.body.parameters, 16 * 6 + 16 + 4 * 16 + 4);
    const prov = b.body.provenance as Record<string, unknown>;
    assertEquals(prov.git_commit, "4567def");
    assertEquals(prov.dataset_sha256, "feed");

    assertEquals(await listing(dir), [
      `mlp@1.bundle.json ${a.body.bytes}`,
      `mlp@2.safetensors ${b.body.bytes}`,
    ]);

    const list = await call(`${url}/v1/models`);
    assertEquals(list.status, 200);
    const models = list.body.models as {
      name: string;
      latest: string;
      versions: { version: string }[];
    }[];
    assertEquals(models.map((m) => [m.name, m.latest]), [["mlp", "2"]]);
    assertEquals(models[0].versions.map((v) => v.version), ["1", "2"]);

    // Latest (SafeTensors) and version 1 (bundle): NumPy's outputs.
    for (
      const path of [
        "/v1/models/mlp/predict",
        "/v1/models/mlp/versions/1/predict",
      ]
    ) {
      const p = await call(url + path, { json: { inputs: V.inputs } });
      assertEquals(p.status, 200, JSON.stringify(p.body));
      assertEquals(p.body.shape, [7, 4]);
      const out = (p.body.outputs as number[][]).flat();
      assertAllClose(out, V.outputs.flat(), `${path} vs NumPy`, 1e-5, 1e-6);
      // And exactly what the library computes for the same rows.
      assertEquals(Float32Array.from(out), libraryForward(V.inputs));
    }
    const one = await call(`${url}/v1/models/mlp/predict`, {
      json: { inputs: V.inputs[3] },
    });
    assertEquals(one.body.shape, [1, 4]);
    assertAllClose(
      (one.body.outputs as number[][])[0],
      V.outputs[3],
      "one bare row",
    );

    const got = await call(`${url}/v1/models/mlp/versions/2`);
    assertEquals(got.body.loaded, true);

    const del = await call(`${url}/v1/models/mlp/versions/1`, {
      method: "DELETE",
    });
    assertEquals(del.status, 200);
    assertEquals(del.body.deleted, [{
      name: "mlp",
      version: "1",
      file: "mlp@1.bundle.json",
    }]);
    assertEquals(await listing(dir), [`mlp@2.safetensors ${b.body.bytes}`]);
    assertEquals(
      (await call(`${url}/v1/models/mlp/versions/1/predict`, {
        json: { inputs: V.inputs },
      })).status,
      404,
    );

    const all = await call(`${url}/v1/models/mlp`, { method: "DELETE" });
    assertEquals(all.status, 200);
    assertEquals(await listing(dir), []);
    assertEquals((await call(`${url}/v1/models/mlp`)).status, 404);

    const requests = logs.filter((l) => l.msg === "request");
    assertEquals(requests.length, 11);
    assert(
      requests.every((l) =>
        typeof l.ms === "number" && typeof l.status === "number"
      ),
    );
    assertEquals(requests[0].route, "/v1/models/{name}");
    assertEquals(requests[0].status, 201);
  });
});

Deno.test("serve: version folders, unversioned files and explicit versions", async () => {
  await withServer({}, async ({ url, dir }) => {
    const list = await call(`${url}/v1/models/net`);
    assertEquals(list.status, 200);
    assertEquals(
      (list.body.versions as { version: string; file: string }[]).map((
        v,
      ) => [v.version, v.file]),
      [["1", "net/1/model.bundle.json"], ["10", "net/10/model.safetensors"]],
    );
    assertEquals((await call(`${url}/v1/models/plain`)).body.latest, "1");
    // Numeric order: 10 is newer than 9 and 1.
    const up = await upload(url, "net", await bundleBytes(V), "?version=9");
    assertEquals(up.body.version, "9");
    assertEquals((await call(`${url}/v1/models/net`)).body.latest, "10");
    const next = await upload(url, "net", await bundleBytes(V));
    assertEquals(next.body.version, "11");
    const p = await call(`${url}/v1/models/net/versions/10/predict`, {
      json: { inputs: V.inputs },
    });
    assertAllClose(
      (p.body.outputs as number[][]).flat(),
      V.outputs.flat(),
      "folder layout",
      1e-5,
      1e-6,
    );
    // Deleting a folder version removes its folder; the last one removes net/.
    await call(`${url}/v1/models/net/versions/1`, { method: "DELETE" });
    assert(!(await listing(dir)).some((l) => l.startsWith("net/1/")));
    await call(`${url}/v1/models/net`, { method: "DELETE" });
    assertEquals((await listing(dir)).filter((l) => l.startsWith("net")), []);
  }, async (dir) => {
    await Deno.mkdir(join(dir, "net/1"), { recursive: true });
    await Deno.mkdir(join(dir, "net/10"), { recursive: true });
    await Deno.writeFile(
      join(dir, "net/1/model.bundle.json"),
      await bundleBytes(V),
    );
    await Deno.writeFile(
      join(dir, "net/10/model.safetensors"),
      await safetensorsBytes(V),
    );
    await Deno.writeFile(
      join(dir, "plain.safetensors"),
      await safetensorsBytes(V),
    );
  });
});

Deno.test("serve: refusals give the right status and leave the registry folder as it was", async () => {
  await withServer(
    { maxBodyBytes: 4096, maxUploadBytes: 2048 },
    async ({ url, dir }) => {
      assertEquals(
        (await upload(url, "mlp", await bundleBytes(V))).status,
        201,
      );
      const before = await listing(dir);
      const st = await safetensorsBytes(V);
      const cases: [string, () => ReturnType<typeof call>, number, string][] = [
        [
          "garbage upload",
          () =>
            upload(url, "junk", new TextEncoder().encode("not a model at all")),
          400,
          "refused",
        ],
        [
          "truncated SafeTensors",
          () => upload(url, "cut", st.subarray(0, st.length - 8)),
          400,
          "refused",
        ],
        [
          "config that does not fit the tensors",
          async () =>
            upload(
              url,
              "bad",
              await safetensorsBytes(V, {
                input_size: 6,
                layers: [{ type: "dense", output_size: 5 }],
              }),
            ),
          400,
          "do not fit",
        ],
        [
          "empty upload",
          () => upload(url, "empty", new Uint8Array(0)),
          400,
          "Empty upload",
        ],
        [
          "bad model name",
          () => upload(url, "a%40b", st),
          400,
          "Invalid model name",
        ],
        [
          "unknown format",
          () => upload(url, "x", st, "?format=nope"),
          400,
          "Unknown format",
        ],
        [
          "existing version",
          () => upload(url, "mlp", st, "?version=1"),
          409,
          "already has version",
        ],
        [
          "upload over the cap (Content-Length)",
          () => upload(url, "big", new Uint8Array(4096)),
          413,
          "too large",
        ],
        [
          "upload over the cap (streamed)",
          () =>
            upload(
              url,
              "big",
              new ReadableStream({
                start(c) {
                  for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(1000));
                  c.close();
                },
              }),
            ),
          413,
          "too large",
        ],
        [
          "malformed JSON",
          () =>
            call(`${url}/v1/models/mlp/predict`, {
              method: "POST",
              body: "{inputs: [1,",
            }),
          400,
          "Malformed JSON",
        ],
        [
          "JSON that is no object",
          () => call(`${url}/v1/models/mlp/predict`, { json: [1, 2] }),
          400,
          "must be an object",
        ],
        [
          "JSON body over the cap",
          () =>
            call(`${url}/v1/models/mlp/predict`, {
              json: { inputs: [new Array(2000).fill(0.5)] },
            }),
          413,
          "too large",
        ],
        [
          "unknown model",
          () =>
            call(`${url}/v1/models/nope/predict`, {
              json: { inputs: V.inputs },
            }),
          404,
          'Model "nope" not found',
        ],
        [
          "unknown version",
          () =>
            call(`${url}/v1/models/mlp/versions/7/predict`, {
              json: { inputs: V.inputs },
            }),
          404,
          'no version "7"',
        ],
        [
          "wrong feature count",
          () =>
            call(`${url}/v1/models/mlp/predict`, {
              json: { inputs: [[1, 2, 3]] },
            }),
          400,
          "the model takes 6",
        ],
        [
          "ragged inputs",
          () =>
            call(`${url}/v1/models/mlp/predict`, {
              json: { inputs: [[1, 2, 3, 4, 5, 6], [1]] },
            }),
          400,
          "rectangular",
        ],
        [
          "non-numbers",
          () =>
            call(`${url}/v1/models/mlp/predict`, {
              json: { inputs: [[1, 2, 3, 4, 5, "6"]] },
            }),
          400,
          "only numbers",
        ],
        [
          "no inputs",
          () => call(`${url}/v1/models/mlp/predict`, { json: {} }),
          400,
          '"inputs" must be',
        ],
        ["unknown route", () => call(`${url}/v2/everything`), 404, "No route"],
        [
          "wrong method",
          () => call(`${url}/v1/models/mlp/predict`),
          405,
          "GET is not allowed",
        ],
        [
          "delete of an unknown model",
          () => call(`${url}/v1/models/nope`, { method: "DELETE" }),
          404,
          "not found",
        ],
      ];
      for (const [what, run, status, text] of cases) {
        const r = await run();
        assertEquals(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
        assertMatch(
          String(r.body.error),
          new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")),
          what,
        );
        assertEquals(
          await listing(dir),
          before,
          `${what} changed the registry folder`,
        );
      }
      const wrong = await call(`${url}/v1/models/mlp/predict`);
      assertEquals(wrong.res.headers.get("allow"), "POST");
    },
  );
});

Deno.test("serve: an upload cut off mid-body leaves nothing behind", async () => {
  await withServer({}, async ({ url, dir, logs }) => {
    const st = await safetensorsBytes(V);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (sent >= 2) {
          c.error(new Error("the client gave up"));
          return;
        }
        c.enqueue(st.subarray(sent * 64, (sent + 1) * 64));
        sent++;
        await new Promise((r) => setTimeout(r, 20));
      },
    });
    let failed = false;
    try {
      const res = await fetch(`${url}/v1/models/cut`, { method: "POST", body });
      await res.body?.cancel();
    } catch {
      failed = true;
    }
    assert(failed, "the client's fetch should fail");
    for (let i = 0; i < 100 && !logs.some((l) => l.msg === "request"); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const line = logs.find((l) => l.msg === "request")!;
    assertEquals(line.route, "/v1/models/{name}");
    assert((line.status as number) >= 400, `status ${line.status}`);
    assertEquals(await listing(dir), []);
  });
});

Deno.test("serve: a bearer token guards upload and delete, not reads", async () => {
  await withServer({ token: "s3cret" }, async ({ url, dir }) => {
    const bytes = await bundleBytes(V);
    const none = await upload(url, "mlp", bytes);
    assertEquals(none.status, 401);
    assertEquals(
      none.res.headers.get("www-authenticate"),
      'Bearer realm="modelhost"',
    );
    const wrong = await upload(url, "mlp", bytes, "", {
      authorization: "Bearer nope",
    });
    assertEquals(wrong.status, 401);
    assertEquals(wrong.body.error, "Invalid bearer token");
    assertEquals(await listing(dir), []);
    const ok = await upload(url, "mlp", bytes, "", {
      authorization: "Bearer s3cret",
    });
    assertEquals(ok.status, 201);
    assertEquals((await call(`${url}/v1/models`)).status, 200);
    assertEquals(
      (await call(`${url}/v1/models/mlp/predict`, {
        json: { inputs: V.inputs },
      })).status,
      200,
    );
    assertEquals(
      (await call(`${url}/v1/models/mlp`, { method: "DELETE" })).status,
      401,
    );
    assertEquals(
      (await call(`${url}/v1/models/mlp`, {
        method: "DELETE",
        headers: { authorization: "Bearer s3cret" },
      })).status,
      200,
    );
  });
});

Deno.test("serve: requests arriving together run as one batch; each gets its own rows", async () => {
  await withServer(
    { maxBatch: 16, maxWaitMs: 100 },
    async ({ url, server }) => {
      assertEquals(
        (await upload(url, "mlp", await bundleBytes(V))).status,
        201,
      );
      // Load (and warm up) first, so the seven requests below meet a loaded model.
      await call(`${url}/v1/models/mlp/predict`, {
        json: { inputs: [V.inputs[0]] },
      });
      const results = await Promise.all(
        V.inputs.map((row) =>
          call(`${url}/v1/models/mlp/predict`, { json: { inputs: [row] } })
        ),
      );
      results.forEach((r, i) => {
        assertEquals(r.status, 200);
        assertAllClose(
          (r.body.outputs as number[][])[0],
          V.outputs[i],
          `row ${i}`,
          1e-5,
          1e-6,
        );
      });
      const m = server.metrics();
      // Two forward passes: the warm-up request, then all seven together.
      assertMatch(m, /^modelhost_predict_batch_size_count 2$/m);
      assertMatch(m, /^modelhost_predict_batch_size_sum 8$/m);
      assertMatch(m, /^modelhost_predict_batch_requests_bucket\{le="8"\} 2$/m);
      assertMatch(m, /^modelhost_predict_batch_requests_bucket\{le="4"\} 1$/m);
    },
  );
});

Deno.test("serve: loaded models are kept up to the byte budget, least recently used dropped first", async () => {
  // The reference network holds 720 bytes of weights: one fits in 1000.
  await withServer(
    { cacheBytes: 1000, maxWaitMs: 0 },
    async ({ url, server, logs }) => {
      const bytes = await bundleBytes(V);
      await upload(url, "a", bytes);
      await upload(url, "b", bytes);
      const predict = (name: string) =>
        call(`${url}/v1/models/${name}/predict`, {
          json: { inputs: V.inputs },
        });
      await predict("a");
      await predict("a");
      await predict("b");
      await predict("a");
      const m = server.metrics();
      assertMatch(m, /^modelhost_model_loads_total\{model="a@1"\} 2$/m);
      assertMatch(m, /^modelhost_model_loads_total\{model="b@1"\} 1$/m);
      assertMatch(m, /^modelhost_model_evictions_total 2$/m);
      assertMatch(m, /^modelhost_models_loaded 1$/m);
      assertMatch(m, /^modelhost_model_cache_bytes 720$/m);
      assertEquals(
        logs.filter((l) =>
          l.msg === "model loaded" || l.msg === "model unloaded"
        )
          .map((l) => `${l.msg} ${l.model}`),
        [
          "model loaded a@1",
          "model loaded b@1",
          "model unloaded a@1",
          "model loaded a@1",
          "model unloaded b@1",
        ],
      );
      assertEquals(
        logs.find((l) => l.msg === "model loaded")!.bytes,
        720,
      );
    },
  );
});

Deno.test("serve: startServer checks its folder and options", async () => {
  let err: unknown;
  try {
    await startServer({ dir: "/nonexistent/modelhost", port: 0, log: false });
  } catch (e) {
    err = e;
  }
  assert(err instanceof Deno.errors.NotFound);
  const dir = await Deno.makeTempDir();
  try {
    await startServer({ dir, port: 0, log: false, maxBatch: 0 });
  } catch (e) {
    err = e;
  }
  assert(
    err instanceof TypeError &&
      err.message.includes("maxBatch must be 1 or more, got 0"),
  );
  await Deno.remove(dir);
});
