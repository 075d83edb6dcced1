import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import { decode, networkFromGguf, smolLmShapeGguf } from "./_decode.ts";
const threads = +(Deno.env.get("THREADS") ?? 2);
await configureKernels({ threads });
const net = await networkFromGguf(await smolLmShapeGguf("Q8_0"));
decode(net, 8);
const e = getEngine()!;
const acc = new Map<string, [number, number]>();
const add = (k: string, dt: number) => { const a = acc.get(k) ?? [0, 0]; a[0] += dt; a[1]++; acc.set(k, a); };
for (const [name, f] of Object.entries(e.fn)) {
  (e.fn as Record<string, unknown>)[name] = (...a: number[]) => { const t = performance.now(); const r = (f as (...a: number[]) => unknown)(...a); add(inRun ? name : "single:" + name, performance.now() - t); return r; };
}
const run = e.run.bind(e);
let inRun = false;
e.run = (name, parts) => { const t = performance.now(); inRun = true; const before = acc.get(name)?.[0] ?? 0; run(name, parts); inRun = false; const dt = performance.now() - t; add("run:" + name, dt); add("runwait:" + name, dt - ((acc.get(name)?.[0] ?? 0) - before)); };
const N = 64;
const t0 = performance.now();
const r = decode(net, N);
const total = performance.now() - t0;
console.log(`tok/s ${r.tokensPerSecond.toFixed(1)}  ms/token ${(total / N).toFixed(2)}`);
let sum = 0;
for (const [k, [t, n]] of [...acc].sort((a, b) => b[1][0] - a[1][0])) { sum += k.startsWith("run:") ? 0 : 0; console.log(k.padEnd(28), (t / N).toFixed(3), "ms/token", (n / N).toFixed(0), "calls/token"); }
await shutdownKernels();
