/**
 * `kill -9` at random moments of `convert` and `quantize` (issue 18, defect
 * 7): the target is always the old file or the whole new one, and the next
 * start removes the temporary files the killed process left. SIGINT and
 * SIGTERM remove them at once. Runs per command: MODELHOST_KILL_RUNS
 * (default 3; the long run uses 50).
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { createRng } from "../../core/rng.ts";
import { memoryTensorIndex } from "../../core/model.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { saveSafetensors } from "../../io/safetensors.ts";

const RUNS = Number(Deno.env.get("MODELHOST_KILL_RUNS") ?? 3);
const CLI = new URL("../../cli.ts", import.meta.url).pathname;
const TEMP = /\.(tmp|partial)-/;

async function cli(
  args: string[],
  killAfterMs?: number,
  signal: Deno.Signal = "SIGKILL",
): Promise<{ code: number; killed: boolean }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    stdout: "null",
    stderr: "null",
  }).spawn();
  let killed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (killAfterMs !== undefined) {
    timer = setTimeout(() => {
      try {
        child.kill(signal);
        killed = true;
      } catch { /* already exited */ }
    }, killAfterMs);
  }
  const st = await child.status;
  clearTimeout(timer);
  return { code: st.code, killed: killed && !st.success };
}

function temps(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) =>
    TEMP.test(n)
  );
}

const same = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

async function setup(): Promise<{ dir: string; src: string }> {
  const dir = await Deno.makeTempDir();
  const src = join(dir, "src.safetensors");
  // ~24 MB of F32: long enough that kills land mid-write
  const tensors = Array.from(
    { length: 6 },
    (_, i) =>
      tensorFromF32(
        `blk.${i}.w`,
        Float32Array.from({ length: 1 << 20 }, (_, k) => Math.sin(k + i)),
        [1024, 1024],
      ),
  );
  await saveSafetensors(src, {
    models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }],
  });
  return { dir, src };
}

for (
  const [what, argsFor] of [
    [
      "convert",
      (src: string, out: string) => ["convert", src, "-o", out, "-f"],
    ],
    [
      "quantize",
      (src: string, out: string) => ["quantize", src, out, "Q8_0", "-f"],
    ],
  ] as const
) {
  Deno.test(`kill -9 during ${what}: old file or whole new one, temps swept on the next start (${RUNS} runs)`, async () => {
    const { dir, src } = await setup();
    const ext = what === "convert" ? "bundle.json" : "gguf";
    try {
      // the whole new output, and how long writing it takes
      const ref = join(dir, `ref.${ext}`);
      const t0 = performance.now();
      assertEquals((await cli(argsFor(src, ref))).code, 0);
      const took = performance.now() - t0;
      const fresh = await Deno.readFile(ref);
      const out = join(dir, `out.${ext}`);
      const old = new TextEncoder().encode("the old file");
      const rng = createRng(18);
      let midway = 0;
      for (let r = 0; r < RUNS; r++) {
        await Deno.writeFile(out, old);
        const res = await cli(argsFor(src, out), rng.next() * took * 1.1);
        const now = await Deno.readFile(out);
        assert(
          same(now, old) || same(now, fresh),
          `run ${r}: the target is neither the old file nor the whole new one (${now.length} bytes)`,
        );
        if (res.killed && temps(dir).length > 0) midway++;
        // the next start sweeps what the killed process left
        const next = join(dir, `next.${ext}`);
        assertEquals((await cli(argsFor(src, next))).code, 0);
        assertEquals(
          temps(dir),
          [],
          `run ${r}: temporary files survive the next start`,
        );
      }
      console.log(
        `${what}: ${RUNS} kills, ${midway} left temporary files that the next start removed`,
      );
      // SIGINT / SIGTERM: removed by the process itself
      for (const sig of ["SIGINT", "SIGTERM"] as const) {
        await Deno.writeFile(out, old);
        await cli(argsFor(src, out), took * 0.6, sig);
        assertEquals(temps(dir), [], `${sig}: temporary files left`);
        const now = await Deno.readFile(out);
        assert(same(now, old) || same(now, fresh), `${sig}: target damaged`);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
