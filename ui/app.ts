/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The modelhost page: Open, Explore, Tensor, Quantize, Playground and
 * Registry views over one worker that does the model work. Views are
 * sections of `index.html` shown by the URL's hash.
 *
 * @module
 */

import { Client } from "./_client.ts";
import { byId, bytes, count, fill } from "./_dom.ts";
import { initExplore } from "./_explore.ts";
import { initChat } from "./_chat.ts";
import type {
  LocalFile,
  ModelSummary,
  OpenInput,
  Transfer,
} from "./_protocol.ts";
import { initQuantize } from "./_quantize_view.ts";
import { initRegistry } from "./_registry_view.ts";

/** The views, in menu order. */
export const VIEWS = [
  "open",
  "explore",
  "tensor",
  "quantize",
  "chat",
  "registry",
] as const;
/** One view. */
export type View = typeof VIEWS[number];

/** What the views share. */
export interface App {
  /** The worker. */
  client: Client;
  /** The open model's summary. */
  summary: ModelSummary | undefined;
  /** Shows a line in the status bar. */
  status(text: string, error?: boolean): void;
  /** Switches to a view (and moves focus to its heading). */
  go(view: View): void;
  /** Calls `fn` whenever a model has been opened. */
  onModel(fn: (s: ModelSummary) => void): void;
  /** Opens one tensor in the Tensor view. */
  showTensor(name: string): void;
  /** Registered by the Tensor view. */
  tensorHandler?: (name: string) => void;
}

function transferText(t: Transfer): string {
  return `${bytes(t.bytes)} read in ${count(t.requests)} ${
    t.requests === 1 ? "read" : "reads"
  }`;
}

function main(): void {
  const client = new Client(new URL("./worker.js", import.meta.url));
  const listeners: ((s: ModelSummary) => void)[] = [];
  const statusEl = byId("status");
  const app: App = {
    client,
    summary: undefined,
    status(text, error = false) {
      statusEl.textContent = text;
      statusEl.classList.toggle("error", error);
    },
    go(view) {
      if (location.hash !== `#${view}`) location.hash = `#${view}`;
      else show(view, true);
    },
    onModel(fn) {
      listeners.push(fn);
    },
    showTensor(name) {
      app.go("tensor");
      app.tensorHandler?.(name);
    },
  };

  const show = (view: View, focus: boolean) => {
    for (const v of VIEWS) byId(`view-${v}`).hidden = v !== view;
    for (const a of document.querySelectorAll<HTMLAnchorElement>("nav a")) {
      if (a.dataset.view === view) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    if (focus) byId(`h-${view}`).focus();
  };
  const fromHash = (focus: boolean) => {
    const v = location.hash.slice(1) as View;
    show(VIEWS.includes(v) ? v : "open", focus);
  };
  addEventListener("hashchange", () => fromHash(true));
  // The current view's link moves focus to its heading too.
  for (const a of document.querySelectorAll<HTMLAnchorElement>("nav a")) {
    a.addEventListener("click", (e) => {
      if (a.hash === location.hash) {
        e.preventDefault();
        show(a.dataset.view as View, true);
      }
    });
  }
  fromHash(false);

  // ---- Open ----
  const progress = byId<HTMLProgressElement>("open-progress");
  const openStatus = byId("open-status");
  let opening = 0;
  const open = async (input: OpenInput, label: string) => {
    const mine = ++opening;
    progress.hidden = false;
    progress.removeAttribute("value");
    openStatus.textContent = `Opening ${label}…`;
    app.status(`Opening ${label}…`);
    const { done } = client.send({ op: "open", input }, (r) => {
      if (r.kind === "progress" && mine === opening) {
        openStatus.textContent = `${r.phase}: ${transferText(r.transfer)}`;
      }
    });
    try {
      const r = await done;
      if (r.kind !== "opened" || mine !== opening) return;
      app.summary = r.summary;
      const s = r.summary;
      fill(byId("model-name"), `${s.name} · ${s.format}`);
      openStatus.textContent = `Opened ${s.name}: ${
        count(s.tensors.length)
      } tensors, ${transferText(r.transfer)} in ${r.ms.toFixed(0)} ms`;
      app.status(openStatus.textContent);
      document.body.dataset.transferBytes = String(r.transfer.bytes);
      for (const fn of listeners) fn(s);
      document.body.dataset.opens = String(
        Number(document.body.dataset.opens ?? 0) + 1,
      );
      app.go("explore");
    } catch (e) {
      if (mine !== opening) return;
      openStatus.textContent = (e as Error).message;
      app.status((e as Error).message, true);
    } finally {
      if (mine === opening) progress.hidden = true;
    }
  };

  const openFiles = (files: LocalFile[]) => {
    if (files.length === 0) return;
    const top = files[0].path.split("/")[0];
    open({ kind: "files", files }, files.length === 1 ? files[0].path : top);
  };
  const fileInput = byId<HTMLInputElement>("file-input");
  fileInput.addEventListener("change", () => {
    openFiles(
      [...fileInput.files ?? []].map((f) => ({ path: f.name, blob: f })),
    );
    fileInput.value = "";
  });
  const folderInput = byId<HTMLInputElement>("folder-input");
  folderInput.addEventListener("change", () => {
    openFiles(
      [...folderInput.files ?? []].map((f) => ({
        path: f.webkitRelativePath || f.name,
        blob: f,
      })),
    );
    folderInput.value = "";
  });
  byId("url-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const url = byId<HTMLInputElement>("url-input").value.trim();
    if (url) open({ kind: "url", url }, url);
  });
  const drop = byId("drop");
  drop.addEventListener("click", () => fileInput.click());
  drop.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      fileInput.click();
    }
  });
  const over = (on: boolean) => drop.classList.toggle("over", on);
  addEventListener("dragover", (e) => {
    e.preventDefault();
    over(true);
  });
  addEventListener("dragleave", () => over(false));
  addEventListener("drop", async (e) => {
    e.preventDefault();
    over(false);
    const items = [...e.dataTransfer?.items ?? []];
    const entries = items.map((i) => i.webkitGetAsEntry?.()).filter((x) =>
      x
    ) as FileSystemEntry[];
    const files: LocalFile[] = [];
    if (entries.length > 0) {
      for (const entry of entries) await collect(entry, "", files);
    } else {
      for (const f of e.dataTransfer?.files ?? []) {
        files.push({ path: f.name, blob: f });
      }
    }
    app.go("open");
    openFiles(files);
  });

  initExplore(app);
  initQuantize(app);
  initChat(app);
  initRegistry(app);
  // The controls answer from here on; opening a model waits for the worker.
  document.body.dataset.appMs = performance.now().toFixed(0);

  client.ready.then((kernels) => {
    // Time from navigation start to a page whose worker answers (docs/ui.md).
    document.body.dataset.readyMs = performance.now().toFixed(0);
    document.body.dataset.ready = "1";
    document.body.dataset.kernels = kernels;
  }, (e) => app.status((e as Error).message, true));
}

/** Lists the files under a dropped entry, with their paths. */
async function collect(
  entry: FileSystemEntry,
  prefix: string,
  out: LocalFile[],
): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((res, rej) =>
      (entry as FileSystemFileEntry).file(res, rej)
    );
    out.push({ path: prefix + entry.name, blob: file });
    return;
  }
  if (!entry.isDirectory) return;
  const reader = (entry as FileSystemDirectoryEntry).createReader();
  while (true) {
    const batch = await new Promise<FileSystemEntry[]>((res, rej) =>
      reader.readEntries(res, rej)
    );
    if (batch.length === 0) break;
    for (const e of batch) await collect(e, `${prefix}${entry.name}/`, out);
  }
}

main();
