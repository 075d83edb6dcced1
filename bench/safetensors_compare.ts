/**
 * SafeTensors side-by-side measurements, one run, ratios printed:
 *
 * 1. open + read every tensor of a 512 MiB F32 file vs `Deno.readFile` of
 *    the same file (goal: ratio ≤ 1.1);
 * 2. F16 → F32 widening throughput (goal: ≥ 1 GB/s);
 * 3. open of the same file over HTTP ranges from a loopback server: bytes
 *    transferred vs the file size;
 * 4. streaming write of the 512 MiB file (one 16 MiB tensor in memory at a time).
 *
 * The file is generated in a temporary folder and deleted afterwards.
 *
 *     deno run -A bench/safetensors_compare.ts [--mib 512] [--runs 5]
 */

import { parseArgs } from "@std/cli";
import type { TensorIndex, TensorInfo } from "../core/model.ts";
import { httpSource } from "../core/sources.ts";
import { toFloat32 } from "../core/tensor.ts";
import { readSafetensors } from "../formats/safetensors/mod.ts";
import { openSafetensors, saveSafetensors } from "../io/safetensors.ts";

const args = parseArgs(Deno.args, { string: ["mib", "runs"] });
const MIB = Number(args.mib ?? 512);
const RUNS = Number(args.runs ?? 5);
const SIDE = 2048; // each tensor is [2048, 2048] F32 = 16 MiB
const TENSOR_BYTES = SIDE * SIDE * 4;
const COUNT = Math.max(1, Math.round((MIB * 2 ** 20) / TENSOR_BYTES));

/** A lazy index that makes each tensor's values only when it is loaded. */
function generatedIndex(): TensorIndex {
  const infos: TensorInfo[] = Array.from({ length: COUNT }, (_, i) => ({
    name: `layers.${String(i).padStart(3, "0")}.weight`,
    dtype: "F32",
    shape: [SIDE, SIDE],
    byteLength: TENSOR_BYTES,
  }));
  const byName = new Map(infos.map((x, i) => [x.name, i]));
  return {
    names: () => infos.map((x) => x.name),
    has: (n) => byName.has(n),
    info: (n) => ({ ...infos[byName.get(n)!] }),
    load(n) {
      const k = byName.get(n)!;
      const v = new Float32Array(SIDE * SIDE);
      for (let j = 0; j < v.length; j++) v[j] = ((j * 7 + k) % 1000) * 0.001;
      return Promise.resolve({
        name: n,
        dtype: "F32",
        shape: [SIDE, SIDE],
        bytes: new Uint8Array(v.buffer),
      });
    },
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const fmt = (ms: number): string => `${ms.toFixed(1)} ms`;
const gbps = (bytes: number, ms: number): string =>
  `${(bytes / 1e9 / (ms / 1000)).toFixed(2)} GB/s`;

const dir = await Deno.makeTempDir({ prefix: "modelhost-st-bench-" });
const path = `${dir}/model.safetensors`;
try {
  // 4. streaming write (also produces the file for the rest).
  let t0 = performance.now();
  const saved = await saveSafetensors(path, {
    models: [{ id: "bench", metadata: {}, tensors: generatedIndex() }],
  });
  const writeMs = performance.now() - t0;
  const size = saved.bytes;

  // 1. read every tensor vs Deno.readFile, alternating, after one warm-up of each.
  const readAll = async (): Promise<number> => {
    const file = await openSafetensors(path);
    let n = 0;
    const idx = file.models[0].tensors;
    for (const name of idx.names()) {
      n += (await idx.load(name)).bytes.byteLength;
    }
    file.close();
    return n;
  };
  /** The plainest whole-file read: one preallocated buffer, read to the end. */
  const readWhole = async (): Promise<number> => {
    const f = await Deno.open(path);
    const out = new Uint8Array((await f.stat()).size);
    let got = 0;
    while (got < out.length) {
      got += (await f.read(out.subarray(got))) ?? out.length;
    }
    f.close();
    return out.length;
  };
  await Deno.readFile(path);
  await readAll();
  await readWhole();
  const base: number[] = [], ours: number[] = [], whole: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    t0 = performance.now();
    const b = await Deno.readFile(path);
    base.push(performance.now() - t0);
    if (b.byteLength !== size) throw new Error("short read");
    t0 = performance.now();
    const n = await readAll();
    ours.push(performance.now() - t0);
    if (n !== COUNT * TENSOR_BYTES) throw new Error("short tensors");
    t0 = performance.now();
    await readWhole();
    whole.push(performance.now() - t0);
  }

  // 2. F16 -> F32 widening of 64 Mi elements.
  const elements = 64 * 2 ** 20;
  const h = new Uint16Array(elements);
  for (let i = 0; i < elements; i++) h[i] = (i * 2654435761) & 0x7bff; // finite halves
  const f16 = {
    name: "h",
    dtype: "F16" as const,
    shape: [elements],
    bytes: new Uint8Array(h.buffer),
  };
  toFloat32(f16); // warm-up
  const widen: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    t0 = performance.now();
    toFloat32(f16);
    widen.push(performance.now() - t0);
  }

  // 3. HTTP-range open from a loopback server.
  const file = await Deno.open(path);
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen() {},
  }, async (req) => {
    if (req.method === "HEAD") {
      return new Response(null, {
        headers: { "content-length": String(size), "accept-ranges": "bytes" },
      });
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.get("range") ?? "");
    if (!m) return new Response(null, { status: 416 });
    const start = Number(m[1]), end = Number(m[2]);
    const body = new Uint8Array(end - start + 1);
    await file.seek(start, Deno.SeekMode.Start);
    for (let got = 0; got < body.length;) {
      got += (await file.read(body.subarray(got))) ?? body.length;
    }
    return new Response(body, {
      status: 206,
      headers: { "content-range": `bytes ${start}-${end}/${size}` },
    });
  });
  t0 = performance.now();
  const src = await httpSource(
    `http://127.0.0.1:${server.addr.port}/model.safetensors`,
  );
  const remote = await readSafetensors(src);
  const httpOpenMs = performance.now() - t0;
  const headerBytes = src.bytesTransferred;
  const headerRequests = src.requests;
  t0 = performance.now();
  await remote.models[0].tensors.load(
    remote.models[0].tensors.names()[COUNT - 1],
  );
  const httpTensorMs = performance.now() - t0;
  ac.abort();
  await server.finished;
  file.close();

  const b = median(base),
    o = median(ours),
    w = median(widen),
    p = median(whole);
  console.log(
    `SafeTensors, ${COUNT} F32 tensors [${SIDE}, ${SIDE}], file ${size} bytes (${
      (size / 2 ** 20).toFixed(1)
    } MiB); ${RUNS} runs, medians`,
  );
  console.log(`| measurement | ours | baseline | ratio / throughput |`);
  console.log(`|---|---|---|---|`);
  console.log(
    `| open + read every tensor vs Deno.readFile | ${fmt(o)} | ${fmt(b)} | ${
      (o / b).toFixed(3)
    }x (goal <= 1.1x) |`,
  );
  console.log(
    `| open + read every tensor vs one preallocated Deno.FsFile read | ${
      fmt(o)
    } | ${fmt(p)} | ${(o / p).toFixed(3)}x |`,
  );
  console.log(
    `| F16 -> F32 widening, ${elements} elements | ${fmt(w)} | - | ${
      gbps(elements * 2, w)
    } read, ${gbps(elements * 4, w)} written, ${
      (elements / 1e6 / (w / 1000)).toFixed(0)
    } M elements/s (goal >= 1 GB/s) |`,
  );
  console.log(
    `| HTTP-range open (header only) | ${
      fmt(httpOpenMs)
    }, ${headerBytes} bytes in ${headerRequests} requests | file ${size} bytes | ${
      (headerBytes / size * 100).toPrecision(3)
    } % of the file |`,
  );
  console.log(
    `| HTTP-range load of one 16 MiB tensor | ${fmt(httpTensorMs)} | - | ${
      gbps(TENSOR_BYTES, httpTensorMs)
    } |`,
  );
  console.log(
    `| streaming write (saveSafetensors: generate, write, fsync, rename) | ${
      fmt(writeMs)
    } | - | ${gbps(size, writeMs)} |`,
  );
  console.log(
    `raw runs (ms): readFile ${
      base.map((x) => x.toFixed(0)).join(", ")
    }; one read ${whole.map((x) => x.toFixed(0)).join(", ")}; ours ${
      ours.map((x) => x.toFixed(0)).join(", ")
    }; widen ${widen.map((x) => x.toFixed(0)).join(", ")}`,
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}
