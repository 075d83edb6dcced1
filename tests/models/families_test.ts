/**
 * Every supported family on tiny checkpoints against an independent float64
 * NumPy forward pass (tests/vectors/gen/llama_families.py →
 * tests/vectors/llama_families.json): GQA, llama3 rope scaling with tied
 * embeddings and a head size other than hidden / heads, attention and MLP
 * biases with linear rope scaling, Mistral's sliding window, Qwen2's q/k/v
 * biases. Each checkpoint is written as a Hugging Face folder and loaded
 * with `loadTransformer`; prefill logits at every position and one-token
 * decode steps through the KV cache must match. The same folders converted
 * to GGUF (q/k permuted, llama.cpp metadata, rope_freqs for llama3) and
 * back to Hugging Face files must give the same logits.
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { memoryTensorIndex } from "../../core/model.ts";
import { memorySource } from "../../core/sources.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import { convertHfToGguf, loadTransformer } from "../../io/transformer.ts";
import { saveSafetensors } from "../../io/safetensors.ts";
import {
  ggufToHf,
  type Transformer,
  transformerFromFiles,
} from "../../models/mod.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

interface Case {
  name: string;
  config: Record<string, unknown>;
  tensors: { name: string; shape: number[] }[];
  logits: number[][];
}

const vectors = JSON.parse(
  await Deno.readTextFile(
    join(REPO_ROOT, "tests/vectors/llama_families.json"),
  ),
) as { prompt: number[]; cases: Case[] };

/** The weight formula of the generator script (see its docstring). */
function weights(c: Case) {
  return c.tensors.map(({ name, shape }, t) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const s = Math.sin(0.0137 * i * i + 0.731 * i + 1.31 * t);
      v[i] = name.endsWith("norm.weight")
        ? 1 + 0.1 * s
        : name.endsWith(".bias")
        ? 0.1 * s
        : name.includes("embed_tokens")
        ? s
        : 0.25 * s;
    }
    return tensorFromF32(name, v, shape);
  });
}

/** Writes the case as a Hugging Face folder; the first case as shards with an index. */
async function writeFolder(c: Case): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: `llama-${c.name}-` });
  await Deno.writeTextFile(join(dir, "config.json"), JSON.stringify(c.config));
  const saved = await saveSafetensors(join(dir, "model.safetensors"), {
    models: [{
      id: c.name,
      metadata: {},
      tensors: memoryTensorIndex(weights(c)),
    }],
  }, c === vectors.cases[0] ? { maxShardSize: 40_000 } : {});
  if (c === vectors.cases[0]) assert(saved.paths.length > 2, "sharded");
  return dir;
}

function maxDiff(got: Float32Array, want: number[][], rows = want.length) {
  const v = want[0].length;
  let m = 0;
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < v; i++) {
      m = Math.max(m, Math.abs(got[r * v + i] - want[r][i]));
    }
  }
  return m;
}

/** Prefill at every position, then one token at a time through the cache. */
function check(model: Transformer, c: Case, tol: number, what: string) {
  const ids = vectors.prompt;
  const all = model.forward(ids, undefined, { allPositions: true });
  const pre = maxDiff(all, c.logits);
  assert(pre < tol, `${c.name} ${what}: prefill max abs ${pre}`);
  const state = model.createState();
  const v = c.logits[0].length;
  let step = 0;
  for (let t = 0; t < ids.length; t++) {
    const row = model.forward([ids[t]], state);
    step = Math.max(step, maxDiff(row, [c.logits[t]]));
    assertEquals(row.length, v);
  }
  assert(step < tol, `${c.name} ${what}: decode max abs ${step}`);
}

for (const c of vectors.cases) {
  Deno.test(`families: ${c.name} (HF folder, GGUF export, back to HF) matches NumPy`, async () => {
    const dir = await writeFolder(c);
    try {
      const hf = await loadTransformer(dir);
      assertEquals(hf.config.family, c.config.model_type);
      check(hf, c, 1e-4, "HF folder");

      const out = join(dir, "model.gguf");
      await convertHfToGguf(dir, out);
      const gguf = await loadTransformer(out);
      assertEquals(
        gguf.config.ropeStyle,
        c.config.model_type === "qwen2" ? "neox" : "interleaved",
      );
      assertEquals(
        gguf.config.ropeScaling?.rope_type,
        hf.config.ropeScaling?.rope_type,
      );
      assertEquals(gguf.config.slidingWindow, hf.config.slidingWindow);
      check(gguf, c, 1e-4, "GGUF");

      const back = await ggufToHf(
        await readGguf(memorySource(await Deno.readFile(out))),
      );
      check(await transformerFromFiles(back), c, 1e-4, "GGUF → HF");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
