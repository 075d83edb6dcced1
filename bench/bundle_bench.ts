/**
 * Bundle save/load throughput on 64 MiB of F32 weights (64 tensors of
 * 512 × 512), side by side with the platform's base64 on the same bytes.
 *
 * - `deno bench -A bench/bundle_bench.ts`: Deno.bench groups with the native
 *   base64 as baseline.
 * - `deno run -A bench/bundle_bench.ts`: prints MB/s (of F32 bytes) and the
 *   ratio bundle / native for save and load, with and without SHA-256.
 */

import { loadAllTensors } from "../core/model.ts";
import { type Tensor, tensorFromF32 } from "../core/tensor.ts";
import { loadBundle, saveBundle } from "../formats/bundle.ts";
import { loadBundleFile, saveBundleFile } from "../io/bundle.ts";

const TENSORS = 64;
const ROWS = 512, COLS = 512;
const BYTES = TENSORS * ROWS * COLS * 4;

function makeTensors(): Tensor[] {
  const out: Tensor[] = [];
  let s = 1;
  for (let t = 0; t < TENSORS; t++) {
    const v = new Float32Array(ROWS * COLS);
    for (let i = 0; i < v.length; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      v[i] = (s / 4294967296 - 0.5) * 0.1;
    }
    out.push(tensorFromF32(`layers.${t}.weight`, v, [ROWS, COLS]));
  }
  return out;
}

const tensors = makeTensors();
const model = [{ id: "bench", tensors }];
const text = await saveBundle(model);
const b64 = tensors.map((t) => t.bytes.toBase64());

function nativeEncode(): number {
  let n = 0;
  for (const t of tensors) n += t.bytes.toBase64().length;
  return n;
}

function nativeDecode(): number {
  let n = 0;
  for (const s of b64) n += Uint8Array.fromBase64(s).length;
  return n;
}

async function bundleLoad(verify = true): Promise<number> {
  const file = await loadBundle(text, undefined, { verify });
  return (await loadAllTensors(file.models[0].tensors)).size;
}

Deno.bench({
  name: "native toBase64, 64 MiB",
  group: "save",
  baseline: true,
  n: 10,
  warmup: 2,
  fn: () => {
    nativeEncode();
  },
});
Deno.bench({
  name: "saveBundle, 64 MiB F32",
  group: "save",
  n: 10,
  warmup: 2,
  fn: async () => {
    await saveBundle(model);
  },
});
Deno.bench({
  name: "native fromBase64, 64 MiB",
  group: "load",
  baseline: true,
  n: 10,
  warmup: 2,
  fn: () => {
    nativeDecode();
  },
});
Deno.bench({
  name: "loadBundle, 64 MiB F32",
  group: "load",
  n: 10,
  warmup: 2,
  fn: async () => {
    await bundleLoad();
  },
});

async function best(fn: () => unknown, runs = 7): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

if (import.meta.main) {
  const mbps = (ms: number) => (BYTES / 1e6 / (ms / 1000)).toFixed(0);
  const dir = await Deno.makeTempDir();
  const path = `${dir}/bench.bundle.json`;
  await saveBundleFile(path, model);
  const rows: [string, number, number | undefined][] = [];
  const enc = await best(nativeEncode);
  const dec = await best(nativeDecode);
  const save = await best(() => saveBundle(model));
  const saveNoSha = await best(() => saveBundle(model, { checksums: false }));
  const load = await best(() => bundleLoad(true));
  const loadNoSha = await best(() => bundleLoad(false));
  const saveFile = await best(() => saveBundleFile(path, model), 3);
  const loadFile = await best(() => loadBundleFile(path), 3);
  rows.push(["native toBase64 (same bytes)", enc, undefined]);
  rows.push(["saveBundle → string", save, enc / save]);
  rows.push(["saveBundle, checksums: false", saveNoSha, enc / saveNoSha]);
  rows.push(["saveBundleFile (atomic write)", saveFile, enc / saveFile]);
  rows.push(["native fromBase64 (same bytes)", dec, undefined]);
  rows.push(["loadBundle(string) + tensors", load, dec / load]);
  rows.push(["loadBundle, verify: false", loadNoSha, dec / loadNoSha]);
  rows.push(["loadBundleFile + tensors", loadFile, dec / loadFile]);
  console.log(
    `64 MiB of F32 weights (${TENSORS} tensors ${ROWS}×${COLS}), bundle text ${
      (text.length / 2 ** 20).toFixed(1)
    } MiB; best of 7 (files: 3)`,
  );
  console.log(
    `${"path".padEnd(34)} ${"ms".padStart(8)} ${
      "MB/s".padStart(7)
    }  ratio to native`,
  );
  for (const [name, ms, ratio] of rows) {
    console.log(
      `${name.padEnd(34)} ${ms.toFixed(1).padStart(8)} ${
        mbps(ms).padStart(7)
      }  ${
        ratio === undefined ? "(baseline)" : `${(ratio * 100).toFixed(0)}%`
      }`,
    );
  }
  await Deno.remove(dir, { recursive: true });
}
