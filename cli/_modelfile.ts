// The Ollama Modelfile written by `convert --modelfile`: `FROM` the GGUF
// file, and the chat template and stop words when the chat format is known.

import { type ChatFamily, chatFamily } from "../tokenizers/chat.ts";

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
