// `generate` for Llama-family models, and the Ollama Modelfile written by
// `convert --modelfile`.

import { type ChatFamily, chatFamily } from "../tokenizers/chat.ts";
import type { FlagSpec } from "./_args.ts";

/** Flags of `generate` (the sampling options of the generation API). */
export const GENERATE_FLAGS: FlagSpec[] = [
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

const TEMPLATES: Record<ChatFamily, { template: string; stop: string[] }> = {
  chatml: {
    template:
      "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n",
    stop: ["<|im_end|>"],
  },
  llama3: {
    template:
      "{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>{{ end }}<|start_header_id|>assistant<|end_header_id|>\n\n",
    stop: ["<|eot_id|>"],
  },
  llama2: {
    template:
      "[INST] {{ if .System }}<<SYS>>\n{{ .System }}\n<</SYS>>\n\n{{ end }}{{ .Prompt }} [/INST]",
    stop: ["[INST]", "[/INST]"],
  },
  mistral: {
    template:
      "[INST] {{ if .System }}{{ .System }}\n\n{{ end }}{{ .Prompt }} [/INST]",
    stop: ["[INST]", "[/INST]"],
  },
  zephyr: {
    template:
      "{{- range .Messages }}<|{{ .Role }}|>\n{{ .Content }}</s>\n{{ end }}<|assistant|>\n",
    stop: ["</s>", "<|user|>"],
  },
};

/**
 * An Ollama Modelfile for a GGUF file: `FROM`, and when the chat format is
 * known (from `tokenizer.chat_template` or the architecture), its
 * `TEMPLATE` and `stop` parameters.
 */
export function modelfileFor(
  ggufName: string,
  metadata: Record<string, unknown>,
): string {
  const family = chatFamily({
    chatTemplate: typeof metadata["tokenizer.chat_template"] === "string"
      ? metadata["tokenizer.chat_template"] as string
      : undefined,
    family: typeof metadata["general.name"] === "string"
      ? metadata["general.name"] as string
      : undefined,
  });
  const lines = [
    `# Ollama Modelfile written by modelhost`,
    `FROM ./${ggufName}`,
  ];
  if (family) {
    const t = TEMPLATES[family];
    lines.push(`TEMPLATE """${t.template}"""`);
    for (const s of t.stop) lines.push(`PARAMETER stop ${JSON.stringify(s)}`);
  } else {
    lines.push("# chat format unknown: no TEMPLATE written (raw prompts)");
  }
  return lines.join("\n") + "\n";
}
