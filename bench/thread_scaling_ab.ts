// Our 1 → 2 thread decode scaling, with what the machine itself gave
// beside every round, optionally against a baseline checkout in the same
// run. Each checkout ("this" and `--base DIR`) decodes in its own child
// process (bench/_scaling_child.ts, the checkout's own modules); per model
// and round the sides (checkout × 1 or 2 threads) take turns, the order
// reversed every other round, between two probes of the machine's own
// 1 → 2 thread scaling: a plain integer loop in one worker, then in two at
// once (×2.0 on two free cores, ×1.0 when other tenants of the host leave
// one core's time to this VM). A round counts as quiet when both probes
// gave at least `--quiet` (1.8).
//
//   deno run -A bench/thread_scaling_ab.ts MODEL.gguf[,MODEL2…] \
//     [--base DIR] [--rounds 7] [--decode 16] [--quiet 1.8]
//
// Prints per model and checkout, over the quiet rounds and over all, the
// median wall and CPU ms per token of each thread count, the parts taken
// back and the stalls per token with 2 threads, the caller's time per token
// in its own parts of split jobs and in waits for the worker's ("own",
// "wait"; the rest of the 2-thread wall time is work on one thread), and
// the median over rounds of the per-round scaling (1-thread wall ÷
// 2-thread wall).

import { cpuLine, median } from "./_peer.ts";

const opt: Record<string, string> = {
  rounds: "7",
  decode: "16",
  quiet: "1.8",
};
const pos: string[] = [];
for (let i = 0; i < Deno.args.length; i++) {
  const a = Deno.args[i];
  if (a.startsWith("--")) opt[a.slice(2)] = Deno.args[++i];
  else pos.push(a);
}
const models = pos.flatMap((p) => p.split(",")).filter((p) => p);
const here = new URL("..", import.meta.url).pathname;
const roots: [string, string][] = [["this", here]];
if (opt.base) roots.push(["base", opt.base]);
const rounds = Number(opt.rounds), D = Number(opt.decode);
const quiet = Number(opt.quiet);

// the machine's own scaling: a compute loop alone, then twice at once
const loop =
  `onmessage=(e)=>{let x=0;const t0=performance.now();for(let i=0;i<e.data;i++){x=(x+i)|0}postMessage(performance.now()-t0+(x&0))}`;
const loopUrl = URL.createObjectURL(
  new Blob([loop], { type: "text/javascript" }),
);
const probes = [0, 1].map(() => new Worker(loopUrl, { type: "module" }));
const spin = (w: Worker, n: number) =>
  new Promise<number>((r) => {
    w.onmessage = (e) => r(e.data);
    w.postMessage(n);
  });
async function capacity(n = 2e8): Promise<number> {
  const t0 = performance.now();
  await spin(probes[0], n);
  const one = performance.now() - t0;
  const t1 = performance.now();
  await Promise.all(probes.map((w) => spin(w, n)));
  return (2 * one) / (performance.now() - t1);
}
await capacity(1e7);

/** One checkout's decoder in a child process. */
class Child {
  #w: WritableStreamDefaultWriter<Uint8Array>;
  #r: ReadableStreamDefaultReader<string>;
  #buf = "";
  constructor(readonly proc: Deno.ChildProcess) {
    this.#w = proc.stdin.getWriter();
    this.#r = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
  }
  static start(root: string, model: string): Child {
    return new Child(
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--no-lock",
          "--config",
          `${root.replace(/\/$/, "")}/deno.json`,
          new URL("./_scaling_child.ts", import.meta.url).pathname,
          "--root",
          root,
          model,
        ],
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
      }).spawn(),
    );
  }
  async line(): Promise<Record<string, number>> {
    for (;;) {
      const nl = this.#buf.indexOf("\n");
      if (nl >= 0) {
        const l = this.#buf.slice(0, nl);
        this.#buf = this.#buf.slice(nl + 1);
        return JSON.parse(l);
      }
      const { value, done } = await this.#r.read();
      if (done) throw new Error("decoder child exited");
      this.#buf += value;
    }
  }
  async ask(o: unknown): Promise<Record<string, number>> {
    await this.#w.write(new TextEncoder().encode(JSON.stringify(o) + "\n"));
    return await this.line();
  }
  async close(): Promise<void> {
    await this.#w.write(new TextEncoder().encode('{"quit":true}\n'));
    await this.proc.status;
  }
}

console.log(cpuLine());
console.log(
  `${rounds} rounds, ${D} decoded tokens after 4; quiet: both probes ≥ ×${quiet}; checkouts: ${
    roots.map(([n, r]) => `${n} = ${r}`).join(", ")
  }`,
);
const fmt = (x: number) => Number.isNaN(x) ? "–" : x.toFixed(2);
for (const model of models) {
  const kids = roots.map(([, r]) => Child.start(r, model));
  for (const k of kids) await k.line(); // ready
  const sides = kids.flatMap((k, i) => [1, 2].map((t) => ({ k, i, t })));
  for (const s of sides) await s.k.ask({ threads: s.t, tokens: 4 }); // warm
  const res = sides.map(() => [] as Record<string, number>[]);
  const caps: [number, number][] = [];
  for (let r = 0; r < rounds; r++) {
    const c0 = await capacity();
    const order = sides.map((_, i) => i);
    if (r % 2) order.reverse();
    for (const j of order) {
      res[j].push(await sides[j].k.ask({ threads: sides[j].t, tokens: D }));
    }
    caps.push([c0, await capacity()]);
  }
  for (const k of kids) await k.close();
  const q = caps.map(([a, b]) => Math.min(a, b) >= quiet);
  console.log(
    `\n${model}; load ${
      Deno.loadavg().map((x) => x.toFixed(1)).join(" ")
    }; probes per round ${
      caps.map(([a, b]) => `${a.toFixed(1)}/${b.toFixed(1)}`).join(" ")
    }; quiet rounds ${q.filter((x) => x).length}/${rounds}`,
  );
  roots.forEach(([name], i) => {
    const one = res[2 * i], two = res[2 * i + 1];
    const ratio = one.map((x, r) => x.wall / two[r].wall);
    const line = (label: string, keep: (r: number) => boolean) => {
      const sel = (a: number[]) => a.filter((_, r) => keep(r));
      const m = (a: Record<string, number>[], k: string) =>
        fmt(median(sel(a.map((x) => x[k] ?? NaN)))); // NaN: JSON null
      return `${label}: 1t wall ${m(one, "wall")} cpu ${
        m(one, "cpu")
      } | 2t wall ${m(two, "wall")} cpu ${m(two, "cpu")} takenBack ${
        m(two, "takenBack")
      } stalls ${m(two, "stalls")} /tok, own ${m(two, "own")} wait ${
        m(two, "wait")
      } ms/tok | 1→2 ×${fmt(median(sel(ratio)))}`;
    };
    console.log(`  ${name.padEnd(5)} ${line("quiet", (r) => q[r])}`);
    console.log(
      `  ${"".padEnd(5)} ${line("all", () => true)} (${
        ratio.map(fmt).join(" ")
      })`,
    );
  });
}
for (const w of probes) w.terminate();
