/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The Explore view (summary, layer diagram, bytes per dtype, tensor table,
 * metadata) and the Tensor view (statistics, histogram, heat map).
 *
 * @module
 */

import type { App } from "./app.ts";
import { bars, drawHeatmap, histogram } from "./_charts.ts";
import { byId, bytes, type Child, count, fill, h, num } from "./_dom.ts";
import type { ModelSummary, TensorRow } from "./_protocol.ts";

/** Rows of the tensor table before "Show all". */
const FIRST_ROWS = 500;

type SortKey = "name" | "dtype" | "elements" | "bytes" | "file";

/**
 * Wires sort buttons in a table head: clicking toggles the direction and
 * sets `aria-sort` on the header cells.
 *
 * @param table The table.
 * @param onSort Called with the key and direction.
 */
export function sortableHead(
  table: HTMLTableElement,
  onSort: (key: string, dir: 1 | -1) => void,
): void {
  let current = "";
  let dir: 1 | -1 = 1;
  for (const b of table.querySelectorAll<HTMLButtonElement>("th button")) {
    b.addEventListener("click", () => {
      const key = b.dataset.sort!;
      dir = key === current ? (dir === 1 ? -1 : 1) : b.closest("th")!.classList
          .contains("num")
        ? -1
        : 1;
      current = key;
      for (const th of table.querySelectorAll("th")) {
        th.setAttribute("aria-sort", "none");
      }
      b.closest("th")!.setAttribute(
        "aria-sort",
        dir === 1 ? "ascending" : "descending",
      );
      onSort(key, dir);
    });
  }
}

function fact(dl: HTMLElement, label: string, value: Child, stat?: string) {
  dl.append(h("dt", {}, label), h("dd", { "data-stat": stat }, value));
}

/**
 * Sets up the Explore and Tensor views.
 *
 * @param app The page.
 */
export function initExplore(app: App): void {
  const table = byId<HTMLTableElement>("tensor-table");
  const tbody = table.tBodies[0];
  const filter = byId<HTMLInputElement>("tensor-filter");
  const more = byId<HTMLButtonElement>("tensor-more");
  let sortKey: SortKey = "file";
  let sortDir: 1 | -1 = 1;
  let showAll = false;

  const renderTensors = () => {
    const s = app.summary;
    if (!s) return;
    const q = filter.value.trim().toLowerCase();
    let rows = s.tensors.filter((t) =>
      q === "" || t.name.toLowerCase().includes(q) ||
      t.dtype.toLowerCase() === q
    );
    if (sortKey !== "file") {
      const k = sortKey;
      rows = [...rows].sort((a, b) => {
        const x = a[k], y = b[k];
        return (typeof x === "number"
          ? (x as number) - (y as number)
          : String(x).localeCompare(String(y))) * sortDir;
      });
    }
    const shown = showAll ? rows : rows.slice(0, FIRST_ROWS);
    const frag = document.createDocumentFragment();
    for (const t of shown) frag.append(tensorRow(t));
    tbody.replaceChildren(frag);
    more.hidden = shown.length === rows.length;
    more.textContent = `Show all ${count(rows.length)}`;
    fill(
      byId("tensor-count"),
      rows.length === s.tensors.length
        ? `${count(s.tensors.length)}`
        : `${count(rows.length)} of ${count(s.tensors.length)}`,
    );
  };
  const tensorRow = (t: TensorRow) => {
    const open = h("button", { type: "button", "data-name": t.name }, t.name);
    open.addEventListener("click", () => app.showTensor(t.name));
    return h(
      "tr",
      {},
      h("td", { class: "name" }, open),
      h("td", {}, t.dtype),
      h("td", { class: "mono" }, `[${t.shape.join(", ")}]`),
      h("td", { class: "num" }, count(t.elements)),
      h("td", { class: "num", title: `${t.bytes} bytes` }, bytes(t.bytes)),
    );
  };
  filter.addEventListener("input", renderTensors);
  more.addEventListener("click", () => {
    showAll = true;
    renderTensors();
  });
  sortableHead(table, (key, dir) => {
    sortKey = key as SortKey;
    sortDir = dir;
    renderTensors();
  });

  const metaBody = byId<HTMLTableElement>("meta-table").tBodies[0];
  const metaFilter = byId<HTMLInputElement>("meta-filter");
  const renderMeta = () => {
    const s = app.summary;
    if (!s) return;
    const q = metaFilter.value.trim().toLowerCase();
    const rows = s.metadata.filter((m) =>
      q === "" || m.key.toLowerCase().includes(q) ||
      m.value.toLowerCase().includes(q)
    );
    const frag = document.createDocumentFragment();
    for (const m of rows) {
      frag.append(
        h(
          "tr",
          { "data-key": m.key },
          h("td", { class: "key" }, m.key),
          h("td", {}, m.type),
          h("td", { class: "value" }, m.value),
        ),
      );
    }
    metaBody.replaceChildren(frag);
    fill(
      byId("meta-count"),
      rows.length === s.metadata.length
        ? count(s.metadata.length)
        : `${count(rows.length)} of ${count(s.metadata.length)}`,
    );
  };
  metaFilter.addEventListener("input", renderMeta);

  app.onModel((s: ModelSummary) => {
    byId("explore-empty").hidden = true;
    byId("explore-body").hidden = false;
    const dl = byId("summary");
    dl.replaceChildren();
    const a = s.arch;
    fact(dl, "Name", s.name);
    fact(dl, "Format", s.format);
    fact(dl, "Source", h("span", { class: "mono" }, s.source));
    fact(dl, "Size", `${bytes(s.size)} (${count(s.size)} bytes)`);
    if (s.models.length > 1) {
      fact(dl, "Models", `${s.models.join(", ")} (showing the first)`);
    }
    if (a.family) fact(dl, "Family", a.family);
    fact(dl, "Parameters", count(a.parameters), "parameters");
    if (a.layers !== undefined) fact(dl, "Layers", count(a.layers));
    if (a.hidden !== undefined) fact(dl, "Hidden size", count(a.hidden));
    if (a.heads !== undefined) {
      fact(
        dl,
        "Heads",
        `${a.heads}${a.kvHeads !== undefined ? ` (${a.kvHeads} KV)` : ""}`,
      );
    }
    if (a.ffn !== undefined) fact(dl, "Feed-forward", count(a.ffn));
    if (a.context !== undefined) fact(dl, "Context", count(a.context));
    if (a.vocab !== undefined) fact(dl, "Vocabulary", count(a.vocab));
    fact(dl, "Tensors", count(s.tensors.length), "tensors");
    for (const n of a.notes) fact(dl, "Note", n);
    fill(
      byId("dtype-chart"),
      bars(
        s.dtypes.map((d) => ({
          label: d.dtype,
          value: d.bytes,
          text: `${bytes(d.bytes)} · ${d.tensors} tensor${
            d.tensors === 1 ? "" : "s"
          }`,
        })),
        "Bytes per dtype",
      ),
    );
    const diagram = byId("diagram");
    diagram.replaceChildren();
    for (const b of s.diagram) {
      diagram.append(
        h(
          "li",
          {},
          h(
            "details",
            {},
            h(
              "summary",
              {},
              h("strong", {}, b.label),
              b.repeat && b.repeat > 1
                ? h("span", { class: "repeat" }, ` ×${b.repeat}`)
                : null,
              ` · ${count(b.parameters)} parameters`,
            ),
            h("p", { class: "items" }, b.items.join(", ")),
          ),
          h("div", { class: "hint" }, b.detail),
        ),
      );
    }
    filter.value = "";
    metaFilter.value = "";
    showAll = false;
    renderTensors();
    renderMeta();
    const list = byId("tensor-names");
    list.replaceChildren(
      ...s.tensors.slice(0, 5000).map((t) => h("option", { value: t.name })),
    );
  });

  initTensorView(app);
}

function initTensorView(app: App): void {
  const pick = byId<HTMLInputElement>("tensor-pick");
  const slice = byId<HTMLInputElement>("slice-input");
  let current = "";
  let seq = 0;
  const show = async (name: string, sliceIndex = 0) => {
    current = name;
    pick.value = name;
    const mine = ++seq;
    byId("tensor-empty").hidden = true;
    const body = byId("tensor-body");
    body.setAttribute("aria-busy", "true");
    app.status(`Reading ${name}…`);
    try {
      const r = await app.client.send({ op: "tensor", name, slice: sliceIndex })
        .done;
      if (r.kind !== "tensor" || mine !== seq) return;
      const { tensor: t, stats: st, heatmap } = r.detail;
      body.hidden = false;
      fill(byId("tensor-title"), t.name);
      const dl = byId("tensor-stats");
      dl.replaceChildren();
      fact(dl, "Shape", `[${t.shape.join(", ")}]`, "shape");
      fact(dl, "Dtype", t.dtype, "dtype");
      fact(dl, "Elements", count(t.elements), "elements");
      fact(dl, "Bytes", bytes(t.bytes), "bytes");
      for (
        const [label, key, v] of [
          ["Min", "min", st.min],
          ["Max", "max", st.max],
          ["Mean", "mean", st.mean],
          ["Std", "std", st.std],
        ] as const
      ) {
        const dd = h("span", { title: String(v) }, num(v));
        dd.dataset.value = String(v);
        fact(dl, label, dd, key);
      }
      fact(dl, "Zeros", count(st.zeros), "zeros");
      fact(dl, "NaN", count(st.nan), "nan");
      fact(dl, "Inf", count(st.inf), "inf");
      fact(dl, "Time", `${r.detail.ms.toFixed(0)} ms (worker)`);
      fill(byId("histogram"), histogram(st.histogram, st.min, st.max));
      drawHeatmap(byId<HTMLCanvasElement>("heatmap"), heatmap);
      byId("slice-row").hidden = heatmap.slices <= 1;
      slice.max = String(Math.max(0, heatmap.slices - 1));
      slice.value = String(heatmap.slice);
      fill(byId("slice-of"), `of ${heatmap.slices}`);
      fill(
        byId("heat-legend"),
        `${heatmap.sliceRows}×${heatmap.sliceCols}${
          heatmap.rows !== heatmap.sliceRows ||
            heatmap.cols !== heatmap.sliceCols
            ? ` averaged to ${heatmap.rows}×${heatmap.cols}`
            : ""
        }; blue ${
          num(-Math.max(Math.abs(heatmap.min), Math.abs(heatmap.max)))
        }, white 0, red ${
          num(Math.max(Math.abs(heatmap.min), Math.abs(heatmap.max)))
        }`,
      );
      app.status(
        `${t.name}: ${
          bytes(r.transfer.bytes)
        } read so far in ${r.transfer.requests} reads`,
      );
      document.body.dataset.transferBytes = String(r.transfer.bytes);
    } catch (e) {
      if (mine === seq) app.status((e as Error).message, true);
    } finally {
      if (mine === seq) body.removeAttribute("aria-busy");
    }
  };
  app.tensorHandler = (name) => show(name);
  byId("tensor-form").addEventListener("submit", (e) => {
    e.preventDefault();
    if (pick.value) show(pick.value.trim());
  });
  slice.addEventListener("change", () => {
    if (current) show(current, Math.max(0, Number(slice.value) | 0));
  });
}
