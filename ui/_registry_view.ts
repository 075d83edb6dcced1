/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The Registry view of a modelhost server: models and versions with their
 * provenance, what is loaded and the memory it holds, upload and delete
 * (with the server's bearer token, kept in this page's memory only).
 *
 * @module
 */

import type { App } from "./app.ts";
import { serverUrl } from "./_chat.ts";
import { byId, bytes, count, fill, h } from "./_dom.ts";

interface VersionJson {
  name: string;
  version: string;
  format?: string;
  bytes?: number;
  parameters?: number;
  loaded?: boolean;
  provenance?: Record<string, unknown> | null;
  error?: string;
}

interface ModelJson {
  name: string;
  versions: VersionJson[];
}

/** Reads one gauge from Prometheus text (`name value` lines). */
function gauge(text: string, name: string): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) {
      const v = Number(line.slice(line.lastIndexOf(" ") + 1));
      if (Number.isFinite(v)) return v;
    }
  }
  return undefined;
}

async function errorOf(res: Response): Promise<string> {
  const t = await res.text();
  try {
    return `${res.status}: ${JSON.parse(t).error ?? t}`;
  } catch {
    return `${res.status}: ${t}`;
  }
}

/**
 * Sets up the Registry view.
 *
 * @param app The page.
 */
export function initRegistry(app: App): void {
  const url = byId<HTMLInputElement>("reg-url");
  if (location.protocol.startsWith("http")) url.placeholder = location.origin;
  const token = byId<HTMLInputElement>("reg-token");
  const tbody = byId<HTMLTableElement>("reg-table").tBodies[0];
  const memory = byId("reg-memory");
  const auth = (): Record<string, string> =>
    token.value ? { authorization: `Bearer ${token.value}` } : {};

  const refresh = async () => {
    const base = serverUrl();
    if (!base) {
      fill(memory, "Give the server's URL.");
      return;
    }
    try {
      const [models, metrics] = await Promise.all([
        fetch(`${base}/v1/models`),
        fetch(`${base}/metrics`).catch(() => undefined),
      ]);
      if (!models.ok) throw new Error(await errorOf(models));
      const j = await models.json() as { models: ModelJson[] };
      const frag = document.createDocumentFragment();
      for (const m of j.models) {
        for (const v of m.versions) frag.append(row(v));
      }
      if (j.models.length === 0) {
        frag.append(h("tr", {}, h("td", { colspan: 8 }, "No models yet.")));
      }
      tbody.replaceChildren(frag);
      const versions = j.models.reduce((s, m) => s + m.versions.length, 0);
      const loaded = j.models.flatMap((m) => m.versions).filter((v) =>
        v.loaded
      );
      let mem = "";
      if (metrics?.ok) {
        const t = await metrics.text();
        const b = gauge(t, "modelhost_model_cache_bytes");
        if (b !== undefined) mem = `; ${bytes(b)} of weights in memory`;
      }
      fill(
        memory,
        `${count(j.models.length)} models, ${
          count(versions)
        } versions; loaded: ${
          loaded.length === 0
            ? "none"
            : loaded.map((v) => `${v.name}@${v.version}`).join(", ")
        }${mem}`,
      );
      document.body.dataset.registryModels = String(j.models.length);
    } catch (e) {
      fill(memory, `Cannot list ${base}: ${(e as Error).message}`);
    }
  };

  const row = (v: VersionJson) => {
    const del = h("button", {
      type: "button",
      "aria-label": `Delete ${v.name} version ${v.version}`,
    }, "Delete");
    del.addEventListener("click", async () => {
      if (!confirm(`Delete ${v.name}@${v.version}?`)) return;
      const res = await fetch(
        `${serverUrl()}/v1/models/${encodeURIComponent(v.name)}/versions/${
          encodeURIComponent(v.version)
        }`,
        { method: "DELETE", headers: auth() },
      );
      if (!res.ok) app.status(`Delete failed: ${await errorOf(res)}`, true);
      else app.status(`Deleted ${v.name}@${v.version}`);
      await refresh();
    });
    const prov = v.provenance && typeof v.provenance === "object"
      ? Object.entries(v.provenance).map(([k, x]) => `${k}: ${String(x)}`).join(
        "; ",
      )
      : "";
    return h(
      "tr",
      { "data-name": `${v.name}@${v.version}` },
      h("td", { class: "name" }, v.name),
      h("td", {}, v.version),
      h(
        "td",
        {},
        v.format ?? "",
        v.error ? h("span", { class: "error" }, ` (${v.error})`) : null,
      ),
      h("td", { class: "num" }, v.bytes !== undefined ? bytes(v.bytes) : ""),
      h(
        "td",
        { class: "num" },
        v.parameters !== undefined ? count(v.parameters) : "",
      ),
      h("td", {}, v.loaded ? "yes" : "no"),
      h("td", { class: "value" }, prov),
      h("td", {}, del),
    );
  };

  byId("reg-form").addEventListener("submit", (e) => {
    e.preventDefault();
    refresh();
  });
  addEventListener("hashchange", () => {
    if (location.hash === "#registry") refresh();
  });
  if (location.hash === "#registry") refresh();

  const progress = byId<HTMLProgressElement>("up-progress");
  const status = byId("up-status");
  byId("upload-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const name = byId<HTMLInputElement>("up-name").value.trim();
    const version = byId<HTMLInputElement>("up-version").value.trim();
    const file = byId<HTMLInputElement>("up-file").files?.[0];
    if (!name || !file) return;
    const q = new URLSearchParams();
    if (version) q.set("version", version);
    const xhr = new XMLHttpRequest();
    xhr.open(
      "POST",
      `${serverUrl()}/v1/models/${encodeURIComponent(name)}${
        q.size ? `?${q}` : ""
      }`,
    );
    for (const [k, v] of Object.entries(auth())) xhr.setRequestHeader(k, v);
    progress.hidden = false;
    progress.value = 0;
    status.textContent = `Uploading ${file.name}…`;
    xhr.upload.onprogress = (p) => {
      if (p.lengthComputable) progress.value = p.loaded / p.total;
    };
    xhr.onload = () => {
      progress.hidden = true;
      if (xhr.status >= 200 && xhr.status < 300) {
        const v = JSON.parse(xhr.responseText) as VersionJson;
        status.textContent = `Uploaded ${v.name}@${v.version} (${
          bytes(v.bytes ?? file.size)
        })`;
      } else {
        let msg = xhr.responseText;
        try {
          msg = JSON.parse(msg).error ?? msg;
        } catch { /* text */ }
        status.textContent = `Upload failed: ${xhr.status}: ${msg}`;
      }
      refresh();
    };
    xhr.onerror = () => {
      progress.hidden = true;
      status.textContent = "Upload failed: the server could not be reached";
    };
    xhr.send(file);
  });
}
