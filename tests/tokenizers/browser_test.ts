/**
 * `tokenizers/` runs outside Deno: the module is bundled for the browser
 * platform (`deno bundle --platform browser`, `@huggingface/jinja` inside)
 * and run by Node, where no `Deno` global exists; it must encode the
 * corpus as the Python library does and render a chat template. Skipped
 * when `node` is missing.
 */

import { assertEquals } from "@std/assert";

const node = await new Deno.Command("node", { args: ["--version"] }).output()
  .then((o) => o.success, () => false);

Deno.test({
  name:
    "tokenizers/ bundled for the browser runs without Deno (Node): encode and chat",
  ignore: !node,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const root = new URL("../../", import.meta.url).pathname;
      const bundle = await new Deno.Command(Deno.execPath(), {
        args: [
          "bundle",
          "--platform",
          "browser",
          "-o",
          `${dir}/tok.js`,
          `${root}tokenizers/mod.ts`,
        ],
        cwd: root,
      }).output();
      assertEquals(
        bundle.success,
        true,
        new TextDecoder().decode(bundle.stderr),
      );
      const vectors = `${root}tests/vectors/`;
      await Deno.writeTextFile(
        `${dir}/check.mjs`,
        `import * as t from "./tok.js";
import { readFileSync } from "node:fs";
if (typeof globalThis.Deno !== "undefined") throw new Error("Deno is present");
const v = JSON.parse(readFileSync(${
          JSON.stringify(vectors + "tokenizers/unigram_t5.json")
        }, "utf8"));
const texts = JSON.parse(readFileSync(${
          JSON.stringify(vectors + "tokenizers/corpus.json")
        }, "utf8")).texts;
const tok = t.tokenizerFromJson(v.tokenizer);
const bad = texts.filter((s, i) => JSON.stringify(tok.encode(s, { parseSpecial: true })) !== JSON.stringify(v.encode[i])).length;
const tpl = readFileSync(${
          JSON.stringify(vectors + "chat_templates/qwen3_thinking.jinja")
        }, "utf8");
const out = t.renderChatTemplate(tpl, [{ role: "user", content: "hi" }], { variables: { enable_thinking: false } });
console.log(JSON.stringify({ bad, out }));
`,
      );
      const run = await new Deno.Command("node", { args: [`${dir}/check.mjs`] })
        .output();
      assertEquals(run.success, true, new TextDecoder().decode(run.stderr));
      const r = JSON.parse(new TextDecoder().decode(run.stdout));
      assertEquals(r.bad, 0);
      assertEquals(
        r.out,
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
