/**
 * Llama-family models on the local file system (Deno): load a Hugging Face
 * folder or a GGUF file as a runnable {@link Transformer}, open a folder as
 * {@link HfModelFiles}, and convert a folder to a GGUF file llama.cpp runs.
 *
 * @example
 * ```ts ignore
 * import { loadTransformer } from "@modelhost/modelhost/io";
 * import { generateText } from "@modelhost/modelhost/models";
 * const model = await loadTransformer("SmolLM2-135M-Instruct"); // or "model.gguf"
 * const r = await generateText(model, [{ role: "user", content: "Hi!" }], { maxTokens: 32 });
 * console.log(r.text);
 * ```
 *
 * @module
 */

import { checkJsonDepth } from "../core/_json_depth.ts";
import { join } from "@std/path";
import {
  type GgufWriteOptions,
  readGguf,
  writeGguf,
} from "../formats/gguf/mod.ts";
import type { GgufQuantType, GgufTensorPlan } from "../formats/gguf/mod.ts";
import {
  ggufToHf,
  type HfModelFiles,
  hfToGguf,
  type HfToGgufOptions,
  type Transformer,
  transformerFromFiles,
  transformerFromGguf,
  type TransformerOptions,
} from "../models/mod.ts";
import { readGgufForLoading } from "./_gguf_file.ts";
import { fileSource, writeFileAtomic } from "./file.ts";
import { openSafetensors, saveSafetensors } from "./safetensors.ts";

/** A Hugging Face folder opened: files parsed, weights lazily readable. */
export interface OpenedHfCheckpoint extends HfModelFiles {
  /** Closes the weight files; later tensor loads fail. */
  close(): void;
}

async function readJson(path: string, required: boolean): Promise<unknown> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (!required && e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new SyntaxError(`Cannot parse ${path}: ${(e as Error).message}`);
  }
  checkJsonDepth(v, path);
  return v;
}

/**
 * The chat templates a Hugging Face folder keeps in files, as transformers
 * reads them: `chat_template.jinja` (the default template) and
 * `additional_chat_templates/NAME.jinja` (named ones); otherwise the
 * `chat_template` of `chat_template.json`. Undefined when there are none.
 *
 * @param dir The folder.
 * @returns `tokenizer_config.json`'s `chat_template` form: a string, or a
 * list of `{ name, template }`.
 *
 * @example
 * ```ts ignore
 * import { readChatTemplateFiles } from "@modelhost/modelhost/io";
 * const tpl = await readChatTemplateFiles("Qwen3-0.6B");
 * ```
 */
export async function readChatTemplateFiles(
  dir: string,
): Promise<string | { name: string; template: string }[] | undefined> {
  const read = async (path: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  };
  const main = await read(join(dir, "chat_template.jinja"));
  const named: { name: string; template: string }[] = [];
  try {
    for await (
      const e of Deno.readDir(join(dir, "additional_chat_templates"))
    ) {
      if (e.isFile && e.name.endsWith(".jinja")) {
        const template = await read(
          join(dir, "additional_chat_templates", e.name),
        );
        if (template !== undefined) {
          named.push({ name: e.name.slice(0, -".jinja".length), template });
        }
      }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (main !== undefined) {
    return named.length === 0
      ? main
      : [{ name: "default", template: main }, ...named];
  }
  const json = await readJson(join(dir, "chat_template.json"), false) as
    | { chat_template?: unknown }
    | undefined;
  if (typeof json?.chat_template === "string") return json.chat_template;
  return named.length > 0 ? named : undefined;
}

/**
 * Opens a Hugging Face folder: `config.json` (required), the weights
 * (`model.safetensors`, or shards with `model.safetensors.index.json`),
 * and `tokenizer.json`, `tokenizer_config.json`, `generation_config.json`
 * when present, with the chat template of `chat_template.jinja` (see
 * {@link readChatTemplateFiles}) in place of the config's. Weights are read
 * when loaded.
 *
 * @param dir The folder.
 * @returns The parsed files; call `close()` when done.
 * @throws {Deno.errors.NotFound} When `config.json` or the weights are missing.
 * @throws {SyntaxError} When a JSON file does not parse.
 *
 * @example
 * ```ts ignore
 * import { openHfCheckpoint } from "@modelhost/modelhost/io";
 * const ckpt = await openHfCheckpoint("TinyLlama-1.1B-Chat-v1.0");
 * console.log(ckpt.config.model_type, ckpt.model.models[0].tensors.names().length);
 * ckpt.close();
 * ```
 */
export async function openHfCheckpoint(
  dir: string,
): Promise<OpenedHfCheckpoint> {
  const config = await readJson(join(dir, "config.json"), true);
  const tokenizer = await readJson(join(dir, "tokenizer.json"), false);
  let tokenizerConfig = await readJson(
    join(dir, "tokenizer_config.json"),
    false,
  ) as Record<string, unknown> | undefined;
  // chat_template.jinja (and named templates) win over tokenizer_config's
  const chatTemplate = await readChatTemplateFiles(dir);
  if (chatTemplate !== undefined) {
    tokenizerConfig = { ...tokenizerConfig, chat_template: chatTemplate };
  }
  const generationConfig = await readJson(
    join(dir, "generation_config.json"),
    false,
  );
  const model = await openSafetensors(dir);
  return {
    config: config as HfModelFiles["config"],
    model,
    ...(tokenizer ? { tokenizer: tokenizer as HfModelFiles["tokenizer"] } : {}),
    ...(tokenizerConfig
      ? {
        tokenizerConfig: tokenizerConfig as HfModelFiles["tokenizerConfig"],
      }
      : {}),
    ...(generationConfig
      ? {
        generationConfig: generationConfig as HfModelFiles["generationConfig"],
      }
      : {}),
    close: () => model.close(),
  };
}

async function isDirectory(path: string): Promise<boolean> {
  return (await Deno.stat(path)).isDirectory;
}

/**
 * Loads a Llama-family model from disk: a Hugging Face folder (see
 * {@link openHfCheckpoint}), a GGUF file, or a folder holding one GGUF
 * file and no `config.json`. Weights are read into memory in their stored
 * dtypes and the files are closed.
 *
 * @param path A folder or a `.gguf` file.
 * @param options Registry, name, tokenizer override.
 * @returns The model.
 * @throws {TypeError} For an unsupported architecture (the message lists the
 * supported families) or a folder that is no checkpoint.
 *
 * @example
 * ```ts ignore
 * import { loadTransformer } from "@modelhost/modelhost/io";
 * const model = await loadTransformer("stories260K.gguf");
 * console.log(model.memory());
 * ```
 */
export async function loadTransformer(
  path: string,
  options: TransformerOptions = {},
): Promise<Transformer> {
  if (await isDirectory(path)) {
    const names: string[] = [];
    for await (const e of Deno.readDir(path)) if (e.isFile) names.push(e.name);
    if (!names.includes("config.json")) {
      const ggufs = names.filter((n) => n.toLowerCase().endsWith(".gguf"));
      if (ggufs.length === 1) {
        return loadTransformer(join(path, ggufs[0]), options);
      }
      throw new TypeError(
        `Cannot load ${path}: no config.json (a Hugging Face folder) and ${
          ggufs.length === 0 ? "no" : "several"
        } .gguf files`,
      );
    }
    const ckpt = await openHfCheckpoint(path);
    try {
      return await transformerFromFiles(ckpt, options);
    } finally {
      ckpt.close();
    }
  }
  const src = await fileSource(path);
  try {
    const file = await readGgufForLoading(src, path);
    return await transformerFromGguf(file, options);
  } finally {
    src.close();
  }
}

/** Options of {@link convertHfToGguf}. */
export interface ConvertToGgufOptions extends HfToGgufOptions {
  /** Quantize 2-D weights on write (llama.cpp `--pure` rules). @default {undefined} keep the stored float types */
  quantize?: GgufQuantType;
  /** Receives the per-tensor plan before writing. */
  onPlan?: (plan: GgufTensorPlan[]) => void;
}

/**
 * Converts a Hugging Face folder to a GGUF file that llama.cpp runs
 * (tensor names, q/k permutation, metadata and vocabulary: see
 * `hfToGguf`), written atomically.
 *
 * @param dir The Hugging Face folder.
 * @param out The `.gguf` file to write.
 * @param options Quantization, name, pre-tokenizer name, plan callback.
 * @returns Bytes written.
 *
 * @example
 * ```ts ignore
 * import { convertHfToGguf } from "@modelhost/modelhost/io";
 * await convertHfToGguf("SmolLM2-135M", "smollm2-135m-q8_0.gguf", { quantize: "Q8_0" });
 * ```
 */
export async function convertHfToGguf(
  dir: string,
  out: string,
  options: ConvertToGgufOptions & {
    preset?: string;
    presetOptions?: GgufWriteOptions["presetOptions"];
  } = {},
): Promise<number> {
  const ckpt = await openHfCheckpoint(dir);
  try {
    const file = hfToGguf(ckpt, options);
    return await writeFileAtomic(
      out,
      writeGguf(file, {
        quantize: options.quantize,
        onPlan: options.onPlan,
        preset: options.preset,
        presetOptions: options.presetOptions,
      }),
    );
  } finally {
    ckpt.close();
  }
}

/**
 * Converts a GGUF file to a Hugging Face folder (`config.json`,
 * `model.safetensors`, `tokenizer.json`, `tokenizer_config.json`,
 * `generation_config.json`; see `ggufToHf`: names, q/k rows un-permuted,
 * stacked experts split, block-quantized tensors widened to F32). Each file
 * is written through a temporary file renamed into place.
 *
 * @param path The `.gguf` file.
 * @param dir The folder to write (created when missing).
 * @returns The paths written.
 *
 * @example
 * ```ts ignore
 * import { convertGgufToHf } from "@modelhost/modelhost/io";
 * await convertGgufToHf("qwen3-0.6b-q8_0.gguf", "qwen3-0.6b-hf");
 * ```
 */
export async function convertGgufToHf(
  path: string,
  dir: string,
): Promise<string[]> {
  const src = await fileSource(path);
  try {
    const hf = await ggufToHf(await readGguf(src));
    await Deno.mkdir(dir, { recursive: true });
    const written: string[] = [];
    const json = async (name: string, value: unknown) => {
      if (value === undefined) return;
      const p = join(dir, name);
      await writeFileAtomic(
        p,
        new TextEncoder().encode(JSON.stringify(value, null, 2) + "\n"),
      );
      written.push(p);
    };
    await json("config.json", hf.config);
    await json("tokenizer.json", hf.tokenizer);
    await json("tokenizer_config.json", hf.tokenizerConfig);
    await json("generation_config.json", hf.generationConfig);
    const saved = await saveSafetensors(
      join(dir, "model.safetensors"),
      hf.model,
    );
    written.push(...saved.paths);
    return written;
  } finally {
    src.close();
  }
}
