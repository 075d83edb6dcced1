import { assertEquals, assertThrows } from "@std/assert";
import {
  chatFamily,
  chatml,
  encodeChat,
  llama2Chat,
  llama3Chat,
  mistralChat,
  pickChatTemplate,
  zephyrChat,
} from "../../tokenizers/chat.ts";
import { tokenizerFromGguf } from "../../tokenizers/gguf.ts";
import { spmMetadata } from "./_vocabs.ts";

const CONVO = [
  { role: "system", content: "Be brief." },
  { role: "user", content: " Hi " },
  { role: "assistant", content: "Hello." },
  { role: "user", content: "Bye" },
];

Deno.test("chat templates write what each family's template writes", () => {
  assertEquals(
    chatml(CONVO),
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n" +
      "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n",
  );
  assertEquals(
    chatml([{ role: "user", content: "x" }], {
      defaultSystem: "S",
      addGenerationPrompt: false,
    }),
    "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nx<|im_end|>\n",
  );
  assertEquals(
    llama2Chat(CONVO),
    "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello. </s><s>[INST] Bye [/INST]",
  );
  assertEquals(
    llama3Chat(CONVO),
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
      "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
      "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>" +
      "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>" +
      "<|start_header_id|>assistant<|end_header_id|>\n\n",
  );
  assertEquals(
    zephyrChat(CONVO),
    "<|system|>\nBe brief.</s>\n<|user|>\n Hi </s>\n<|assistant|>\nHello.</s>\n<|user|>\nBye</s>\n<|assistant|>\n",
  );
  assertEquals(
    mistralChat(CONVO),
    "<s>[INST] Be brief.\n\n Hi  [/INST]Hello.</s>[INST] Bye [/INST]",
  );
  assertThrows(
    () => llama2Chat([{ role: "tool", content: "x" }]),
    TypeError,
    'Llama 2 chat has no role "tool"',
  );
});

Deno.test("chat family from a template string, a name or a vocabulary", () => {
  assertEquals(chatFamily({ chatTemplate: "{% ... %}<|im_start|>" }), "chatml");
  assertEquals(
    chatFamily({ chatTemplate: "... <<SYS>> ... [INST]" }),
    "llama2",
  );
  assertEquals(chatFamily({ chatTemplate: "{{ '[INST] ' }}" }), "mistral");
  assertEquals(chatFamily({ chatTemplate: "<|user|>" }), "zephyr");
  assertEquals(chatFamily({ family: "Qwen2.5-0.5B-Instruct" }), "chatml");
  assertEquals(chatFamily({ family: "Meta-Llama-3-8B" }), "llama3");
  assertEquals(chatFamily({ family: "TinyLlama-1.1B-Chat" }), "zephyr");
  assertEquals(chatFamily({ family: "llama-2-7b-chat" }), "llama2");
  assertEquals(chatFamily({ family: "gpt2" }), undefined);
  assertThrows(
    () => pickChatTemplate({ family: "gpt2" }),
    TypeError,
    "no built-in format fits it (built-in: chatml, llama2, llama3, zephyr, mistral)",
  );
});

Deno.test("encodeChat: template control tokens are parsed, BOS is not doubled", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  // llama2 writes "<s>" itself: parsed to 1, no extra BOS; "a" -> ▁a (265)
  const ids = encodeChat(tok, [{ role: "user", content: "a" }], {
    template: llama2Chat,
  });
  assertEquals(ids[0], 1);
  assertEquals(ids[1] === 1, false);
  assertEquals(ids.filter((x) => x === 1).length, 1);
  // zephyr writes no BOS; the tokenizer adds it, and "</s>" becomes EOS (2)
  const z = encodeChat(tok, [{ role: "user", content: "a" }], {
    template: zephyrChat,
  });
  assertEquals(z[0], 1);
  assertEquals(z.includes(2), true);
});
