// Shared pieces of the side-by-side benchmarks: the CPU line printed beside
// every number, llama.cpp through node-llama-cpp as a child process
// (bench/_nlc_peer.mjs) that answers one command at a time so that sides
// can alternate round by round, and the summary of alternating rounds.

/**
 * The CPU's model name and flags from /proc/cpuinfo; `model` is undefined
 * and `flags` empty where it cannot be read (not Linux, no permission).
 */
export function cpuInfo(): { model?: string; flags: Set<string> } {
  try {
    const info = Deno.readTextFileSync("/proc/cpuinfo");
    return {
      model: /model name\s*:\s*(.*)/.exec(info)?.[1],
      flags: new Set((/flags\s*:\s*(.*)/.exec(info)?.[1] ?? "").split(" ")),
    };
  } catch {
    return { flags: new Set() };
  }
}

/** CPU model, logical CPUs, the SIMD flags that matter here and the load. */
export function cpuLine(): string {
  const { model = "unknown CPU", flags: have } = cpuInfo();
  const flags = have.size === 0
    ? ""
    : ["avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni"]
      .map((f) => `${f}${have.has(f) ? "+" : "-"}`).join(" ");
  const load = Deno.loadavg().map((x) => x.toFixed(1)).join(" ");
  return `CPU: ${model}, ${navigator.hardwareConcurrency} logical, ${flags}; load ${load}; Deno ${Deno.version.deno}`;
}

/** The median of a list (NaN for none). */
export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Summary of alternating rounds `a` (ours) and `b` (peer), both in ms:
 * medians as rates, the median of the per-round ratios (peer ms / our ms,
 * so > 1 means we are faster) over the rounds where neither side stalled
 * (took more than twice its own median), and the stalled rounds apart.
 */
export function summarize(
  a: number[],
  b: number[],
  rate: (ms: number) => number,
): {
  ours: string;
  peer: string;
  ratio: string;
  stalled: string;
  /** The same as numbers (rates; ratio median and range; null without a peer). */
  values: {
    ours: number;
    peer: number | null;
    ratio: number | null;
    lo: number | null;
    hi: number | null;
  };
} {
  const ma = median(a), mb = median(b);
  const ok: number[] = [], stalled: number[] = [];
  a.forEach((x, i) => {
    if (x > 2 * ma || (b.length && b[i] > 2 * mb)) stalled.push(i);
    else if (b.length) ok.push(b[i] / x);
  });
  const fmt = (x: number) => x.toFixed(x >= 100 ? 0 : 1);
  const rs = ok.length ? ok : b.map((y, i) => y / a[i]);
  return {
    ours: fmt(rate(ma)),
    peer: b.length ? fmt(rate(mb)) : "-",
    ratio: b.length
      ? `${median(rs).toFixed(2)}× (rounds ${Math.min(...rs).toFixed(2)}–${
        Math.max(...rs).toFixed(2)
      })`
      : "-",
    stalled: stalled.length
      ? `stalled rounds ${stalled.join(",")}: ours ${
        stalled.map((i) => a[i].toFixed(0)).join("/")
      } ms`
      : "",
    values: {
      ours: rate(ma),
      peer: b.length ? rate(mb) : null,
      ratio: b.length ? median(rs) : null,
      lo: b.length ? Math.min(...rs) : null,
      hi: b.length ? Math.max(...rs) : null,
    },
  };
}

/** llama.cpp through node-llama-cpp, one command at a time. */
export class NlcPeer {
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #lines: AsyncIterator<string>;
  private constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#lines = child.stdout.pipeThrough(new TextDecoderStream())
      .pipeThrough(lineSplitter())[Symbol.asyncIterator]();
  }

  /** Starts the peer, or undefined when node or node-llama-cpp is missing. */
  static async start(): Promise<NlcPeer | undefined> {
    const env = {
      NODE_PATH: Deno.env.get("NODE_PATH") ?? "/work/nlc/node_modules",
    };
    try {
      await Deno.stat(`${env.NODE_PATH}/node-llama-cpp`);
      // MODELHOST_NODE_FLAGS: e.g. "--preserve-symlinks" for a NODE_PATH
      // whose @node-llama-cpp/linux-x64 holds only some CPU variants
      const flags = (Deno.env.get("MODELHOST_NODE_FLAGS") ?? "").split(" ")
        .filter((f) => f);
      const child = new Deno.Command("node", {
        args: [...flags, new URL("./_nlc_peer.mjs", import.meta.url).pathname],
        env,
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      return new NlcPeer(child);
    } catch {
      return undefined;
    }
  }

  async #ask(cmd: unknown): Promise<Record<string, unknown>> {
    await this.#writer.write(
      new TextEncoder().encode(JSON.stringify(cmd) + "\n"),
    );
    const { value, done } = await this.#lines.next();
    if (done) throw new Error("node-llama-cpp peer exited");
    const r = JSON.parse(value);
    if (r.error) throw new Error(`node-llama-cpp peer: ${r.error}`);
    return r;
  }

  /** Loads a GGUF with a context of `ctx` tokens and batches of `batch`. */
  async load(
    path: string,
    threads: number,
    ctx: number,
    batch: number,
  ): Promise<void> {
    await this.#ask({ op: "load", path, threads, ctx, batch });
  }

  /** Milliseconds to evaluate `tokens` from an empty sequence. */
  async prefill(tokens: number[]): Promise<number> {
    return (await this.#ask({ op: "prefill", tokens })).ms as number;
  }

  /**
   * CPU milliseconds (user + system, all threads) the peer process has
   * used so far, from /proc (10 ms resolution; NaN where there is none).
   */
  cpuMs(): number {
    return procCpuMs(this.#child.pid);
  }

  /** Greedy decode of `n` tokens after `tokens`: ms for the n and the ids. */
  async decode(
    tokens: number[],
    n: number,
  ): Promise<{ ms: number; ids: number[] }> {
    const r = await this.#ask({ op: "decode", tokens, n });
    return { ms: r.ms as number, ids: r.ids as number[] };
  }

  /**
   * The ggml CPU variant the peer loaded (`haswell`: AVX2; `zen4`,
   * `icelake`, …: AVX-512), from /proc/PID/maps; "" when unknown.
   */
  cpuVariant(): string {
    try {
      const maps = Deno.readTextFileSync(`/proc/${this.#child.pid}/maps`);
      return /libggml-cpu-([\w-]+)\.so/.exec(maps)?.[1] ?? "";
    } catch {
      return "";
    }
  }

  /** Stops the child. */
  async close(): Promise<void> {
    try {
      await this.#ask({ op: "quit" });
    } catch { /* already gone */ }
    await this.#writer.close().catch(() => {});
    await this.#child.status;
  }
}

/** CPU ms (user + system) of process `pid` so far, from /proc; NaN without it. */
export function procCpuMs(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10; // clock ticks of 10 ms
  } catch {
    return NaN;
  }
}

/** CPU ms (user + system, all threads) of this process so far. */
export function selfCpuMs(): number {
  return procCpuMs(Deno.pid);
}

function lineSplitter(): TransformStream<string, string> {
  let buf = "";
  return new TransformStream({
    transform(chunk, ctl) {
      buf += chunk;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        ctl.enqueue(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    },
    flush(ctl) {
      if (buf) ctl.enqueue(buf);
    },
  });
}
