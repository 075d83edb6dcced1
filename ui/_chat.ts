/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The Playground: chat with (or continue text from) the model loaded into
 * the page's worker, or a model on a modelhost / Ollama server through its
 * `/api/chat` and `/api/generate` endpoints; streaming, stop, sampling
 * settings, tokens per second and the chat template.
 *
 * @module
 */

import type { App } from "./app.ts";
import { byId, fill, h } from "./_dom.ts";
import type { ChatTurn, SamplingSettings } from "./_protocol.ts";

/** The server base URL the Playground and Registry talk to. */
export function serverUrl(): string {
  const v = (document.getElementById("reg-url") as HTMLInputElement | null)
    ?.value.trim();
  if (v) return v.replace(/\/+$/, "");
  return location.protocol.startsWith("http") ? location.origin : "";
}

function settings(): SamplingSettings {
  const n = (id: string, fallback: number) => {
    const v = Number(byId<HTMLInputElement>(id).value);
    return Number.isFinite(v) ? v : fallback;
  };
  return {
    maxTokens: Math.max(1, Math.floor(n("s-max", 200))),
    greedy: byId<HTMLInputElement>("s-greedy").checked,
    temperature: Math.max(0, n("s-temp", 0.8)),
    topK: Math.max(0, Math.floor(n("s-topk", 40))),
    topP: Math.min(1, Math.max(0, n("s-topp", 0.95))),
    repetitionPenalty: Math.max(0.01, n("s-rep", 1)),
    seed: Math.floor(n("s-seed", 0)),
    stopAtEos: byId<HTMLInputElement>("s-eos").checked,
  };
}

function mode(): "chat" | "complete" {
  const r = document.querySelector<HTMLInputElement>(
    'input[name="chat-mode"]:checked',
  );
  return r?.value === "complete" ? "complete" : "chat";
}

/**
 * Sets up the Playground.
 *
 * @param app The page.
 */
export function initChat(app: App): void {
  const source = byId<HTMLSelectElement>("chat-source");
  const load = byId<HTMLButtonElement>("chat-load");
  const log = byId("chat-log");
  const input = byId<HTMLTextAreaElement>("chat-input");
  const send = byId<HTMLButtonElement>("chat-send");
  const stop = byId<HTMLButtonElement>("chat-stop");
  const stats = byId("chat-stats");
  const info = byId("chat-model");
  let turns: ChatTurn[] = [];
  let pageModel = false;
  let running: { abort(): void } | undefined;

  const setSources = (server: string[]) => {
    const keep = source.value;
    source.replaceChildren(
      h(
        "option",
        { value: "page" },
        `In this page: ${app.summary?.name ?? "(open a model)"}`,
      ),
      ...server.map((m) =>
        h("option", { value: `server:${m}` }, `Server: ${m}`)
      ),
    );
    if ([...source.options].some((o) => o.value === keep)) source.value = keep;
  };
  setSources([]);
  const refresh = async () => {
    const base = serverUrl();
    if (!base) return;
    try {
      const r = await fetch(`${base}/api/tags`);
      if (!r.ok) return;
      const j = await r.json() as { models?: { name?: unknown }[] };
      setSources(
        (j.models ?? []).map((m) => String(m.name ?? "")).filter((s) => s),
      );
    } catch { /* no server beside the page */ }
  };
  byId("chat-refresh").addEventListener("click", refresh);
  // Served by `modelhost serve --ui` (at /ui/): the server beside it has models.
  if (location.pathname.startsWith("/ui/")) refresh();

  const showTemplate = async () => {
    if (!pageModel) return;
    try {
      const r = await app.client.send({
        op: "template",
        messages: [...turns, { role: "user", content: input.value || "…" }],
      }).done;
      if (r.kind === "template") fill(byId("template-text"), r.text);
    } catch { /* shown on send */ }
  };

  app.onModel((s) => {
    pageModel = false;
    setSources(
      [...source.options].filter((o) => o.value.startsWith("server:"))
        .map((o) => o.value.slice(7)),
    );
    source.value = "page";
    load.disabled = !s.canChat;
    fill(
      info,
      s.canChat
        ? "Load the model to chat with it in this page."
        : `Cannot run here: ${s.chatNote}`,
    );
    fill(byId("template-family"));
    fill(byId("template-text"));
  });

  load.addEventListener("click", async () => {
    if (!app.summary) {
      app.status("Open a model first", true);
      return;
    }
    load.disabled = true;
    fill(info, "Loading…");
    try {
      const r = await app.client.send({ op: "load" }).done;
      if (r.kind !== "loaded") return;
      pageModel = true;
      const m = r.model;
      fill(
        info,
        `${m.name}: loaded in ${
          m.ms.toFixed(0)
        } ms, vocabulary ${m.vocab}, kernels ${m.kernels}`,
      );
      fill(
        byId("template-family"),
        m.templateFamily
          ? `Template family: ${m.templateFamily}${
            m.templateSource ? " (from the model's own template)" : ""
          }`
          : "No chat template fits this model: use Completion mode.",
      );
      if (m.templateSource) {
        fill(byId("template-text"), m.templateSource);
      } else showTemplate();
      document.body.dataset.modelLoaded = "1";
    } catch (e) {
      fill(info, (e as Error).message);
      app.status((e as Error).message, true);
    } finally {
      load.disabled = false;
    }
  });

  const bubble = (role: string, text: string) => {
    const body = h("span", { class: "text" }, text);
    const li = h(
      "li",
      { "data-role": role },
      h("span", { class: "who" }, role),
      body,
    );
    log.append(li);
    li.scrollIntoView({ block: "nearest" });
    return body;
  };

  const finish = () => {
    running = undefined;
    send.disabled = false;
    stop.disabled = true;
  };

  const runPage = async (
    m: "chat" | "complete",
    prompt: string,
    out: HTMLElement,
  ) => {
    const t0 = performance.now();
    let n = 0;
    let text = "";
    const req = app.client.send({
      op: "generate",
      mode: m,
      prompt,
      messages: turns,
      settings: settings(),
    }, (r) => {
      if (r.kind !== "token") return;
      n++;
      text += r.text;
      out.textContent = text;
      const s = (performance.now() - t0) / 1000;
      stats.textContent = `${n} tokens · ${
        (n / Math.max(s, 1e-3)).toFixed(1)
      } tokens/s`;
    });
    running = { abort: () => app.client.abort(req.id) };
    const r = await req.done;
    if (r.kind !== "generated") return text;
    const d = r.done;
    out.textContent = d.text;
    const tps = d.tokens / Math.max(d.decodeMs / 1000, 1e-6);
    stats.textContent = `${d.tokens} tokens · ${
      tps.toFixed(1)
    } tokens/s · prompt ${d.promptTokens} tokens in ${
      d.prefillMs.toFixed(0)
    } ms · ${d.finishReason}`;
    out.parentElement!.dataset.ids = d.ids.join(",");
    out.parentElement!.dataset.done = d.finishReason;
    return d.text;
  };

  const runServer = async (
    model: string,
    m: "chat" | "complete",
    prompt: string,
    out: HTMLElement,
  ) => {
    const ctl = new AbortController();
    running = ctl;
    const s = settings();
    const options = {
      temperature: s.greedy ? 0 : s.temperature,
      top_k: s.topK,
      top_p: s.topP,
      repeat_penalty: s.repetitionPenalty,
      seed: s.seed,
      num_predict: s.maxTokens,
    };
    const body = m === "chat"
      ? { model, messages: turns, stream: true, options }
      : { model, prompt, raw: true, stream: true, options };
    const res = await fetch(
      `${serverUrl()}/api/${m === "chat" ? "chat" : "generate"}`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: ctl.signal,
      },
    );
    if (!res.ok || !res.body) {
      const t = await res.text();
      let msg = t;
      try {
        msg = JSON.parse(t).error ?? t;
      } catch { /* text */ }
      throw new Error(`${res.status}: ${msg}`);
    }
    let text = "";
    let n = 0;
    const t0 = performance.now();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const j = JSON.parse(line);
          if (j.error) throw new Error(String(j.error));
          const piece = m === "chat"
            ? j.message?.content ?? ""
            : j.response ?? "";
          if (piece) {
            n++;
            text += piece;
            out.textContent = text;
          }
          if (j.done) {
            const tps = j.eval_count / Math.max(j.eval_duration / 1e9, 1e-6);
            stats.textContent = `${j.eval_count} tokens · ${
              tps.toFixed(1)
            } tokens/s · ${j.done_reason ?? "stop"} (server)`;
          } else {
            const sec = (performance.now() - t0) / 1000;
            stats.textContent = `${n} chunks · ${
              (n / Math.max(sec, 1e-3)).toFixed(1)
            } tokens/s`;
          }
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) stats.textContent += " · stopped";
      else throw e;
    }
    return text;
  };

  byId("chat-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (running) return;
    const m = mode();
    const text = input.value;
    const src = source.value;
    if (src === "page" && !pageModel) {
      app.status("Load the model into the page first", true);
      return;
    }
    if (m === "chat") {
      if (!text.trim()) return;
      turns.push({ role: "user", content: text });
      bubble("user", text);
    } else if (text) bubble("prompt", text);
    input.value = "";
    send.disabled = true;
    stop.disabled = false;
    stats.textContent = "";
    const out = bubble("assistant", "");
    try {
      const reply = src === "page"
        ? await runPage(m, text, out)
        : await runServer(src.slice(7), m, text, out);
      if (m === "chat") turns.push({ role: "assistant", content: reply });
    } catch (err) {
      out.textContent = (err as Error).message;
      out.classList.add("error");
      if (m === "chat") turns.pop();
    } finally {
      finish();
      showTemplate();
    }
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      byId<HTMLFormElement>("chat-form").requestSubmit();
    }
  });
  stop.addEventListener("click", () => running?.abort());
  byId("chat-clear").addEventListener("click", () => {
    turns = [];
    log.replaceChildren();
    stats.textContent = "";
    showTemplate();
  });
}
