/// <reference lib="dom" />
/**
 * The page's charts: horizontal bars (bytes per dtype, quantization error),
 * a histogram (SVG) and a heat map (canvas). Each chart also carries its
 * numbers as text (labels, `aria-label`) for screen readers.
 *
 * @module
 */

import { h, num, s } from "./_dom.ts";
import type { Heatmap } from "./_stats.ts";

/** One bar of {@link bars}. */
export interface Bar {
  /** Label on the left. */
  label: string;
  /** Length of the bar. */
  value: number;
  /** Text on the right (the value as it should read). */
  text: string;
}

/**
 * A list of horizontal bars scaled to the largest value.
 *
 * @param items The bars.
 * @param label What the chart shows (for screen readers).
 * @returns The chart element.
 */
export function bars(items: Bar[], label: string): HTMLElement {
  const top = Math.max(0, ...items.map((b) => b.value));
  const list = h("ul", { class: "bars", "aria-label": label });
  for (const b of items) {
    const fill = h("span", { class: "bar-fill" });
    fill.style.width = `${top > 0 ? Math.max(0.5, (b.value / top) * 100) : 0}%`;
    list.append(
      h(
        "li",
        {},
        h("span", { class: "bar-label", title: b.label }, b.label),
        h("span", { class: "bar-track", "aria-hidden": "true" }, fill),
        h("span", { class: "bar-value" }, b.text),
      ),
    );
  }
  return list;
}

/**
 * A histogram as SVG bars over `[min, max]`.
 *
 * @param counts Counts per bin.
 * @param min Left edge.
 * @param max Right edge.
 * @returns The chart (a figure with an SVG and its axis labels).
 */
export function histogram(
  counts: number[],
  min: number,
  max: number,
): HTMLElement {
  const W = 640, H = 160;
  const top = Math.max(1, ...counts);
  const bw = W / Math.max(1, counts.length);
  const svg = s("svg", {
    viewBox: `0 0 ${W} ${H}`,
    preserveAspectRatio: "none",
    role: "img",
    "aria-label": `Histogram of ${counts.length} bins from ${num(min)} to ${
      num(max)
    }; the fullest bin holds ${top} values`,
  });
  counts.forEach((c, i) => {
    if (c === 0) return;
    // Bins with a few values stay visible next to bins with thousands.
    const height = Math.max(1.5, (c / top) * (H - 2));
    svg.append(s("rect", {
      x: (i * bw).toFixed(2),
      y: (H - height).toFixed(2),
      width: Math.max(0.5, bw - 1).toFixed(2),
      height: height.toFixed(2),
      class: "hist-bar",
    }, s("title", {}, `${c} values in bin ${i}`)));
  });
  return h(
    "figure",
    { class: "histogram" },
    svg,
    h(
      "figcaption",
      { class: "axis" },
      h("span", {}, num(min)),
      h("span", {}, num(max)),
    ),
  );
}

/** RGB of a value on a blue–white–red scale, `t` in [-1, 1]. */
function diverging(t: number): [number, number, number] {
  if (!Number.isFinite(t)) return [128, 128, 128];
  const a = Math.min(1, Math.abs(t));
  // From white towards #2166ac (negative) or #b2182b (positive).
  const [r, g, b] = t < 0 ? [33, 102, 172] : [178, 24, 43];
  return [
    Math.round(255 + (r - 255) * a),
    Math.round(255 + (g - 255) * a),
    Math.round(255 + (b - 255) * a),
  ];
}

/**
 * Draws a heat map into a canvas: one pixel per cell, zero white, the
 * largest magnitude full blue (negative) or red (positive); CSS scales it.
 *
 * @param canvas The canvas.
 * @param map The cells.
 */
export function drawHeatmap(canvas: HTMLCanvasElement, map: Heatmap): void {
  canvas.width = Math.max(1, map.cols);
  canvas.height = Math.max(1, map.rows);
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const img = ctx.createImageData(canvas.width, canvas.height);
  const scale = Math.max(Math.abs(map.min), Math.abs(map.max)) || 1;
  for (let i = 0; i < map.values.length; i++) {
    const [r, g, b] = diverging(map.values[i] / scale);
    img.data[i * 4] = r;
    img.data[i * 4 + 1] = g;
    img.data[i * 4 + 2] = b;
    img.data[i * 4 + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
  canvas.setAttribute(
    "aria-label",
    `Heat map of slice ${map.slice} (${map.sliceRows}×${map.sliceCols}${
      map.rows !== map.sliceRows || map.cols !== map.sliceCols
        ? `, averaged to ${map.rows}×${map.cols}`
        : ""
    }), values ${num(map.min)} to ${num(map.max)}`,
  );
}
