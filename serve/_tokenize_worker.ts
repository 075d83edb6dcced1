// The tokenizer worker (see serve/_offload_encode.ts): builds a model's
// tokenizer from the same files, by the same code, as the server's loader
// (io/transformer.ts), so its ids are those the server would compute, and
// encodes long texts here, off the server's event loop.

import { join } from "@std/path";
import { createTokenizer } from "../tokenizers/mod.ts";
import type { EncodeOptions, Tokenizer } from "../tokenizers/tokenizer.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { fileSource } from "../io/file.ts";
import { openHfCheckpoint } from "../io/transformer.ts";

/** A request: encode `text` with the tokenizer of the model at `path`. */
export interface EncodeRequest {
  id: number;
  path: string;
  text: string;
  options?: EncodeOptions;
}

const tokenizers = new Map<string, Promise<Tokenizer>>();

async function build(path: string): Promise<Tokenizer> {
  if ((await Deno.stat(path)).isDirectory) {
    const names: string[] = [];
    for await (const e of Deno.readDir(path)) if (e.isFile) names.push(e.name);
    if (!names.includes("config.json")) {
      const ggufs = names.filter((n) => n.toLowerCase().endsWith(".gguf"));
      if (ggufs.length === 1) return await build(join(path, ggufs[0]));
      throw new TypeError(`Cannot build the tokenizer of ${path}`);
    }
    const ckpt = await openHfCheckpoint(path);
    try {
      if (!ckpt.tokenizer) {
        throw new TypeError(`${path} has no tokenizer.json`);
      }
      return createTokenizer(ckpt.tokenizer, {
        config: ckpt.tokenizerConfig,
        generationConfig: ckpt.generationConfig,
      });
    } finally {
      ckpt.close();
    }
  }
  const src = await fileSource(path);
  try {
    const file = await readGguf(src);
    return createTokenizer(file.models[0].metadata, { name: "GGUF metadata" });
  } finally {
    src.close();
  }
}

// The worker's global scope, typed here rather than by a `deno.worker` lib
// reference (that one applies to the whole type-checked program, and turns
// the web page's DOM events into plain Events).
const scope = self as unknown as {
  onmessage: ((e: MessageEvent<EncodeRequest>) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
};

scope.onmessage = async (e: MessageEvent<EncodeRequest>) => {
  const { id, path, text, options } = e.data;
  try {
    let tok = tokenizers.get(path);
    if (!tok) {
      tok = build(path);
      tokenizers.set(path, tok);
    }
    const ids = Int32Array.from((await tok).encode(text, options));
    scope.postMessage({ id, ids }, [ids.buffer]);
  } catch (err) {
    const x = err as Error;
    scope.postMessage({
      id,
      error: { name: x?.name ?? "Error", message: x?.message ?? String(err) },
    });
  }
};
