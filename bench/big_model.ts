/**
 * A Llama model past 4 GiB: writes an 8B-shaped (Llama-3-8B hyper-parameters)
 * Q4_0 GGUF with random weights, streamed to disk by our own writer, loads
 * it (weights spread over several WebAssembly memories, see
 * kernels/wasm/_shards.ts), prefills a short prompt and decodes a few tokens
 * greedily. Prints the file size, the process's resident memory before and
 * after the load, the kernel memories used and the speeds.
 *
 *   deno run -A bench/big_model.ts [--out /tmp/llama8b-q4_0.gguf]
 *     [--layers 32] [--prompt 8] [--tokens 4] [--threads 1] [--keep] [--peer]
 *
 * `--peer` also decodes the same file with llama.cpp (node-llama-cpp, see
 * bench/_peer.ts), rounds alternating with ours, and prints the ratio.
 * `--layers` writes fewer blocks of the same width (for the memory overhead
 * at smaller sizes). The file is deleted afterwards unless `--keep`. The
 * script refuses to start when the machine's available memory is under
 * twice the file size.
 *
 * @module
 */

import { parseArgs } from "@std/cli";
import { GgufType, readGguf, writeGguf } from "../formats/gguf/mod.ts";
import type { GgufMetadataEntry } from "../formats/gguf/mod.ts";
import type { TensorIndex } from "../core/model.ts";
import type { Tensor } from "../core/tensor.ts";
import { fileSource, writeFileAtomic } from "../io/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { configureKernels, kernelInfo } from "../kernels/fast/mod.ts";
import { argmax, hparams, type Shape, vocabulary } from "./_decode.ts";
import { cpuLine, NlcPeer } from "./_peer.ts";

const args = parseArgs(Deno.args, {
  string: ["out", "layers", "prompt", "tokens", "threads"],
  boolean: ["keep", "peer"],
  default: {
    out: "/tmp/llama8b-q4_0.gguf",
    layers: "32",
    prompt: "8",
    tokens: "4",
    threads: "1",
  },
});

/** Llama-3-8B's hyper-parameters (context cut to 1024 to keep the KV cache small). */
const shape: Shape = {
  vocab: 128256,
  hidden: 4096,
  layers: Number(args.layers),
  heads: 32,
  kvHeads: 8,
  headDim: 128,
  intermediate: 14336,
  rmsEps: 1e-5,
  ropeTheta: 500000,
  context: 1024,
};

/** Q4_0 blocks of seeded random codes, scale so that values lie in ±1/√cols. */
function q4Tensor(name: string, rows: number, cols: number, seed: number) {
  const blocks = rows * cols / 32;
  const bytes = new Uint8Array(blocks * 18);
  const words = new Uint32Array(bytes.buffer, 0, Math.floor(bytes.length / 4));
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    words[i] = s >>> 0;
  }
  const d = new Uint16Array(
    new Float16Array([1 / Math.sqrt(cols) / 8]).buffer,
  )[0];
  for (let b = 0; b < blocks; b++) {
    bytes[b * 18] = d & 0xff;
    bytes[b * 18 + 1] = d >> 8;
  }
  return { name, dtype: "Q4_0", shape: [rows, cols], bytes } as Tensor;
}

function ones(name: string, n: number): Tensor {
  const v = new Float32Array(n).fill(1);
  return {
    name,
    dtype: "F32",
    shape: [n],
    bytes: new Uint8Array(v.buffer),
  };
}

/** The model's tensors, each made only when the writer asks for it. */
function lazyIndex(s: Shape): TensorIndex {
  const d = s.hidden, f = s.intermediate;
  const q = s.heads * s.headDim, kv = s.kvHeads * s.headDim;
  const spec = new Map<string, [number, number] | [number]>();
  spec.set("token_embd.weight", [s.vocab, d]);
  for (let n = 0; n < s.layers; n++) {
    const p = `blk.${n}.`;
    spec.set(p + "attn_norm.weight", [d]);
    spec.set(p + "attn_q.weight", [q, d]);
    spec.set(p + "attn_k.weight", [kv, d]);
    spec.set(p + "attn_v.weight", [kv, d]);
    spec.set(p + "attn_output.weight", [d, q]);
    spec.set(p + "ffn_norm.weight", [d]);
    spec.set(p + "ffn_gate.weight", [f, d]);
    spec.set(p + "ffn_up.weight", [f, d]);
    spec.set(p + "ffn_down.weight", [d, f]);
  }
  spec.set("output_norm.weight", [d]);
  spec.set("output.weight", [s.vocab, d]);
  const names = [...spec.keys()];
  const get = (name: string) => {
    const sh = spec.get(name);
    if (!sh) throw new RangeError(`No tensor named "${name}"`);
    return sh;
  };
  return {
    names: () => names,
    has: (name) => spec.has(name),
    info(name) {
      const sh = get(name);
      return {
        name,
        dtype: sh.length === 1 ? "F32" : "Q4_0",
        shape: [...sh],
        byteLength: sh.length === 1 ? sh[0] * 4 : sh[0] * sh[1] / 32 * 18,
      };
    },
    load(name) {
      const sh = get(name);
      return Promise.resolve(
        sh.length === 1
          ? ones(name, sh[0])
          : q4Tensor(name, sh[0], sh[1], names.indexOf(name) + 1),
      );
    },
  };
}

function availableBytes(): number {
  const m = /MemAvailable:\s+(\d+) kB/.exec(
    Deno.readTextFileSync("/proc/meminfo"),
  );
  return m ? Number(m[1]) * 1024 : Infinity;
}

const GiB = 2 ** 30;
const index = lazyIndex(shape);
const fileBytes = index.names().reduce(
  (n, t) => n + index.info(t).byteLength,
  0,
);
console.log(cpuLine());
console.log(
  `model: Llama-3-8B shape, ${shape.layers} layers, Q4_0 (norms F32): ${
    (fileBytes / GiB).toFixed(2)
  } GiB of tensors`,
);
const avail = availableBytes();
if (avail < 2 * fileBytes) {
  console.log(
    `skipped: ${(avail / GiB).toFixed(1)} GiB available, need ${
      (2 * fileBytes / GiB).toFixed(1)
    }`,
  );
  Deno.exit(0);
}

let t0 = performance.now();
const metadata: GgufMetadataEntry[] = [
  ...hparams(shape, "Llama-3-8B shape, random Q4_0 weights"),
  ...vocabulary(shape.vocab),
  { key: "general.file_type", type: GgufType.UINT32, value: 2 },
];
const written = await writeFileAtomic(
  args.out,
  writeGguf(
    { models: [{ id: "llama8b", metadata: {}, tensors: index }] },
    { metadata },
  ),
);
console.log(
  `wrote ${args.out}: ${(written / GiB).toFixed(2)} GiB in ${
    ((performance.now() - t0) / 1000).toFixed(1)
  } s`,
);

try {
  await configureKernels({ threads: Number(args.threads) });
  const rss0 = Deno.memoryUsage().rss;
  t0 = performance.now();
  const src = await fileSource(args.out);
  const model = await transformerFromGguf(await readGguf(src));
  src.close();
  const loadS = (performance.now() - t0) / 1000;
  const info = kernelInfo();
  const rss1 = Deno.memoryUsage().rss;
  console.log(
    `loaded in ${loadS.toFixed(1)} s: ${info.memories} WebAssembly memories, ${
      (info.memoryBytes / GiB).toFixed(2)
    } GiB of kernel memory; process RSS ${(rss0 / GiB).toFixed(2)} → ${
      (rss1 / GiB).toFixed(2)
    } GiB (+${((rss1 - rss0) / GiB).toFixed(2)} GiB for ${
      (written / GiB).toFixed(2)
    } GiB of file, ×${((rss1 - rss0) / written).toFixed(3)})`,
  );
  const st = model.createState();
  const prompt = Array.from(
    { length: Number(args.prompt) },
    (_, i) => 300 + i * 7,
  );
  t0 = performance.now();
  let logits = model.forward(prompt, st);
  const prefillS = (performance.now() - t0) / 1000;
  const ids: number[] = [];
  const times: number[] = [];
  for (let i = 0; i < Number(args.tokens); i++) {
    if (!logits.every(Number.isFinite)) {
      throw new RangeError(`logits not finite after ${i} decoded tokens`);
    }
    const id = argmax(logits);
    ids.push(id);
    t0 = performance.now();
    logits = model.forward([id], st);
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  const med = times[times.length >> 1];
  console.log(
    `prefill ${prompt.length} tokens: ${prefillS.toFixed(2)} s (${
      (prompt.length / prefillS).toFixed(2)
    } tok/s); decode ${ids.length} tokens, median ${med.toFixed(2)} s/token (${
      (1 / med).toFixed(2)
    } tok/s); greedy ids ${ids.join(" ")}; RSS now ${
      (Deno.memoryUsage().rss / GiB).toFixed(2)
    } GiB, ${kernelInfo().memories} memories`,
  );
  if (args.peer) {
    const peer = await NlcPeer.start();
    if (!peer) console.log("llama.cpp: node-llama-cpp not found, skipped");
    else {
      await peer.load(args.out, Number(args.threads), 256, 64);
      console.log(`llama.cpp CPU variant: ${peer.cpuVariant() || "?"}`);
      const n = ids.length;
      const oursDecode = () => {
        const s2 = model.createState();
        let l = model.forward(prompt.slice(0, 4), s2);
        const t = performance.now();
        for (let i = 0; i < n; i++) l = model.forward([argmax(l)], s2);
        return performance.now() - t;
      };
      await peer.decode(prompt.slice(0, 4), n); // warm
      const ratios: number[] = [], a: number[] = [], b: number[] = [];
      for (let r = 0; r < 3; r++) {
        const first = r % 2 === 0;
        let x = 0, y = 0;
        if (first) x = oursDecode();
        y = (await peer.decode(prompt.slice(0, 4), n)).ms;
        if (!first) x = oursDecode();
        a.push(n * 1000 / x);
        b.push(n * 1000 / y);
        ratios.push(y / x);
      }
      await peer.close();
      const mid = (v: number[]) => v.slice().sort((p, q) => p - q)[1];
      console.log(
        `decode ${n} tokens after 4, 3 alternating rounds: ours ${
          mid(a).toFixed(2)
        } tok/s, llama.cpp ${mid(b).toFixed(2)} tok/s, ratio ${
          mid(ratios).toFixed(2)
        }× (rounds ${ratios.map((r) => r.toFixed(2)).join(" ")})`,
      );
    }
  }
} finally {
  if (!args.keep) await Deno.remove(args.out).catch(() => {});
}
Deno.exit(0);
