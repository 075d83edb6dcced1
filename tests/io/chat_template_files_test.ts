import { assertEquals } from "@std/assert";
import { join } from "@std/path";
import { readChatTemplateFiles } from "../../io/transformer.ts";

Deno.test("chat templates from files: chat_template.jinja, named ones, chat_template.json", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assertEquals(await readChatTemplateFiles(dir), undefined);
    await Deno.writeTextFile(
      join(dir, "chat_template.json"),
      JSON.stringify({ chat_template: "J" }),
    );
    assertEquals(await readChatTemplateFiles(dir), "J");
    await Deno.writeTextFile(join(dir, "chat_template.jinja"), "A");
    assertEquals(await readChatTemplateFiles(dir), "A");
    await Deno.mkdir(join(dir, "additional_chat_templates"));
    await Deno.writeTextFile(
      join(dir, "additional_chat_templates", "tool_use.jinja"),
      "B",
    );
    assertEquals(await readChatTemplateFiles(dir), [
      { name: "default", template: "A" },
      { name: "tool_use", template: "B" },
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
