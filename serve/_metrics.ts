// Prometheus text exposition format (version 0.0.4): counters, gauges and
// histograms with labels, rendered on demand.

/** Label names to values. */
export type Labels = Record<string, string>;

type Kind = "counter" | "gauge" | "histogram";

interface HistogramSeries {
  counts: number[];
  sum: number;
  count: number;
}

interface Family {
  name: string;
  help: string;
  kind: Kind;
  buckets?: readonly number[];
  values: Map<string, { labels: Labels; value: number | HistogramSeries }>;
  /** For gauges whose value is read at render time. */
  collect?: () => { labels: Labels; value: number }[];
}

/** Latency buckets in seconds, from half a millisecond to a minute. */
export const LATENCY_BUCKETS: readonly number[] = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
];

/** Batch-size buckets (rows per forward). */
export const BATCH_BUCKETS: readonly number[] = [
  1,
  2,
  4,
  8,
  16,
  32,
  64,
  128,
  256,
];

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const parts = Object.keys(labels).sort().map((k) =>
    `${k}="${escapeLabel(labels[k])}"`
  );
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function num(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  return String(v);
}

function keyOf(labels: Labels): string {
  return JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
}

/** A set of metric families, rendered in the order they were made. */
export class Metrics {
  #families = new Map<string, Family>();

  #family(name: string, help: string, kind: Kind, buckets?: readonly number[]) {
    let f = this.#families.get(name);
    if (!f) {
      f = { name, help, kind, buckets, values: new Map() };
      this.#families.set(name, f);
    }
    return f;
  }

  /** Adds `by` (default 1) to a counter. */
  inc(name: string, help: string, labels: Labels = {}, by = 1): void {
    const f = this.#family(name, help, "counter");
    const k = keyOf(labels);
    const s = f.values.get(k);
    if (s) (s.value as number) += by;
    else f.values.set(k, { labels, value: by });
  }

  /** Sets a gauge. */
  set(name: string, help: string, labels: Labels, value: number): void {
    const f = this.#family(name, help, "gauge");
    f.values.set(keyOf(labels), { labels, value });
  }

  /** Registers a gauge whose series are read when the metrics are rendered. */
  gaugeFn(
    name: string,
    help: string,
    collect: () => { labels: Labels; value: number }[],
  ): void {
    this.#family(name, help, "gauge").collect = collect;
  }

  /** Records one observation in a histogram. */
  observe(
    name: string,
    help: string,
    buckets: readonly number[],
    labels: Labels,
    value: number,
  ): void {
    const f = this.#family(name, help, "histogram", buckets);
    const k = keyOf(labels);
    let s = f.values.get(k);
    if (!s) {
      s = {
        labels,
        value: { counts: new Array(buckets.length).fill(0), sum: 0, count: 0 },
      };
      f.values.set(k, s);
    }
    const h = s.value as HistogramSeries;
    for (let i = 0; i < buckets.length; i++) {
      if (value <= buckets[i]) h.counts[i]++;
    }
    h.sum += value;
    h.count++;
  }

  /** The current value of a counter or gauge series (0 when absent). */
  value(name: string, labels: Labels = {}): number {
    const s = this.#families.get(name)?.values.get(keyOf(labels));
    if (!s) return 0;
    return typeof s.value === "number" ? s.value : s.value.count;
  }

  /** The text exposition of every family. */
  render(): string {
    const lines: string[] = [];
    for (const f of this.#families.values()) {
      lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`);
      lines.push(`# TYPE ${f.name} ${f.kind}`);
      if (f.collect) {
        for (const s of f.collect()) {
          lines.push(`${f.name}${labelText(s.labels)} ${num(s.value)}`);
        }
        continue;
      }
      for (const s of f.values.values()) {
        if (typeof s.value === "number") {
          lines.push(`${f.name}${labelText(s.labels)} ${num(s.value)}`);
          continue;
        }
        const h = s.value;
        f.buckets!.forEach((b, i) => {
          lines.push(
            `${f.name}_bucket${labelText(s.labels, ["le", num(b)])} ${
              h.counts[i]
            }`,
          );
        });
        lines.push(
          `${f.name}_bucket${labelText(s.labels, ["le", "+Inf"])} ${h.count}`,
        );
        lines.push(`${f.name}_sum${labelText(s.labels)} ${num(h.sum)}`);
        lines.push(`${f.name}_count${labelText(s.labels)} ${h.count}`);
      }
    }
    return lines.join("\n") + "\n";
  }
}
