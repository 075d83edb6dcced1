// `generate`: streams text from a Llama-family model (a Hugging Face folder
// or a GGUF file), plain or wrapped in the model's chat template.

import { loadTransformer } from "../io/transformer.ts";
import { generate } from "../models/generate.ts";
import { chatTemplateFor, jinjaChatTemplate } from "../tokenizers/chat.ts";
import type { Transformer } from "../models/transformer.ts";
import {
  jsonConstraint,
  type TokenConstraint,
} from "../tokenizers/constraint.ts";
import { type FlagSpec, parseFlags, UsageError } from "./_args.ts";
import type { Command } from "./_command.ts";
import {
  CTX_FLAG,
  MODEL_FLAG,
  modelArg,
  positiveInt,
  THREADS_FLAG,
  withThreads,
} from "./_habits.ts";
import { promptIds } from "../models/generate.ts";

/** Flags of `generate` (the sampling options of the generation API). */
const GENERATE_FLAGS: FlagSpec[] = [
  MODEL_FLAG,
  {
    name: "prompt",
    short: "p",
    type: "string",
    value: "TEXT",
    description: "The prompt (- reads it from stdin)",
  },
  {
    name: "chat",
    type: "boolean",
    description:
      "Wrap the prompt in the model's chat template as a user message",
  },
  {
    name: "system",
    type: "string",
    value: "TEXT",
    description: "System message (with --chat)",
  },
  {
    name: "chat-template",
    type: "string",
    value: "FILE",
    description:
      "Jinja chat template to use instead of the model's (with --chat)",
  },
  {
    name: "chat-var",
    type: "list",
    value: "NAME=JSON",
    description:
      "A chat template variable, e.g. enable_thinking=false; repeatable (with --chat)",
  },
  {
    name: "max-tokens",
    short: "n",
    aliases: ["n-predict"],
    type: "number",
    description: "Most tokens to generate",
    default: 256,
  },
  {
    name: "greedy",
    type: "boolean",
    description: "Always take the most likely token",
  },
  {
    name: "temperature",
    aliases: ["temp"],
    type: "number",
    description: "Sampling temperature (0 = greedy; default: the model's)",
  },
  {
    name: "top-k",
    type: "number",
    description: "Sample among the K most likely tokens (0 = all)",
  },
  {
    name: "top-p",
    type: "number",
    description: "Sample among the smallest set of tokens with probability ≥ P",
  },
  {
    name: "repeat-penalty",
    type: "number",
    description: "Penalty for tokens already seen (1 = none)",
  },
  {
    name: "seed",
    type: "number",
    description: "Random seed (same seed, same text)",
    default: 0,
  },
  {
    name: "stop",
    type: "list",
    value: "TEXT",
    description: "Stop at this text; repeatable",
  },
  { name: "no-bos", type: "boolean", description: "Do not add the BOS token" },
  THREADS_FLAG,
  CTX_FLAG,
  {
    name: "json-schema",
    type: "string",
    value: "FILE",
    description:
      'Constrain the output to JSON that validates against this JSON Schema file (- reads stdin; "json" alone: any JSON object)',
  },
  {
    name: "json",
    type: "boolean",
    description:
      "Print one JSON object with ids, text and timings instead of streaming text",
  },
];

/** The constraint of `--json-schema FILE` (or `json`), if given. */
async function schemaConstraint(
  arg: string | undefined,
  model: Transformer,
): Promise<TokenConstraint | undefined> {
  if (arg === undefined) return undefined;
  let schema: unknown = "json";
  if (arg !== "json") {
    const text = arg === "-"
      ? await new Response(Deno.stdin.readable).text()
      : await Deno.readTextFile(arg);
    try {
      schema = JSON.parse(text);
    } catch (e) {
      throw new UsageError(
        `--json-schema ${arg}: not JSON (${
          e instanceof Error ? e.message : e
        })`,
      );
    }
  }
  if (!model.tokenizer) {
    throw new UsageError("--json-schema needs a model with a tokenizer");
  }
  try {
    return jsonConstraint(model.tokenizer, schema);
  } catch (e) {
    if (e instanceof TypeError) {
      throw new UsageError(`--json-schema ${arg}: ${e.message}`);
    }
    throw e;
  }
}

/** `modelhost generate MODEL --prompt TEXT`. */
export const generateCommand: Command = {
  name: "generate",
  summary:
    "Generate text with a Llama-family model (Hugging Face folder or GGUF), streamed",
  usage:
    "generate MODEL --prompt TEXT [--chat] [sampling options] (or -m MODEL)",
  flags: () => GENERATE_FLAGS,
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    const [modelPath] = modelArg(flags, positional);
    const threads = positiveInt(flags, "threads");
    const ctxSize = positiveInt(flags, "ctx-size");
    let prompt = flags.prompt as string | undefined;
    if (prompt === undefined) throw new UsageError("missing --prompt");
    if (prompt === "-") {
      prompt = await new Response(Deno.stdin.readable).text();
    }
    const t0 = performance.now();
    const model = await loadTransformer(modelPath);
    const loadSeconds = (performance.now() - t0) / 1000;
    const messages = flags.chat
      ? [
        ...(flags.system
          ? [{ role: "system" as const, content: flags.system as string }]
          : []),
        { role: "user" as const, content: prompt },
      ]
      : undefined;
    // the model's own Jinja template, a file given, or a built-in fallback
    let templateUsed: string | undefined;
    let chatTemplate;
    const variables: Record<string, unknown> = {};
    if (messages) {
      const file = flags["chat-template"] as string | undefined;
      if (file !== undefined) {
        chatTemplate = jinjaChatTemplate(await Deno.readTextFile(file));
        templateUsed = `file ${file}`;
      } else {
        const t = chatTemplateFor({
          tokenizer: model.tokenizer,
          family: model.name,
        });
        chatTemplate = t.render;
        templateUsed = t.source === "model"
          ? `the model's own (${t.name})`
          : `built-in ${t.name} (the model ships none)`;
      }
      for (const kv of (flags["chat-var"] as string[] | undefined) ?? []) {
        const eq = kv.indexOf("=");
        if (eq <= 0) {
          throw new UsageError(`--chat-var takes NAME=JSON, found "${kv}"`);
        }
        const raw = kv.slice(eq + 1);
        try {
          variables[kv.slice(0, eq)] = JSON.parse(raw);
        } catch {
          variables[kv.slice(0, eq)] = raw; // a bare word is a string
        }
      }
      if (!flags.json) ctx.io.err(`chat template: ${templateUsed}`);
    }
    const options = {
      chatTemplate,
      chatOptions: { variables },
      maxTokens: flags["max-tokens"] as number,
      greedy: flags.greedy ? true : undefined,
      temperature: flags.temperature as number | undefined,
      topK: flags["top-k"] as number | undefined,
      topP: flags["top-p"] as number | undefined,
      repetitionPenalty: flags["repeat-penalty"] as number | undefined,
      seed: flags.seed as number,
      stop: flags.stop as string[] | undefined,
      addBos: flags["no-bos"] ? false : undefined,
      constraint: await schemaConstraint(
        flags["json-schema"] as string | undefined,
        model,
      ),
    };
    if (ctxSize !== undefined) {
      // llama.cpp's -c: the prompt and the output share the context
      const n = promptIds(model, messages ?? prompt, options).length;
      if (n >= ctxSize) {
        throw new UsageError(
          `the prompt is ${n} tokens, the context (-c) ${ctxSize}: no room to generate`,
        );
      }
      options.maxTokens = Math.min(options.maxTokens, ctxSize - n);
    }
    const ids: number[] = [];
    let text = "";
    const t1 = performance.now();
    return await withThreads(threads, async () => {
      const it = generate(model, messages ?? prompt, options);
      let step = await it.next();
      while (!step.done) {
        ids.push(step.value.id);
        text += step.value.text;
        if (!flags.json && ctx.io.write) ctx.io.write(step.value.text);
        step = await it.next();
      }
      const seconds = (performance.now() - t1) / 1000;
      const result = step.value;
      if (flags.json) {
        ctx.io.out(JSON.stringify({
          model: model.name,
          ...(templateUsed ? { chatTemplate: templateUsed } : {}),
          ids: result.ids,
          text: result.text,
          promptIds: result.promptIds,
          finishReason: result.finishReason,
          prefillMs: result.prefillMs,
          decodeMs: result.decodeMs,
          loadSeconds,
          seconds,
        }));
      } else {
        if (ctx.io.write) ctx.io.write("\n");
        else ctx.io.out(text);
        if (ctx.verbose) {
          ctx.io.err(
            `${ids.length} tokens in ${seconds.toFixed(2)} s (${
              (ids.length / seconds).toFixed(1)
            } tokens/s); loaded in ${loadSeconds.toFixed(2)} s`,
          );
        }
      }
      return 0;
    });
  },
};
