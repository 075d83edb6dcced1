/**
 * Inputs shared by the GGUF benchmarks: the largest vocab GGUF among the
 * fixtures (or, without fixtures, a synthetic one of the same shape written
 * by our writer), an in-memory `fetch` serving HTTP ranges of it (how
 * `@huggingface/gguf` reads), and deterministic weights.
 */

import { FIXTURES } from "../tests/_helpers/fixtures.ts";
import { writeGgufBytes } from "../formats/gguf/mod.ts";
import { memoryTensorIndex } from "../core/model.ts";

/** The vocab file: name and bytes. */
export async function vocabGguf(): Promise<
  { name: string; bytes: Uint8Array<ArrayBuffer> }
> {
  if (FIXTURES) {
    const dir = `${FIXTURES}/gguf/llama.cpp-vocab`;
    let best = "";
    let size = 0;
    for (const e of Deno.readDirSync(dir)) {
      if (!e.name.endsWith(".gguf")) continue;
      const s = Deno.statSync(`${dir}/${e.name}`).size;
      if (s > size) {
        size = s;
        best = e.name;
      }
    }
    return { name: best, bytes: await Deno.readFile(`${dir}/${best}`) };
  }
  // 102400 tokens with merges, scores and types, like deepseek-llm's vocab.
  const n = 102400;
  const tokens = Array.from({ length: n }, (_, i) => `tok${i.toString(36)}Ġ`);
  const merges = Array.from({ length: n - 256 }, (_, i) => `a${i % 97} b${i}`);
  const bytes = await writeGgufBytes({
    models: [{
      id: "vocab",
      metadata: {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": new Int32Array(n),
        "tokenizer.ggml.merges": merges,
      },
      tensors: memoryTensorIndex([]),
    }],
  });
  return { name: "synthetic-vocab.gguf", bytes: new Uint8Array(bytes) };
}

/** A `fetch` that answers `Range` requests from memory. */
export function memoryFetch(bytes: Uint8Array<ArrayBuffer>): typeof fetch {
  return (_input, init) => {
    const range = new Headers(init?.headers).get("Range");
    const m = range?.match(/bytes=(\d+)-(\d+)/);
    const a = m ? Number(m[1]) : 0;
    const b = m ? Math.min(Number(m[2]) + 1, bytes.length) : bytes.length;
    return Promise.resolve(
      new Response(bytes.slice(a, b), { status: m ? 206 : 200 }),
    );
  };
}

/** `n` weights `0.1 + 2cos(i)` (the reference/quant generator). */
export function weights(n: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => 0.1 + 2 * Math.cos(i));
}
