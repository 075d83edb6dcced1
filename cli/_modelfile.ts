// The Ollama Modelfile written by `convert --modelfile`: `FROM` the GGUF
// file, and the chat template and stop words when the chat format is known.
// A model's own Jinja template is rendered on a probe conversation and a
// Go TEMPLATE is written only when it renders the same text as one of the
// known formats; otherwise none is (Ollama then reads the GGUF's own).

import {
  CHAT_TEMPLATES,
  type ChatFamily,
  chatFamily,
  type ChatMessage,
  renderChatTemplate,
} from "../tokenizers/chat.ts";

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
const PROBE: ChatMessage[] = [
  { role: "system", content: "S" },
  { role: "user", content: "U1" },
  { role: "assistant", content: "A1" },
  { role: "user", content: "U2" },
];

/** The known format that renders the probe exactly as the model's template does. */
export function familyOfTemplate(
  source: string,
  bosToken: string | undefined,
  eosToken: string | undefined,
): ChatFamily | undefined {
  let own: string;
  try {
    own = renderChatTemplate(source, PROBE, { bosToken, eosToken });
  } catch {
    return undefined; // e.g. a template that refuses a system message
  }
  const guess = chatFamily({ chatTemplate: source });
  const order = (Object.keys(CHAT_TEMPLATES) as ChatFamily[]).sort((a, b) =>
    (a === guess ? -1 : 0) - (b === guess ? -1 : 0)
  );
  return order.find((f) => {
    try {
      return CHAT_TEMPLATES[f](PROBE, { bosToken, eosToken }) === own;
    } catch {
      return false;
    }
  });
}

export function modelfileFor(
  ggufName: string,
  metadata: Record<string, unknown>,
): string {
  const source = typeof metadata["tokenizer.chat_template"] === "string"
    ? metadata["tokenizer.chat_template"] as string
    : undefined;
  const tokens = metadata["tokenizer.ggml.tokens"] as string[] | undefined;
  const text = (key: string) => {
    const id = Number(metadata[`tokenizer.ggml.${key}`]);
    return Number.isInteger(id) ? tokens?.[id] : undefined;
  };
  const family = source !== undefined
    ? familyOfTemplate(source, text("bos_token_id"), text("eos_token_id"))
    : chatFamily({
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
  } else if (source !== undefined) {
    lines.push(
      "# the model's chat template (tokenizer.chat_template) renders no known",
      "# format, so no TEMPLATE is written: Ollama uses the one in the GGUF file",
    );
  } else {
    lines.push("# chat format unknown: no TEMPLATE written (raw prompts)");
  }
  return lines.join("\n") + "\n";
}
