/**
 * Bundle save/load throughput on 64 MiB of F32 weights (64 tensors of
 * 512 × 512), side by side with the platform's base64 on the same bytes.
 *
 * - `deno bench -A bench/bundle_bench.ts`: Deno.bench groups with the native
 *   base64 as baseline.
 * - `deno run -A bench/bundle_bench.ts [rounds]`: prints MB/s (of F32 bytes) and the
 *   ratio bundle / native for save and load, with and without SHA-256.
 */

import { loadAllTensors } from "../core/model.ts";
import { type Tensor, tensorFromF32 } from "../core/tensor.ts";
import { loadBundle, saveBundle } from "../formats/bundle/mod.ts";
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

// The baselines keep what they produce, as any real use of the output does
// (dropping it at once lets the collector skip work a real caller pays for).
function nativeEncode(): string[] {
  return tensors.map((t) => t.bytes.toBase64());
}

function nativeDecode(): Uint8Array[] {
  return b64.map((s) => Uint8Array.fromBase64(s));
}

/** SHA-256 of every tensor, all digests in flight at once (as the bundle does). */
function sha256All(): Promise<ArrayBuffer[]> {
  return Promise.all(
    tensors.map((t) =>
      crypto.subtle.digest("SHA-256", t.bytes as Uint8Array<ArrayBuffer>)
    ),
  );
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
  name: "saveBundle, checksums: false",
  group: "save",
  n: 10,
  warmup: 2,
  fn: async () => {
    await saveBundle(model, { checksums: false });
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
Deno.bench({
  name: "loadBundle, verify: false",
  group: "load",
  n: 10,
  warmup: 2,
  fn: async () => {
    await bundleLoad(false);
  },
});

/** Runs every path once per round, in turn, and keeps each one's best time. */
async function interleaved(
  paths: [string, () => unknown, number][],
  rounds: number,
): Promise<Map<string, number>> {
  const best = new Map<string, number>();
  for (let r = 0; r < rounds; r++) {
    for (const [name, fn, maxRounds] of paths) {
      if (r >= maxRounds) continue;
      const t0 = performance.now();
      await fn();
      const ms = performance.now() - t0;
      best.set(name, Math.min(best.get(name) ?? Infinity, ms));
    }
  }
  return best;
}

if (import.meta.main) {
  const rounds = Number(Deno.args[0] ?? 9);
  const mbps = (ms: number) => (BYTES / 1e6 / (ms / 1000)).toFixed(0);
  const dir = await Deno.makeTempDir();
  const path = `${dir}/bench.bundle.json`;
  await saveBundleFile(path, model);
  const t = await interleaved([
    ["enc", nativeEncode, rounds],
    ["save", () => saveBundle(model), rounds],
    ["saveNoSha", () => saveBundle(model, { checksums: false }), rounds],
    ["saveFile", () => saveBundleFile(path, model), 3],
    ["dec", nativeDecode, rounds],
    ["load", () => bundleLoad(true), rounds],
    ["loadNoSha", () => bundleLoad(false), rounds],
    ["loadFile", () => loadBundleFile(path), 3],
    ["sha", sha256All, rounds],
  ], rounds);
  const ms = (k: string) => t.get(k)!;
  const rows: [string, number, number | undefined][] = [
    ["native toBase64 (same bytes)", ms("enc"), undefined],
    ["saveBundle → string", ms("save"), ms("enc") / ms("save")],
    [
      "saveBundle, checksums: false",
      ms("saveNoSha"),
      ms("enc") / ms("saveNoSha"),
    ],
    [
      "saveBundleFile (atomic, fsync)",
      ms("saveFile"),
      ms("enc") / ms("saveFile"),
    ],
    ["native fromBase64 (same bytes)", ms("dec"), undefined],
    ["loadBundle(string) + tensors", ms("load"), ms("dec") / ms("load")],
    ["loadBundle, verify: false", ms("loadNoSha"), ms("dec") / ms("loadNoSha")],
    ["loadBundleFile + tensors", ms("loadFile"), ms("dec") / ms("loadFile")],
    ["SHA-256 alone (crypto.subtle)", ms("sha"), ms("dec") / ms("sha")],
  ];
  console.log(
    `64 MiB of F32 weights (${TENSORS} tensors ${ROWS}×${COLS}), bundle text ${
      (text.length / 2 ** 20).toFixed(1)
    } MiB; best of ${rounds} interleaved rounds (files: 3)`,
  );
  console.log(
    `${"path".padEnd(34)} ${"ms".padStart(8)} ${
      "MB/s".padStart(7)
    }  ratio to native`,
  );
  for (const [name, time, ratio] of rows) {
    console.log(
      `${name.padEnd(34)} ${time.toFixed(1).padStart(8)} ${
        mbps(time).padStart(7)
      }  ${
        ratio === undefined ? "(baseline)" : `${(ratio * 100).toFixed(0)}%`
      }`,
    );
  }
  await Deno.remove(dir, { recursive: true });
}
