// The pure half of tools/perf_table.ts: the issues' targets per row, the
// bench JSON (bench/_json.ts) turned into table rows, the README block
// rendered, and the block swapped in between its two markers. No I/O, so
// tests/tools/perf_table_test.ts checks it without running a benchmark.

import type { BenchResult, BenchRow } from "../bench/_json.ts";

/** The line that opens the generated block in README.md. */
export const BEGIN_MARKER = "<!-- perf-table:begin -->";
/** The line that closes it. */
export const END_MARKER = "<!-- perf-table:end -->";

/** A README without its markers, or with them out of order or repeated. */
export class PerfTableError extends Error {
  override name = "PerfTableError";
}

/**
 * `readme` with the text between the markers replaced by `block` (one blank
 * line either side); everything outside the markers is kept byte for byte.
 * Throws PerfTableError naming `file` when a marker is missing, repeated or
 * the end comes before the begin.
 */
export function replaceBlock(
  readme: string,
  block: string,
  file = "README.md",
): string {
  const count = (m: string) => readme.split(m).length - 1;
  for (const m of [BEGIN_MARKER, END_MARKER]) {
    const n = count(m);
    if (n !== 1) {
      throw new PerfTableError(
        `${file}: expected the marker ${m} once, found it ${n} times; put ${BEGIN_MARKER} and ${END_MARKER} on lines of their own where the table goes`,
      );
    }
  }
  const i = readme.indexOf(BEGIN_MARKER), j = readme.indexOf(END_MARKER);
  if (j < i) {
    throw new PerfTableError(
      `${file}: ${END_MARKER} (offset ${j}) comes before ${BEGIN_MARKER} (offset ${i})`,
    );
  }
  return `${readme.slice(0, i + BEGIN_MARKER.length)}\n\n${block.trim()}\n\n${
    readme.slice(j)
  }`;
}

/** A goal an issue states for a row. */
export interface Target {
  /** As printed, e.g. `≥ 0.7× (#23, 2 threads)`. */
  text: string;
  /** The smallest passing value, when the goal is a number. */
  min?: number;
  /** What `min` applies to: the ratio (default) or our own rate. */
  on?: "ratio" | "ours";
  /** The thread count the goal is stated for, where it names one. */
  threads?: number;
}

/** The goal of the issues (#22, #23, #24) for a row id, if any. */
export function targetFor(id: string): Target | undefined {
  const [kind, a, b] = id.split(":");
  if (kind === "prefill" && (a === "576" || a === "2048")) {
    return (b === "Q8_0" || b === "Q4_0")
      ? { text: "≥ 0.5× (#23)", min: 0.5 }
      : undefined;
  }
  if (kind === "decode") {
    const min = a === "576" ? 0.7 : a === "1024" || a === "2048" ? 0.6 : 0;
    if (min) {
      return { text: `≥ ${min}× (#23, 2 threads)`, min, threads: 2 };
    }
  }
  if (kind === "wllama-prefill" || kind === "wllama-decode") {
    return { text: "≥ 1.5× (#23)", min: 1.5 };
  }
  if (id === "mlp:wasm") return { text: "stated with its ceiling (#23)" };
  if (id === "mlp:native") return { text: "≥ 1× (#23)", min: 1 };
  if (kind === "embed") return { text: "≥ 1× (#22)", min: 1 };
  if (id === "quantize:Q4_K_M:2") {
    return {
      text: "≥ 50 MB/s ours (#24, 1 GiB F16, 2 threads)",
      min: 50,
      on: "ours",
      threads: 2,
    };
  }
  return undefined;
}

/** One line of the README's table, every cell as printed. */
export interface TableRow {
  what: string;
  ours: string;
  peer: string;
  ratio: string;
  perCpu: string;
  target: string;
  met: string;
}

/** A rate with as many decimals as its size deserves. */
export function formatRate(x: number): string {
  return x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2);
}

const times = (x: number) => `${x.toFixed(2)}×`;

/**
 * A bench row as a table row: rates with their unit, the median ratio with
 * its range, the per-CPU-second ratio, the target and whether it is met
 * (`yes` / `no`; `—` without a numeric target; `n/a` with the reason when
 * a side is missing or the run used another thread count than the target's).
 */
export function tableRow(row: BenchRow, threads: number): TableRow {
  const t = targetFor(row.id);
  const has = (x: number | null | undefined): x is number =>
    typeof x === "number" && Number.isFinite(x);
  const ratio = has(row.ratio)
    ? `${times(row.ratio)}${
      has(row.ratioLo) && has(row.ratioHi)
        ? ` (${row.ratioLo.toFixed(2)}–${row.ratioHi.toFixed(2)})`
        : ""
    }`
    : "—";
  let met = "—";
  if (t?.min !== undefined) {
    const value = t.on === "ours" ? row.ours : row.ratio;
    if (!has(value)) met = "n/a (not measured)";
    else if (t.threads !== undefined && t.threads !== threads) {
      met = `n/a (run at ${threads} thread${threads > 1 ? "s" : ""})`;
    } else met = value >= t.min ? "yes" : "no";
  }
  return {
    what: `${row.what} vs ${row.peerName}`,
    ours: has(row.ours) ? `${formatRate(row.ours)} ${row.unit}` : "not run",
    peer: has(row.peer)
      ? `${formatRate(row.peer)} ${row.unit}`
      : "peer not available",
    ratio,
    perCpu: has(row.ratioCpu) ? times(row.ratioCpu) : "—",
    target: t?.text ?? "—",
    met,
  };
}

/** What the block's first line says about the run. */
export interface MachineInfo {
  /** ISO date and time (UTC) of the run. */
  date: string;
  /** Short commit, with `+changes` when the tree was dirty. */
  commit: string;
  cpu: string;
  logicalCpus: number;
  /** The SIMD flags that decide the kernel paths, present or not. */
  flags: Record<string, boolean>;
  loadStart: string;
  loadEnd: string;
  deno: string;
  threads: number;
  /** Minutes the whole run took. */
  minutes: number;
}

/** A bench's outcome: its JSON, or why there is none. */
export interface SectionResult {
  name: string;
  result?: BenchResult;
  /** Why the bench failed. */
  error?: string;
  /** Why the bench was not run (a model or tool it needs is missing). */
  skipped?: string;
}

const cell = (s: string) => s.replaceAll("|", "\\|").replaceAll("\n", " ");

/** The markdown between the markers: the machine line, the table, the notes. */
export function renderBlock(m: MachineInfo, sections: SectionResult[]): string {
  const flags = Object.entries(m.flags).map(([f, on]) =>
    `${f} ${on ? "yes" : "no"}`
  ).join(", ");
  const out = [
    `_Measured by \`deno task bench:table\` on ${m.date} at commit ${m.commit} in ${
      m.minutes.toFixed(0)
    } min: ${m.cpu}, ${m.logicalCpus} logical CPUs (${flags}); load average ${m.loadStart} at the start, ${m.loadEnd} at the end; Deno ${m.deno}; ${m.threads} thread(s) per side. Ratios are ours ÷ peer in throughput (> 1: ours is faster), the median over rounds in which the two sides alternate, with the range of the rounds; "per CPU s" divides each side's rate by its own CPU time (less disturbed by other tenants). How each row is measured: [docs/performance.md](docs/performance.md)._`,
    "",
    "| what | ours | peer | ratio (median, range) | per CPU s | target | met |",
    "| --- | ---: | ---: | ---: | ---: | --- | --- |",
  ];
  const notes: string[] = [];
  for (const s of sections) {
    if (!s.result) {
      const why = s.skipped === undefined ? "bench failed" : "skipped";
      out.push(
        `| ${cell(s.name)} | not run | — | — | — | — | n/a (${why}) |`,
      );
      notes.push(
        `${s.name}: ${why === "skipped" ? "skipped" : "failed"}: ${
          s.skipped ?? s.error ?? "no result"
        }`,
      );
      continue;
    }
    for (const r of s.result.rows) {
      const t = tableRow(r, m.threads);
      out.push(
        `| ${
          [t.what, t.ours, t.peer, t.ratio, t.perCpu, t.target, t.met].map(cell)
            .join(" | ")
        } |`,
      );
      if (r.note) notes.push(`${r.what}: ${r.note}`);
    }
    for (const n of s.result.notes) notes.push(`${s.name}: ${n}`);
  }
  if (notes.length) {
    out.push("", "Notes:", "", ...notes.map((n) => `- ${n}`));
  }
  return out.join("\n");
}
