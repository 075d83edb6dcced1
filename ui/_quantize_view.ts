/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The Quantize view: pick a type, see each tensor's error and the file
 * size before converting, then convert and download.
 *
 * @module
 */

import type { App } from "./app.ts";
import { bars } from "./_charts.ts";
import { byId, bytes, count, fill, h, num } from "./_dom.ts";
import { sortableHead } from "./_explore.ts";
import type { PreviewRow, PreviewType } from "./_quant.ts";

/** The menu, with what each type is (kept here so the page script does not load the codecs). */
const TYPES: [PreviewType, string][] = [
  ["Q8_0", "Q8_0 · 8.5 bits, GGUF"],
  ["Q6_K", "Q6_K · 6.56 bits, GGUF"],
  ["Q5_K", "Q5_K · 5.5 bits, GGUF"],
  ["Q5_1", "Q5_1 · 6 bits, GGUF"],
  ["Q5_0", "Q5_0 · 5.5 bits, GGUF"],
  ["Q4_K", "Q4_K · 4.5 bits, GGUF"],
  ["Q4_1", "Q4_1 · 5 bits, GGUF"],
  ["Q4_0", "Q4_0 · 4.5 bits, GGUF"],
  ["Q3_K", "Q3_K · 3.44 bits, GGUF"],
  ["Q2_K", "Q2_K · 2.63 bits, GGUF"],
  ["F16", "F16 · 16 bits"],
  ["BF16", "BF16 · 16 bits"],
  ["F8_E4M3", "F8_E4M3 · 8 bits, SafeTensors"],
  ["F8_E5M2", "F8_E5M2 · 8 bits, SafeTensors"],
  ["I8", "I8 · 8 bits + row scales, SafeTensors"],
];

/** Tensors in the error chart (the worst ones). */
const CHART_ROWS = 24;

/**
 * Sets up the Quantize view.
 *
 * @param app The page.
 */
export function initQuantize(app: App): void {
  const select = byId<HTMLSelectElement>("quant-type");
  select.append(...TYPES.map(([v, label]) => h("option", { value: v }, label)));
  const run = byId<HTMLButtonElement>("quant-run");
  const stop = byId<HTMLButtonElement>("quant-stop");
  const convert = byId<HTMLButtonElement>("quant-convert");
  const progress = byId<HTMLProgressElement>("quant-progress");
  const status = byId("quant-status");
  const table = byId<HTMLTableElement>("quant-table");
  let rows: PreviewRow[] = [];
  let sortKey: keyof PreviewRow | "" = "";
  let dir: 1 | -1 = 1;
  let running: number | undefined;
  let previewed: PreviewType | undefined;

  const render = () => {
    let list = rows;
    if (sortKey) {
      const k = sortKey;
      list = [...rows].sort((a, b) => {
        const x = a[k], y = b[k];
        return (typeof x === "number"
          ? (x as number) - (y as number)
          : String(x).localeCompare(String(y))) * dir;
      });
    }
    const frag = document.createDocumentFragment();
    for (const r of list) {
      frag.append(
        h(
          "tr",
          { "data-name": r.name },
          h("td", { class: "name" }, r.name),
          h("td", {}, r.from),
          h("td", { title: r.note }, r.to, r.note ? " *" : ""),
          h(
            "td",
            { class: "num", title: `${r.bytesAfter} bytes` },
            bytes(r.bytesAfter),
          ),
          h(
            "td",
            { class: "num", "data-stat": "rmse", title: String(r.rmse) },
            num(r.rmse),
          ),
          h("td", {
            class: "num",
            "data-stat": "cosine",
            title: String(r.cosine),
          }, num(r.cosine)),
          h("td", {
            class: "num",
            "data-stat": "max",
            title: String(r.maxError),
          }, num(r.maxError)),
        ),
      );
    }
    table.tBodies[0].replaceChildren(frag);
  };
  sortableHead(table, (key, d) => {
    sortKey = key as keyof PreviewRow;
    dir = d;
    render();
  });

  app.onModel(() => {
    byId("quant-empty").hidden = true;
    byId("quant-body").hidden = false;
    rows = [];
    previewed = undefined;
    render();
    fill(byId("quant-chart"));
    byId("quant-summary").hidden = true;
    convert.disabled = true;
    status.textContent = "";
  });

  byId("quant-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (running !== undefined) return;
    const type = select.value as PreviewType;
    rows = [];
    render();
    fill(byId("quant-chart"));
    byId("quant-summary").hidden = true;
    convert.disabled = true;
    progress.hidden = false;
    progress.value = 0;
    run.disabled = true;
    stop.disabled = false;
    status.textContent = `Previewing ${type}…`;
    const req = app.client.send({ op: "preview", type }, (r) => {
      if (r.kind !== "previewRow") return;
      rows.push(r.row);
      progress.max = r.total;
      progress.value = r.done;
      status.textContent = `${r.done} of ${r.total} tensors`;
      if (r.done % 16 === 0 || r.done === r.total) render();
    });
    running = req.id;
    try {
      const r = await req.done;
      if (r.kind !== "preview") return;
      const p = r.preview;
      rows = p.rows;
      previewed = type;
      render();
      const dl = byId("quant-summary");
      dl.hidden = false;
      dl.replaceChildren(
        h("dt", {}, "Writes"),
        h("dd", {}, p.container === "gguf" ? "GGUF" : "SafeTensors"),
        h("dt", {}, "File size"),
        h(
          "dd",
          { "data-stat": "file-bytes", title: `${p.fileBytes} bytes` },
          `${bytes(p.fileBytes)} (${count(p.fileBytes)} bytes)`,
        ),
        h("dt", {}, "Tensor bytes"),
        h(
          "dd",
          { "data-stat": "tensor-bytes" },
          `${bytes(p.tensorBytesBefore)} → ${bytes(p.tensorBytes)}`,
        ),
        h("dt", {}, "Worst RMSE"),
        h("dd", {}, num(Math.max(0, ...p.rows.map((x) => x.rmse)))),
        h("dt", {}, "Time"),
        h("dd", {}, `${r.ms.toFixed(0)} ms (worker)`),
      );
      const worst = [...p.rows].sort((a, b) => b.rmse - a.rmse).slice(
        0,
        CHART_ROWS,
      );
      fill(
        byId("quant-chart"),
        h(
          "h2",
          {},
          `RMSE per tensor${
            p.rows.length > CHART_ROWS ? ` (worst ${CHART_ROWS})` : ""
          }`,
        ),
        bars(
          worst.map((x) => ({
            label: x.name,
            value: x.rmse,
            text: num(x.rmse),
          })),
          "RMSE per tensor",
        ),
      );
      status.textContent = `${type}: ${p.rows.length} tensors, ${
        bytes(p.fileBytes)
      }`;
      convert.disabled = false;
      document.body.dataset.previewDone = type;
    } catch (err) {
      status.textContent = (err as Error).message;
      app.status((err as Error).message, true);
    } finally {
      running = undefined;
      progress.hidden = true;
      run.disabled = false;
      stop.disabled = true;
    }
  });
  stop.addEventListener("click", () => {
    if (running !== undefined) app.client.abort(running);
  });
  let lastUrl: string | undefined;
  convert.addEventListener("click", async () => {
    if (!previewed) return;
    convert.disabled = true;
    const cs = byId("convert-status");
    cs.textContent = `Converting to ${previewed}…`;
    try {
      const r = await app.client.send({ op: "convert", type: previewed }).done;
      if (r.kind !== "converted") return;
      if (lastUrl) URL.revokeObjectURL(lastUrl);
      lastUrl = URL.createObjectURL(new Blob([r.bytes as BlobPart]));
      const a = document.createElement("a");
      a.href = lastUrl;
      a.download = r.fileName;
      a.textContent = `Download ${r.fileName}`;
      fill(cs, a, ` (${bytes(r.bytes.byteLength)})`);
      cs.dataset.bytes = String(r.bytes.byteLength);
      a.click();
    } catch (err) {
      cs.textContent = (err as Error).message;
    } finally {
      convert.disabled = false;
    }
  });
}
