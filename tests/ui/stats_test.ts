/**
 * The page's statistics and quantization preview (ui/_stats.ts,
 * ui/_quant.ts), run in Deno against NumPy, PyTorch and llama.cpp numbers
 * (tests/vectors/ui.json, written by tests/vectors/gen/ui.py from
 * the shared fixtures).
 */

import { assert, assertAlmostEquals, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { type ModelFile, toFloat32 } from "@modelhost/modelhost/core";
import { readGguf } from "@modelhost/modelhost/formats/gguf";
import { readSafetensors } from "@modelhost/modelhost/formats/safetensors";
import { fileSource } from "@modelhost/modelhost/io";
import { heatmapSlice, tensorStats } from "../../ui/_stats.ts";
import {
  convertModel,
  previewQuantization,
  type PreviewType,
} from "../../ui/_quant.ts";
import { conformanceTest, fixture, REPO_ROOT } from "../_helpers/fixtures.ts";

interface StatsRef {
  count: number;
  min: number;
  max: number;
  mean: number;
  std: number;
  zeros: number;
  nan: number;
  inf: number;
  histogram: number[];
}
interface ErrRef {
  rmse: number;
  cosine: number;
  max: number;
  type?: string;
}
interface Vectors {
  bins: number;
  stats: Record<string, Record<string, StatsRef>>;
  quant: {
    file: string;
    types: Record<
      string,
      { tensor_bytes?: number; tensors: Record<string, ErrRef> }
    >;
  };
}

const VECTORS: Vectors = JSON.parse(
  Deno.readTextFileSync(join(REPO_ROOT, "tests/vectors/ui.json")),
);

async function open(rel: string): Promise<ModelFile> {
  const src = await fileSource(fixture(rel));
  return rel.endsWith(".gguf") ? readGguf(src) : readSafetensors(src);
}

/** Relative closeness for sums over many values (double vs double, different order). */
function close(actual: number, expected: number, what: string, rel = 1e-9) {
  assertAlmostEquals(
    actual,
    expected,
    Math.max(1e-12, Math.abs(expected) * rel),
    what,
  );
}

conformanceTest(
  "ui stats: min/max/mean/std/zeros and the 64-bin histogram equal NumPy's",
  async () => {
    for (const [rel, tensors] of Object.entries(VECTORS.stats)) {
      const file = await open(rel);
      for (const [name, ref] of Object.entries(tensors)) {
        const s = tensorStats(
          toFloat32(await file.models[0].tensors.load(name)),
          { bins: VECTORS.bins },
        );
        const what = `${rel} ${name}`;
        assertEquals(
          [s.count, s.min, s.max, s.zeros, s.nan, s.inf],
          [ref.count, ref.min, ref.max, ref.zeros, ref.nan, ref.inf],
          what,
        );
        close(s.mean, ref.mean, `${what} mean`);
        close(s.std, ref.std, `${what} std`);
        assertEquals(s.histogram, ref.histogram, `${what} histogram`);
      }
    }
  },
);

Deno.test("ui stats: NaN and Inf are counted apart and left out of the numbers", () => {
  const s = tensorStats(new Float32Array([NaN, Infinity, -Infinity, 2, 2]));
  assertEquals([s.nan, s.inf, s.min, s.max, s.mean, s.std], [1, 2, 2, 2, 2, 0]);
  // NumPy widens a zero-width range to [x - 0.5, x + 0.5]: both land in the middle bin.
  assertEquals(s.histogram[32], 2);
  const none = tensorStats(new Float32Array([NaN]));
  assert(Number.isNaN(none.mean) && none.histogram.every((c) => c === 0));
});

Deno.test("ui heatmap: averages blocks and picks the slice of the leading dims", () => {
  const v = Float32Array.from({ length: 2 * 3 * 4 }, (_, i) => i);
  const h = heatmapSlice(v, [2, 3, 4], { slice: 1, maxSide: 2 });
  // slice 1 is rows 12..23 as 3×4; cells of 2×2 values (last row alone).
  assertEquals([h.rows, h.cols, h.slices], [2, 2, 2]);
  assertEquals([...h.values], [
    (12 + 13 + 16 + 17) / 4,
    (14 + 15 + 18 + 19) / 4,
    20.5,
    22.5,
  ]);
});

const PREVIEWED: PreviewType[] = [
  "Q8_0",
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q2_K",
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  "F16",
  "BF16",
  "F8_E4M3",
  "F8_E5M2",
  "I8",
];

conformanceTest(
  "ui quantization preview: per-tensor errors equal llama-quantize (gguf-py) and PyTorch/NumPy casts",
  async () => {
    const file = await open(VECTORS.quant.file);
    for (const type of PREVIEWED) {
      const ref = VECTORS.quant.types[type];
      const p = await previewQuantization(file, type);
      assertEquals(p.rows.length, Object.keys(ref.tensors).length, type);
      for (const r of p.rows) {
        const e = ref.tensors[r.name];
        const what = `${type} ${r.name}`;
        if (e.type) assertEquals(r.to, e.type, what);
        close(r.rmse, e.rmse, `${what} rmse`, 1e-6);
        close(r.maxError, e.max, `${what} max`, 1e-6);
        close(r.cosine, e.cosine, `${what} cosine`, 1e-9);
      }
      if (ref.tensor_bytes !== undefined) {
        // llama-quantize's tensor data (before alignment padding) is what we would write.
        assertEquals(p.tensorBytes, ref.tensor_bytes, type);
      }
    }
  },
);

conformanceTest(
  "ui quantization preview: the file size it states is the size of the converted file",
  async () => {
    const file = await open(VECTORS.quant.file);
    for (const type of ["Q4_K", "F16", "I8"] as PreviewType[]) {
      const p = await previewQuantization(file, type);
      const out = await convertModel(file, type, "synthetic");
      assertEquals(out.bytes.byteLength, p.fileBytes, type);
      const back = out.fileName.endsWith(".gguf")
        ? await readGguf({
          name: out.fileName,
          size: out.bytes.byteLength,
          read: (o, l) => Promise.resolve(out.bytes.subarray(o, o + l)),
        })
        : undefined;
      if (back) {
        assertEquals(
          back.models[0].tensors.info("blk.0.attn_q.weight").dtype,
          type,
        );
      }
    }
  },
);
