// The machine-readable result a side-by-side bench writes with `--json FILE`
// (read by tools/perf_table.ts, which turns it into the README's table): one
// row per comparison, ratios as ours ÷ peer in throughput (> 1: ours is
// faster), `peer: null` where the peer did not run.

/** One comparison of a bench's result. */
export interface BenchRow {
  /** Stable key that tools/perf_table.ts matches targets on, e.g. `decode:576:Q8_0`. */
  id: string;
  /** What was measured, in words. */
  what: string;
  /** Unit of `ours` and `peer` (a rate: higher is faster). */
  unit: string;
  /** Our median rate. */
  ours: number | null;
  /** The peer's median rate; null when the peer did not run. */
  peer: number | null;
  /** Who the peer is (name, version, variant). */
  peerName: string;
  /** Median of the per-round throughput ratios ours ÷ peer. */
  ratio: number | null;
  /** Range of the per-round ratios. */
  ratioLo?: number | null;
  ratioHi?: number | null;
  /** The same ratio per CPU second (user + system of each side), where measured. */
  ratioCpu?: number | null;
  /** Why a side is missing, stalled rounds, checks: anything to print beside the row. */
  note?: string;
}

/** What a bench writes with `--json FILE`. */
export interface BenchResult {
  bench: string;
  threads: number;
  rounds: number;
  rows: BenchRow[];
  /** Lines about the whole bench (peer versions, checks, skips). */
  notes: string[];
}

/** Median of the per-round ratios `peerMs[i] / ourMs[i]` (null without a peer). */
export function roundRatios(
  ourMs: number[],
  peerMs: number[],
): { ratio: number | null; lo: number | null; hi: number | null } {
  if (peerMs.length === 0 || ourMs.length === 0) {
    return { ratio: null, lo: null, hi: null };
  }
  const r = ourMs.map((x, i) => peerMs[i] / x).sort((a, b) => a - b);
  const m = r.length >> 1;
  return {
    ratio: r.length % 2 ? r[m] : (r[m - 1] + r[m]) / 2,
    lo: r[0],
    hi: r[r.length - 1],
  };
}

/** Writes `result` to `path` as JSON through a temporary file renamed into place. */
export async function writeBenchJson(
  path: string,
  result: BenchResult,
): Promise<void> {
  const tmp = `${path}.tmp-${Deno.pid}`;
  await Deno.writeTextFile(tmp, JSON.stringify(result, null, 1) + "\n");
  await Deno.rename(tmp, path);
}
