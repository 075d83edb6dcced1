// Child process of bench/thread_scaling_ab.ts: loads one GGUF with the
// modules of one checkout (`--root DIR`, imported by path, so that a
// baseline checkout runs its own code) and answers one command per stdin
// line, `{"threads": n, "tokens": m}`, with one JSON line: wall and CPU ms
// per decoded token (CPU: this process's user + system time, all threads)
// and, per token, the parts the caller took back from late workers and
// the jobs on which a worker stalled (see `WorkerPool.stalls`), and the
// caller's time in the pool's `run` per token: its own part (with the parts
// it took back) and the wait for the workers' parts (`WorkerPool.time`;
// NaN where a baseline checkout's pool does not keep it).
//
//   deno run -A --config DIR/deno.json bench/_scaling_child.ts --root DIR MODEL.gguf

import process from "node:process";

const args = [...Deno.args];
const at = args.indexOf("--root");
const root = at >= 0
  ? args.splice(at, 2)[1]
  : new URL("..", import.meta.url).pathname;
const file = args[0];
const url = (p: string) =>
  new URL(p, `file://${root.replace(/\/?$/, "/")}`).href;
const { memorySource } = await import(url("core/sources.ts"));
const { readGguf } = await import(url("formats/gguf/mod.ts"));
const { transformerFromGguf } = await import(url("models/transformer.ts"));
const { configureKernels, shutdownKernels } = await import(
  url("kernels/fast/runtime.ts")
);
const { getEngine } = await import(url("kernels/wasm/_engine.ts"));

const model = await transformerFromGguf(
  await readGguf(memorySource(await Deno.readFile(file))),
);
const argmax = (v: Float32Array): number => {
  let b = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[b]) b = i;
  return b;
};
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const taken = (): number => getEngine()?.pool?.takenBack ?? 0;
// a baseline checkout's pool may not count stalls
const stalls = (): number => getEngine()?.pool?.stalls ?? 0;
const pooled = (): { own: number; wait: number } =>
  getEngine()?.pool?.time ?? { own: NaN, wait: NaN };
const out = (o: unknown) =>
  Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(o) + "\n"));
out({ ready: true });
const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream());
let buf = "";
for await (const chunk of lines) {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const cmd = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    if (cmd.quit) {
      await shutdownKernels();
      Deno.exit(0);
    }
    // workers stay up between this side's turns
    await configureKernels({ threads: cmd.threads, idleMs: 600_000 });
    const s = model.createState();
    let lg = model.forward([5, 6, 7, 8], s);
    for (let i = 0; i < 2; i++) lg = model.forward([argmax(lg)], s);
    const n = cmd.tokens, k0 = taken(), s0 = stalls();
    const { own: o0, wait: w0 } = pooled();
    const c0 = cpu(), t0 = performance.now();
    for (let i = 0; i < n; i++) lg = model.forward([argmax(lg)], s);
    out({
      wall: (performance.now() - t0) / n,
      cpu: (cpu() - c0) / n,
      takenBack: (taken() - k0) / n,
      stalls: (stalls() - s0) / n,
      own: (pooled().own - o0) / n,
      wait: (pooled().wait - w0) / n,
    });
  }
}
