/**
 * The Ollama Modelfile writer renders the model's own Jinja template on a
 * probe conversation and writes a Go TEMPLATE only when one of the known
 * formats renders the same text (templates: tests/vectors/chat_templates/).
 */

import { assertEquals, assertStringIncludes } from "@std/assert";
import { familyOfTemplate, modelfileFor } from "../../cli/_modelfile.ts";

const tpl = (name: string) =>
  Deno.readTextFileSync(
    new URL(`../vectors/chat_templates/${name}.jinja`, import.meta.url),
  );

Deno.test("Modelfile: a TEMPLATE only where the model's template renders a known format", () => {
  assertEquals(
    familyOfTemplate(tpl("chatml_qwen25"), undefined, "<|im_end|>"),
    "chatml",
  );
  assertEquals(familyOfTemplate(tpl("llama2"), "<s>", "</s>"), "llama2");
  assertEquals(familyOfTemplate(tpl("zephyr"), "<s>", "</s>"), "zephyr");
  // Phi-3 ends turns with <|end|>, not </s>: not Zephyr
  assertEquals(
    familyOfTemplate(tpl("phi3"), "<s>", "<|endoftext|>"),
    undefined,
  );
  // Llama 3.1 writes dates into the system turn: not the plain Llama 3 format
  assertEquals(
    familyOfTemplate(tpl("llama31_tools"), "<|begin_of_text|>", "<|eot_id|>"),
    undefined,
  );
  // Gemma refuses a system message
  assertEquals(familyOfTemplate(tpl("gemma2"), "<bos>", "<eos>"), undefined);
});

Deno.test("Modelfile: FROM, TEMPLATE and stop words, or a note why there is no TEMPLATE", () => {
  const md = (template: string) => ({
    "tokenizer.chat_template": template,
    "tokenizer.ggml.tokens": ["<s>", "</s>", "<|im_end|>"],
    "tokenizer.ggml.bos_token_id": 0,
    "tokenizer.ggml.eos_token_id": 2,
  });
  const qwen = modelfileFor("m.gguf", md(tpl("chatml_qwen25")));
  assertStringIncludes(qwen, "FROM ./m.gguf");
  assertStringIncludes(qwen, "<|im_start|>{{ .Role }}");
  assertStringIncludes(qwen, 'PARAMETER stop "<|im_end|>"');
  const phi = modelfileFor("m.gguf", md(tpl("phi3")));
  assertEquals(phi.includes(`TEMPLATE """`), false);
  assertStringIncludes(phi, "renders no known");
  const named = modelfileFor("m.gguf", { "general.name": "TinyLlama Chat" });
  assertStringIncludes(named, "<|{{ .Role }}|>");
});
