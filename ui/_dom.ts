/// <reference lib="dom" />
/**
 * DOM helpers of the page. Everything that comes from a model file (names,
 * metadata, generated text) goes into the page as text nodes: `h` takes
 * children as strings or nodes and never parses HTML, and attributes are
 * set one by one from a fixed list of names.
 *
 * @module
 */

/** Attributes `h` may set (a fixed list: no event handlers, no URLs from data). */
type Attr =
  | "class"
  | "id"
  | "type"
  | "title"
  | "role"
  | "tabindex"
  | "colspan"
  | "scope"
  | "for"
  | "value"
  | "min"
  | "max"
  | "step"
  | "hidden"
  | "disabled"
  | "aria-label"
  | "aria-sort"
  | "aria-live"
  | "aria-busy"
  | "aria-hidden"
  | "aria-current"
  | "aria-describedby"
  | "aria-valuenow"
  | "data-name"
  | "data-stat"
  | "data-key"
  | "data-role"
  | "data-sort"
  | "viewBox"
  | "width"
  | "height"
  | "x"
  | "y"
  | "preserveAspectRatio";

/** A child of {@link h}: text (inserted as a text node), a node, or nothing. */
export type Child = string | number | Node | null | undefined | false;

/**
 * Creates an element with attributes and children. Strings become text
 * nodes, so markup in model data shows as the characters it is.
 *
 * @param tag Tag name.
 * @param attrs Attributes (from a fixed list); `false`/`undefined` values are skipped.
 * @param children Text and nodes.
 * @returns The element.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Partial<Record<Attr, string | number | boolean | undefined>> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/**
 * Creates an SVG element (same rules as {@link h}).
 *
 * @param tag Tag name.
 * @param attrs Attributes.
 * @param children Text and nodes.
 * @returns The element.
 */
export function s(
  tag: string,
  attrs: Partial<Record<Attr, string | number | boolean | undefined>> = {},
  ...children: Child[]
): SVGElement {
  const el = document.createElementNS(SVG, tag) as SVGElement;
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(
  el: Element,
  attrs: Partial<Record<Attr, string | number | boolean | undefined>>,
): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

/**
 * Replaces an element's children.
 *
 * @param el The element.
 * @param children The new children.
 */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/**
 * The element with an id, typed; throws when the page lacks it.
 *
 * @param id The id.
 * @returns The element.
 */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`The page has no element #${id}`);
  return el as T;
}

/**
 * Bytes as text (`1.5 MiB`).
 *
 * @param n Bytes.
 * @returns The text.
 */
export function bytes(n: number): string {
  if (!Number.isFinite(n)) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let u = 0;
  let v = n;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

/**
 * A count with thousands separators (`1,234,567`).
 *
 * @param n The count.
 * @returns The text.
 */
export function count(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "?";
}

/**
 * A number short enough for a table cell (6 significant digits; exact
 * `String(x)` is in the cell's `title`).
 *
 * @param x The number.
 * @returns The text.
 */
export function num(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  if (x === 0) return "0";
  const a = Math.abs(x);
  return a >= 1e-4 && a < 1e6 ? String(+x.toPrecision(6)) : x.toExponential(4);
}
