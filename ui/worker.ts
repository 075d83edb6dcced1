/// <reference lib="webworker" />
/**
 * The page's worker: opens models, computes tensor statistics and
 * quantization previews, converts, and runs the playground's model, so the
 * page stays responsive. Requests and replies are in `_protocol.ts`.
 *
 * @module
 */

import { toFloat32 } from "@modelhost/modelhost/core";
import {
  configureKernels,
  kernelInfo,
} from "@modelhost/modelhost/kernels/fast";
import {
  generate,
  type Transformer,
  transformerFromFiles,
  transformerFromGguf,
} from "@modelhost/modelhost/models";
import {
  CHAT_TEMPLATES,
  chatFamily,
  type ChatMessage,
  createTokenizer,
  type TokenizerJson,
} from "@modelhost/modelhost/tokenizers";
import { type Opened, openInput, summarize } from "./_open.ts";
import type { Reply, Request, SamplingSettings } from "./_protocol.ts";
import { convertModel, previewQuantization } from "./_quant.ts";
import { heatmapSlice, tensorStats } from "./_stats.ts";

declare const self: DedicatedWorkerGlobalScope;

let opened: Opened | undefined;
let model: Transformer | undefined;
const running = new Map<number, AbortController>();

function send(reply: Reply, transfer: Transferable[] = []): void {
  self.postMessage(reply, transfer);
}

/** Lets queued messages (an abort) in between tokens. */
const channel = new MessageChannel();
const waiting: (() => void)[] = [];
channel.port1.onmessage = () => waiting.shift()?.();
function yieldNow(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    channel.port2.postMessage(null);
  });
}

function kernelsText(): string {
  const k = kernelInfo();
  return `${k.backend}, ${k.threads} thread${k.threads === 1 ? "" : "s"}${
    k.note ? ` (${k.note})` : ""
  }`;
}

function need(): Opened {
  if (!opened) throw new TypeError("No model is open");
  return opened;
}

function errorText(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

function templateHint(o: Opened, m: Transformer) {
  const md = o.file.models[0].metadata;
  const cfg = o.json["tokenizer_config.json"] as
    | Record<string, unknown>
    | undefined;
  const source = typeof md["tokenizer.chat_template"] === "string"
    ? md["tokenizer.chat_template"] as string
    : typeof cfg?.chat_template === "string"
    ? cfg.chat_template
    : undefined;
  const family = chatFamily({
    chatTemplate: source,
    family: m.name,
    tokenizer: m.tokenizer,
  });
  return { source, family };
}

async function load(id: number): Promise<void> {
  const o = need();
  const t0 = performance.now();
  send({
    id,
    kind: "progress",
    phase: "loading weights",
    transfer: o.transfer(),
  });
  if (o.format === "gguf") {
    model = await transformerFromGguf(o.file);
  } else if (o.format === "hf") {
    const tj = o.json["tokenizer.json"] as TokenizerJson | undefined;
    model = await transformerFromFiles({
      config: o.json["config.json"] as never,
      model: o.file,
      ...(tj ? { tokenizer: tj } : {}),
      ...(o.json["tokenizer_config.json"]
        ? { tokenizerConfig: o.json["tokenizer_config.json"] as never }
        : {}),
      ...(o.json["generation_config.json"]
        ? { generationConfig: o.json["generation_config.json"] as never }
        : {}),
    }, {
      ...(tj ? { tokenizer: createTokenizer(tj) } : {}),
      name: o.name,
    });
  } else {
    throw new TypeError(
      `The playground runs GGUF files and Hugging Face folders; this is ${o.format}`,
    );
  }
  const { source, family } = templateHint(o, model);
  send({
    id,
    kind: "loaded",
    model: {
      name: model.name,
      ...(family ? { templateFamily: family } : {}),
      ...(source ? { templateSource: source } : {}),
      ...(model.tokenizer?.bos !== undefined
        ? { bos: model.tokenizer.bos }
        : {}),
      vocab: model.config.vocabSize,
      ms: performance.now() - t0,
      kernels: kernelsText(),
    },
  });
}

function template(messages: ChatMessage[]): string {
  const o = need();
  if (!model) throw new TypeError("Load the model first");
  const { family } = templateHint(o, model);
  if (!family) {
    return "(no chat template fits this model: use completion mode)";
  }
  const tok = model.tokenizer;
  const bos = tok?.bos !== undefined ? tok.tokenText(tok.bos) : undefined;
  const eos = tok?.eos !== undefined ? tok.tokenText(tok.eos) : undefined;
  return CHAT_TEMPLATES[family](messages, {
    ...(bos !== undefined ? { bosToken: bos } : {}),
    ...(eos !== undefined ? { eosToken: eos } : {}),
  });
}

async function run(
  id: number,
  mode: "chat" | "complete",
  prompt: string,
  messages: ChatMessage[],
  s: SamplingSettings,
): Promise<void> {
  const m = model;
  if (!m) throw new TypeError("Load the model first");
  const ctl = new AbortController();
  running.set(id, ctl);
  try {
    const tok = m.tokenizer;
    // An empty completion prompt starts from BOS alone.
    const input = mode === "chat"
      ? messages
      : prompt === "" && tok?.bos !== undefined
      ? [tok.bos]
      : prompt;
    const it = generate(m, input, {
      maxTokens: s.maxTokens,
      greedy: s.greedy,
      temperature: s.temperature,
      topK: s.topK,
      topP: s.topP,
      repetitionPenalty: s.repetitionPenalty,
      seed: s.seed,
      stopAtEos: s.stopAtEos,
      signal: ctl.signal,
    });
    while (true) {
      const r = await it.next();
      if (r.done) {
        const v = r.value;
        send({
          id,
          kind: "generated",
          done: {
            finishReason: v.finishReason,
            promptTokens: v.promptIds.length,
            tokens: v.ids.length,
            ids: v.ids,
            text: v.text,
            prefillMs: v.prefillMs,
            decodeMs: v.decodeMs,
          },
        });
        return;
      }
      send({
        id,
        kind: "token",
        text: r.value.text,
        tokenId: r.value.id,
        index: r.value.index,
      });
      await yieldNow();
    }
  } finally {
    running.delete(id);
  }
}

async function handle(req: Request): Promise<void> {
  const { id } = req;
  switch (req.op) {
    case "open": {
      const t0 = performance.now();
      opened = undefined;
      model = undefined;
      send({
        id,
        kind: "progress",
        phase: "reading headers",
        transfer: { bytes: 0, requests: 0 },
      });
      const o = await openInput(req.input);
      opened = o;
      send({
        id,
        kind: "opened",
        summary: summarize(o),
        transfer: o.transfer(),
        ms: performance.now() - t0,
      });
      return;
    }
    case "tensor": {
      const o = need();
      const t0 = performance.now();
      const t = await o.file.models[0].tensors.load(req.name);
      const values = toFloat32(t);
      const stats = tensorStats(values);
      const heatmap = heatmapSlice(values, t.shape, { slice: req.slice });
      send({
        id,
        kind: "tensor",
        detail: {
          tensor: {
            name: t.name,
            dtype: t.dtype,
            shape: t.shape,
            elements: values.length,
            bytes: t.bytes.byteLength,
          },
          stats,
          heatmap,
          ms: performance.now() - t0,
        },
        transfer: o.transfer(),
      });
      return;
    }
    case "preview": {
      const o = need();
      const ctl = new AbortController();
      running.set(id, ctl);
      const t0 = performance.now();
      try {
        const preview = await previewQuantization(o.file, req.type, {
          signal: ctl.signal,
          onRow: (row, done, total) =>
            send({ id, kind: "previewRow", row, done, total }),
        });
        send({ id, kind: "preview", preview, ms: performance.now() - t0 });
      } finally {
        running.delete(id);
      }
      return;
    }
    case "convert": {
      const o = need();
      const out = await convertModel(o.file, req.type, o.name);
      send(
        { id, kind: "converted", fileName: out.fileName, bytes: out.bytes },
        [out.bytes.buffer as ArrayBuffer],
      );
      return;
    }
    case "load":
      return await load(id);
    case "template":
      send({ id, kind: "template", text: template(req.messages) });
      return;
    case "generate":
      return await run(id, req.mode, req.prompt, req.messages, req.settings);
    case "abort":
      running.get(req.target)?.abort(new Error("stopped"));
      return;
  }
}

self.onmessage = (e: MessageEvent<Request>) => {
  const req = e.data;
  handle(req).catch((err) =>
    send({ id: req.id, kind: "error", error: errorText(err) })
  );
};

// Kernel threads need shared memory, which a cross-origin isolated page has.
(async () => {
  if (self.crossOriginIsolated && (navigator.hardwareConcurrency ?? 1) > 1) {
    await configureKernels({
      threads: Math.min(4, navigator.hardwareConcurrency),
    }).catch(() => {});
  }
  send({ id: 0, kind: "ready", kernels: kernelsText() });
})();
