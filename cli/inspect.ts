// `inspect`: reads headers through the registry and reports format,
// metadata, tensors, detected architecture and totals, as text or JSON.

import { join } from "@std/path";
import type { Model } from "../core/model.ts";
import { elementCount } from "../core/errors.ts";
import type { Registry } from "../registry.ts";
import { openModel } from "../io/open.ts";
import { fileSource } from "../io/file.ts";
import { ggufModelFile, isGguf, readGgufHeader } from "../formats/gguf/mod.ts";
import { detectArchitecture } from "../models/detect.ts";
import { parseFlags } from "./_args.ts";
import { type Command, JSON_FLAG, needFiles } from "./_command.ts";

/** One row of the tensor table. */
interface TensorRow {
  name: string;
  dtype: string;
  shape: number[];
  params: number;
  bytes: number;
  offset: number | null;
  /** What the tensor is for in a Llama-family model (`unknown` otherwise). */
  role: string;
}

/** The architecture `inspect` detected from tensor names, shapes and metadata. */
interface ArchitectureReport {
  family: string;
  naming: string;
  /** Tensor count per role. */
  roles: Record<string, number>;
  /** Hyperparameters, when the family is known and the shapes agree. */
  config: Record<string, unknown> | null;
  guessed: string[];
  notes: string[];
}

/** What `inspect --json` prints per file. */
interface InspectReport {
  path: string;
  format: string;
  /** Why the file cannot be used, when its header could still be shown (a truncated GGUF). */
  error?: string;
  size: number;
  models: Array<{
    id: string;
    metadata: Record<string, unknown>;
    config: unknown;
    tensorCount: number;
    params: number;
    bytes: number;
    totals: Record<string, { tensors: number; params: number; bytes: number }>;
    tensors: TensorRow[];
    architecture: ArchitectureReport;
  }>;
}

/** Makes metadata printable: long arrays summarized, bigints as strings, typed arrays as lists. */
function summarize(value: unknown, depth = 0): unknown {
  if (typeof value === "bigint") return value.toString();
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    value = Array.from(value as unknown as ArrayLike<number>);
  }
  if (Array.isArray(value)) {
    if (value.length > 16) {
      return {
        array: value.length,
        head: value.slice(0, 8).map((v) => summarize(v, depth + 1)),
      };
    }
    return value.map((v) => summarize(v, depth + 1));
  }
  if (value && typeof value === "object" && depth < 6) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, summarize(v, depth + 1)]),
    );
  }
  if (typeof value === "string" && value.length > 400) {
    return `${value.slice(0, 400)}… (${value.length} chars)`;
  }
  return value;
}

/** Compiles a `--tensors` pattern: `/regex/` or a glob with `*` and `?`. */
function tensorFilter(
  pattern: string | undefined,
): (name: string) => boolean {
  if (!pattern) return () => true;
  const m = pattern.match(/^\/(.*)\/([a-z]*)$/);
  if (m) {
    const re = new RegExp(m[1], m[2]);
    return (n) => re.test(n);
  }
  const re = new RegExp(
    `^${
      pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(
        /\?/g,
        ".",
      )
    }$`,
  );
  return (n) => re.test(n);
}

function architectureOf(
  model: Model,
  hfConfig: Record<string, unknown> | undefined,
): {
  report: ArchitectureReport;
  roles: Map<string, string>;
} {
  const d = detectArchitecture(model.tensors, hfConfig ?? model.metadata);
  const roles: Record<string, number> = {};
  for (const t of d.tensors) roles[t.role] = (roles[t.role] ?? 0) + 1;
  const cfg = d.config
    ? {
      hiddenSize: d.config.hiddenSize,
      numLayers: d.config.numLayers,
      numHeads: d.config.numHeads,
      numKvHeads: d.config.numKvHeads,
      headDim: d.config.headDim,
      intermediateSize: d.config.intermediateSize,
      vocabSize: d.config.vocabSize,
      ropeTheta: d.config.ropeTheta,
      ropeStyle: d.config.ropeStyle,
      tieWordEmbeddings: d.config.tieWordEmbeddings,
    }
    : null;
  return {
    report: {
      family: d.family,
      naming: d.naming,
      roles,
      config: cfg,
      guessed: d.guessed,
      notes: d.notes,
    },
    roles: new Map(d.tensors.map((t) => [t.name, t.role])),
  };
}

function modelReport(
  model: Model,
  keep: (n: string) => boolean,
  hfConfig?: Record<string, unknown>,
): InspectReport["models"][number] {
  const arch = architectureOf(model, hfConfig);
  const rows: TensorRow[] = [];
  const totals: Record<
    string,
    { tensors: number; params: number; bytes: number }
  > = {};
  let params = 0, bytes = 0;
  for (const name of model.tensors.names()) {
    const info = model.tensors.info(name);
    const n = elementCount(info.shape, `tensor "${name}"`);
    params += n;
    bytes += info.byteLength;
    const t = totals[info.dtype] ??= { tensors: 0, params: 0, bytes: 0 };
    t.tensors++, t.params += n, t.bytes += info.byteLength;
    if (keep(name)) {
      rows.push({
        name,
        dtype: info.dtype,
        shape: info.shape,
        params: n,
        bytes: info.byteLength,
        offset: info.byteOffset ?? null,
        role: arch.roles.get(name) ?? "unknown",
      });
    }
  }
  return {
    id: model.id,
    metadata: summarize(model.metadata) as Record<string, unknown>,
    config: model.config ?? null,
    tensorCount: model.tensors.names().length,
    params,
    bytes,
    totals,
    tensors: rows,
    architecture: arch.report,
  };
}

/** The `config.json` of a Hugging Face folder, when the path is one. */
async function folderConfig(
  path: string,
): Promise<Record<string, unknown> | undefined> {
  if (/^https?:/i.test(path)) return undefined;
  try {
    if (!(await Deno.stat(path)).isDirectory) return undefined;
    return JSON.parse(await Deno.readTextFile(join(path, "config.json")));
  } catch {
    return undefined;
  }
}

/** Reads one file's headers into a report. */
async function inspectFile(
  reg: Registry,
  path: string,
  pattern: string | undefined,
): Promise<InspectReport> {
  let opened;
  try {
    opened = await openModel(reg, path);
  } catch (e) {
    const partial = e instanceof RangeError
      ? await truncatedGguf(path, pattern, e)
      : undefined;
    if (partial) return partial;
    throw e;
  }
  try {
    const keep = tensorFilter(pattern);
    const hfConfig = await folderConfig(path);
    return {
      path,
      format: opened.format.name,
      size: opened.source.size,
      models: opened.file.models.map((m) => modelReport(m, keep, hfConfig)),
    };
  } finally {
    opened.close();
  }
}

/** A GGUF whose data section is cut short: its intact header, and the error. */
async function truncatedGguf(
  path: string,
  pattern: string | undefined,
  e: RangeError,
): Promise<InspectReport | undefined> {
  let src;
  try {
    src = await fileSource(path);
  } catch {
    return undefined;
  }
  try {
    if (!isGguf(await src.read(0, Math.min(4, src.size)))) return undefined;
    const header = await readGgufHeader(src, { allowTruncated: true });
    if (header.truncated === undefined) return undefined;
    const file = ggufModelFile(src, header);
    return {
      path,
      format: "gguf",
      size: src.size,
      error:
        `${e.message} (the file is truncated: its header is intact, tensor data is missing)`,
      models: file.models.map((m) => modelReport(m, tensorFilter(pattern))),
    };
  } catch {
    return undefined;
  } finally {
    src.close();
  }
}

function count(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}K`;
  return String(n);
}

function bytesText(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(2)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, c) =>
    Math.max(...rows.map((r) => r[c].length))
  );
  return rows.map((r) =>
    r.map((cell, c) =>
      c >= 3 && c <= 5 ? cell.padStart(widths[c]) : cell.padEnd(widths[c])
    ).join("  ").trimEnd()
  );
}

/** Human-readable lines for a report. */
function formatReport(r: InspectReport): string[] {
  const out = [`${r.path}: ${r.format}, ${bytesText(r.size)}`];
  if (r.error) out.push(`error: ${r.error}`);
  for (const m of r.models) {
    if (r.models.length > 1 || m.id) out.push(`model "${m.id}"`);
    // gguf.types (the GGUF value type of every key) is for round trips; --json shows it.
    const meta = Object.entries(m.metadata).filter(([k]) => k !== "gguf.types");
    if (meta.length) {
      out.push("metadata:");
      for (const [k, v] of meta) {
        const text = typeof v === "string" ? v : JSON.stringify(v);
        out.push(
          `  ${k}: ${text.length > 160 ? `${text.slice(0, 160)}…` : text}`,
        );
      }
    }
    if (m.config) {
      out.push(`network config: ${JSON.stringify(m.config).slice(0, 200)}`);
    }
    out.push(
      `tensors: ${m.tensorCount}, ${count(m.params)} params, ${
        bytesText(m.bytes)
      }`,
    );
    if (m.tensors.length) {
      out.push(
        ...table([
          ["name", "dtype", "shape", "params", "bytes", "offset", "role"],
          ...m.tensors.map((t) => [
            t.name,
            t.dtype,
            `[${t.shape.join(", ")}]`,
            String(t.params),
            String(t.bytes),
            t.offset === null ? "-" : String(t.offset),
            t.role,
          ]),
        ]).map((l) => `  ${l}`),
      );
    }
    const a = m.architecture;
    if (a.family !== "unknown") {
      const c = a.config;
      const shape = c
        ? `: ${c.numLayers} layers, hidden ${c.hiddenSize}, ${c.numHeads} heads (${c.numKvHeads} KV) × ${c.headDim}, MLP ${c.intermediateSize}, vocab ${c.vocabSize}`
        : "";
      out.push(`architecture: ${a.family} (${a.naming} names)${shape}`);
      if (a.guessed.length) {
        out.push(`  guessed from shapes: ${a.guessed.join(", ")}`);
      }
    } else {
      out.push(
        `architecture: not a Llama-family decoder${
          a.notes.length ? ` (${a.notes[0]})` : ""
        }`,
      );
    }
    out.push("totals by dtype:");
    for (const [d, t] of Object.entries(m.totals)) {
      out.push(
        `  ${d.padEnd(8)} ${String(t.tensors).padStart(6)} tensors ${
          count(t.params).padStart(9)
        } params ${bytesText(t.bytes).padStart(11)}`,
      );
    }
  }
  return out;
}

/** `modelhost inspect FILE…`. */
export const inspectCommand: Command = {
  name: "inspect",
  summary:
    "Show format, metadata, tensors and totals of model files (reads headers only)",
  usage: "inspect FILE|FOLDER|URL… [--json] [--tensors PATTERN]",
  flags: () => [JSON_FLAG, {
    name: "tensors",
    type: "string",
    value: "PATTERN",
    description: "Only list tensors matching a glob (`*.weight`) or /regex/",
  }],
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    needFiles(positional, "FILE to inspect");
    const reports = [];
    for (const p of positional) {
      reports.push(
        await inspectFile(ctx.reg, p, flags.tensors as string | undefined),
      );
    }
    if (flags.json) {
      ctx.io.out(
        JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2),
      );
    } else for (const r of reports) ctx.io.out(formatReport(r).join("\n"));
    for (const r of reports) if (r.error) ctx.io.err(`Error: ${r.error}`);
    return reports.some((r) => r.error) ? 1 : 0;
  },
};
