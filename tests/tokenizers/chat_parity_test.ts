/**
 * Chat templates against transformers' `apply_chat_template`:
 * `tests/vectors/gen/chat_templates.py` renders our templates written in
 * the shapes of released models (Llama 2, Llama 3.1 with tools, Qwen 2.5
 * ChatML with its default system prompt, Qwen3 with thinking, Mistral v1 /
 * v3 with tools / Tekken, Gemma 2 / 3, Phi-3 / 4, DeepSeek R1, Granite 3,
 * SmolLM3, a harmony-style gpt-oss template, Zephyr) over conversations
 * with and without a generation prompt, tools, documents, thinking and
 * extra variables; every rendering must be byte-equal, and every
 * `raise_exception` must raise here too.
 */

import { assertEquals, assertThrows } from "@std/assert";
import { type ChatMessage, renderChatTemplate } from "../../tokenizers/chat.ts";

interface Case {
  template: string;
  conversation: string;
  special_tokens: Record<string, string>;
  add_generation_prompt: boolean;
  arguments: Record<string, unknown>;
  text?: string;
  error?: string;
}

const DIR = new URL("../vectors/", import.meta.url);
const data = JSON.parse(
  Deno.readTextFileSync(new URL("chat_templates.json", DIR)),
) as {
  now: string;
  conversations: Record<string, ChatMessage[]>;
  cases: Case[];
};
const [date, time] = data.now.split("T");
const [y, mo, d] = date.split("-").map(Number);
const [h, mi, s] = time.split(":").map(Number);
const NOW = new Date(y, mo - 1, d, h, mi, s);

const byTemplate = new Map<string, Case[]>();
for (const c of data.cases) {
  byTemplate.set(c.template, [...(byTemplate.get(c.template) ?? []), c]);
}

for (const [name, cases] of byTemplate) {
  const source = Deno.readTextFileSync(
    new URL(`chat_templates/${name}.jinja`, DIR),
  );
  Deno.test(`chat template ${name}: ${cases.length} renderings byte-equal to transformers`, () => {
    for (const c of cases) {
      const { tools, documents, ...variables } = c.arguments;
      const { bos_token, eos_token, ...specialTokens } = c.special_tokens;
      const render = () =>
        renderChatTemplate(source, data.conversations[c.conversation], {
          addGenerationPrompt: c.add_generation_prompt,
          tools: tools as Record<string, unknown>[] | undefined,
          documents: documents as Record<string, unknown>[] | undefined,
          bosToken: bos_token,
          eosToken: eos_token,
          specialTokens,
          variables,
          now: NOW,
        });
      const what = `${name} / ${c.conversation} ${
        JSON.stringify(c.arguments).slice(0, 80)
      } gen=${c.add_generation_prompt}`;
      if (c.error !== undefined) {
        const message = c.error.replace(/^TemplateError: /, "");
        assertThrows(render, TypeError, message, what);
      } else {
        assertEquals(render(), c.text, what);
      }
    }
  });
}
