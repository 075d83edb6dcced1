// The tokenizer worker (see serve/_offload_encode.ts): builds a model's
// tokenizer from the same files, by the same code, as the server's loader
// (io/transformer.ts), so its ids are those the server would compute, and
// encodes long texts here, off the server's event loop.

/// <reference lib="deno.worker" />

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

self.onmessage = async (e: MessageEvent<EncodeRequest>) => {
  const { id, path, text, options } = e.data;
  try {
    let tok = tokenizers.get(path);
    if (!tok) {
      tok = build(path);
      tokenizers.set(path, tok);
    }
    const ids = Int32Array.from((await tok).encode(text, options));
    self.postMessage({ id, ids }, [ids.buffer]);
  } catch (err) {
    const x = err as Error;
    self.postMessage({
      id,
      error: { name: x?.name ?? "Error", message: x?.message ?? String(err) },
    });
  }
};
