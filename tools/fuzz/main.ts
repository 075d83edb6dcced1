/**
 * The long fuzz run (`deno task fuzz`): every target, seeded, with failures
 * saved as regression files under `tests/fuzz/regressions/<target>/` (which
 * `tests/fuzz/fuzz_test.ts` replays) and a summary table at the end.
 *
 * ```sh
 * deno task fuzz                                  # 100000 cases per target, seed 1
 * deno task fuzz --cases 5000 --targets gguf,bundle --seed 7
 * deno task fuzz --minutes 10                     # per-target time budget
 * deno task fuzz --module ./tools/fuzz/http.ts    # add targets from another module
 * deno task fuzz --json report.json
 * ```
 *
 * @module
 */

import { parseArgs } from "@std/cli";
import {
  FUZZ_TARGET_MODULES,
  type FuzzTargetReport,
  runFuzz,
} from "./harness.ts";
import { saveRegression } from "./regressions.ts";
import { cpuInfo } from "../../bench/_peer.ts";

const args = parseArgs(Deno.args, {
  string: ["cases", "seed", "targets", "minutes", "module", "json"],
  collect: ["module"],
});
const cases = Number(args.cases ?? 100_000);
const seed = Number(args.seed ?? 1);
const minutes = args.minutes === undefined ? Infinity : Number(args.minutes);
const modules = [
  ...FUZZ_TARGET_MODULES,
  ...(args.module as string[] ?? []).map((m) =>
    new URL(m, `file://${Deno.cwd()}/`).href
  ),
];
const cpu = (() => {
  const { model, flags } = cpuInfo();
  if (model === undefined && flags.size === 0) return Deno.build.arch;
  return `${model ?? "?"} (${
    ["avx2", "avx512f", "avx512_vnni"].filter((f) => flags.has(f)).join(" ") ||
    "no avx2"
  })`;
})();
console.log(`fuzz: seed ${seed}, ${cases} cases per target, CPU ${cpu}`);
const reports: FuzzTargetReport[] = await runFuzz({
  modules,
  seed,
  cases,
  targets: args.targets ? String(args.targets).split(",") : undefined,
  timeBudgetMs: minutes * 60_000,
  onFailure: async (f) => {
    const path = await saveRegression(f.target, f.input);
    console.log(
      `FAIL ${f.target} #${f.index} ${f.outcome}: ${f.error?.name ?? ""} ${
        f.error?.message?.slice(0, 200) ?? ""
      } -> ${path}`,
    );
  },
  onProgress: (r) =>
    console.log(
      `  ${r.target}: ${r.cases} cases, ${(r.elapsedMs / 1000).toFixed(0)} s, ${
        JSON.stringify(r.outcomes)
      }`,
    ),
});
console.log(
  "\n| target | cases | accepted | refused (typed) | untyped | wrong acceptance | hang > 2 s | RSS > 1 GiB | crash | slowest | max RSS | time | hang retries |",
);
console.log(
  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
);
for (const r of reports) {
  const o = r.outcomes;
  console.log(
    `| ${r.target} | ${r.cases} | ${o.accepted} | ${o.refused} | ${o.untyped} | ${
      o["wrong-acceptance"]
    } | ${o.hang} | ${o.rss} | ${o.crash} | ${r.slowestMs.toFixed(0)} ms | ${
      (r.maxRss / 2 ** 20).toFixed(0)
    } MiB | ${(r.elapsedMs / 1000).toFixed(0)} s | ${r.retried} |`,
  );
}
if (args.json) {
  Deno.writeTextFileSync(
    String(args.json),
    JSON.stringify({ seed, cpu, reports }, null, 2),
  );
}
const failed = reports.reduce((a, r) => a + r.failures.length, 0);
Deno.exit(failed > 0 ? 1 : 0);
