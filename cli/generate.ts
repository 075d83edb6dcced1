// `generate`: streams text from a Llama-family model (a Hugging Face folder
// or a GGUF file), plain or wrapped in the model's chat template.

import { loadTransformer } from "../io/transformer.ts";
import { generate } from "../models/generate.ts";
import { type FlagSpec, parseFlags, UsageError } from "./_args.ts";
import { type Command, needFiles } from "./_command.ts";

/** Flags of `generate` (the sampling options of the generation API). */
const GENERATE_FLAGS: FlagSpec[] = [
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
    name: "max-tokens",
    short: "n",
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
    short: "t",
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
  {
    name: "json",
    type: "boolean",
    description:
      "Print one JSON object with ids, text and timings instead of streaming text",
  },
];

/** `modelhost generate MODEL --prompt TEXT`. */
export const generateCommand: Command = {
  name: "generate",
  summary:
    "Generate text with a Llama-family model (Hugging Face folder or GGUF), streamed",
  usage: "generate MODEL --prompt TEXT [--chat] [sampling options]",
  flags: () => GENERATE_FLAGS,
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    needFiles(positional, "MODEL");
    let prompt = flags.prompt as string | undefined;
    if (prompt === undefined) throw new UsageError("missing --prompt");
    if (prompt === "-") {
      prompt = await new Response(Deno.stdin.readable).text();
    }
    const t0 = performance.now();
    const model = await loadTransformer(positional[0]);
    const loadSeconds = (performance.now() - t0) / 1000;
    const messages = flags.chat
      ? [
        ...(flags.system
          ? [{ role: "system" as const, content: flags.system as string }]
          : []),
        { role: "user" as const, content: prompt },
      ]
      : undefined;
    const options = {
      maxTokens: flags["max-tokens"] as number,
      greedy: flags.greedy ? true : undefined,
      temperature: flags.temperature as number | undefined,
      topK: flags["top-k"] as number | undefined,
      topP: flags["top-p"] as number | undefined,
      repetitionPenalty: flags["repeat-penalty"] as number | undefined,
      seed: flags.seed as number,
      stop: flags.stop as string[] | undefined,
      addBos: flags["no-bos"] ? false : undefined,
    };
    const ids: number[] = [];
    let text = "";
    const t1 = performance.now();
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
  },
};
