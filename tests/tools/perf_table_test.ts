// The README block rewriting and the bench-JSON-to-row formatting of
// tools/perf_table.ts (tools/_perf_table.ts), without running a benchmark:
// the rows' expected cells are worked out by hand from the inputs.

import { assert, assertEquals, assertThrows } from "@std/assert";
import { fromFileUrl } from "@std/path";
import {
  BEGIN_MARKER,
  END_MARKER,
  type MachineInfo,
  PerfTableError,
  renderBlock,
  replaceBlock,
  tableRow,
  targetFor,
} from "../../tools/_perf_table.ts";
import type { BenchResult, BenchRow } from "../../bench/_json.ts";
import { roundRatios } from "../../bench/_json.ts";

const README = `# Title

Intro paragraph.

${BEGIN_MARKER}

Run \`deno task bench:table\` to fill this table.

${END_MARKER}

## Next section

| a | b |
| - | - |
`;

Deno.test("perf table: a block replaces the text between the markers and nothing else", () => {
  const out = replaceBlock(README, "| x | y |\n| --- | --- |\n| 1 | 2 |\n");
  const i = out.indexOf(BEGIN_MARKER), j = out.indexOf(END_MARKER);
  assertEquals(out.slice(0, i), README.slice(0, README.indexOf(BEGIN_MARKER)));
  assertEquals(out.slice(j), README.slice(README.indexOf(END_MARKER)));
  assertEquals(
    out.slice(i, j + END_MARKER.length),
    `${BEGIN_MARKER}\n\n| x | y |\n| --- | --- |\n| 1 | 2 |\n\n${END_MARKER}`,
  );
});

Deno.test("perf table: rewriting is idempotent and a second block replaces the first", () => {
  const once = replaceBlock(README, "first block");
  assertEquals(replaceBlock(once, "first block"), once);
  const twice = replaceBlock(once, "second block");
  assert(!twice.includes("first block"));
  assertEquals(twice, replaceBlock(README, "second block"));
  // the placeholder that ships in README.md round-trips too
  const placeholder = "Run `deno task bench:table` to fill this table.";
  assertEquals(replaceBlock(README, placeholder), README);
});

Deno.test("perf table: missing, repeated or swapped markers are a clear error", () => {
  const noBegin = README.replace(BEGIN_MARKER, "");
  const e1 = assertThrows(
    () => replaceBlock(noBegin, "x", "docs/X.md"),
    PerfTableError,
  );
  assert(e1.message.includes("docs/X.md"), e1.message);
  assert(e1.message.includes(BEGIN_MARKER), e1.message);
  assert(e1.message.includes("found it 0 times"), e1.message);
  const e2 = assertThrows(
    () => replaceBlock(README.replace(END_MARKER, ""), "x"),
    PerfTableError,
  );
  assert(e2.message.includes(END_MARKER), e2.message);
  assertThrows(
    () => replaceBlock(README + END_MARKER + "\n", "x"),
    PerfTableError,
    "found it 2 times",
  );
  const swapped = README.replace(BEGIN_MARKER, "@@").replace(
    END_MARKER,
    BEGIN_MARKER,
  ).replace("@@", END_MARKER);
  assertThrows(
    () => replaceBlock(swapped, "x"),
    PerfTableError,
    "comes before",
  );
});

Deno.test("perf table: the committed README.md has the markers once, in order", async () => {
  const path = fromFileUrl(new URL("../../README.md", import.meta.url));
  const text = await Deno.readTextFile(path);
  // throws PerfTableError otherwise; keeps the text outside the block
  const out = replaceBlock(text, "x", path);
  assert(out.startsWith(text.slice(0, text.indexOf(BEGIN_MARKER))));
  assert(out.endsWith(text.slice(text.indexOf(END_MARKER))));
  // writing back what is between the markers changes nothing
  const current = text.slice(
    text.indexOf(BEGIN_MARKER) + BEGIN_MARKER.length,
    text.indexOf(END_MARKER),
  );
  assertEquals(replaceBlock(text, current, path), text);
});

const decode576: BenchRow = {
  id: "decode:576:Q8_0",
  what: "decode 32 tokens, 576×30 Q8_0",
  unit: "tok/s",
  ours: 41.26,
  peer: 68.9,
  peerName: "llama.cpp (node-llama-cpp, haswell)",
  ratio: 0.6,
  ratioLo: 0.551,
  ratioHi: 0.649,
  ratioCpu: 0.7049,
};

Deno.test("perf table: a bench row becomes table cells with target and verdict", () => {
  assertEquals(tableRow(decode576, 2), {
    what:
      "decode 32 tokens, 576×30 Q8_0 vs llama.cpp (node-llama-cpp, haswell)",
    ours: "41.3 tok/s",
    peer: "68.9 tok/s",
    ratio: "0.60× (0.55–0.65)",
    perCpu: "0.70×",
    target: "≥ 0.7× (#23, 2 threads)",
    met: "no",
  });
  // the decode target is stated for 2 threads: another count is not judged
  assertEquals(tableRow(decode576, 1).met, "n/a (run at 1 thread)");
  // width 1024 needs 0.6×: 0.6 meets it
  assertEquals(
    tableRow({ ...decode576, id: "decode:1024:Q4_K_M" }, 2).met,
    "yes",
  );
});

Deno.test("perf table: a missing peer says so instead of failing", () => {
  const row = tableRow({
    ...decode576,
    peer: null,
    ratio: null,
    ratioLo: null,
    ratioHi: null,
    ratioCpu: null,
  }, 2);
  assertEquals(row.peer, "peer not available");
  assertEquals(row.ratio, "—");
  assertEquals(row.perCpu, "—");
  assertEquals(row.met, "n/a (not measured)");
});

Deno.test("perf table: targets of the issues per row id", () => {
  assertEquals(targetFor("prefill:576:Q8_0")?.min, 0.5);
  assertEquals(targetFor("prefill:2048:Q4_0")?.min, 0.5);
  assertEquals(targetFor("prefill:576:Q4_K_M"), undefined);
  assertEquals(targetFor("prefill:1024:Q8_0"), undefined);
  assertEquals(targetFor("decode:2048:Q4_K_M")?.min, 0.6);
  assertEquals(targetFor("wllama-decode:576:Q4_0")?.min, 1.5);
  assertEquals(targetFor("mlp:native")?.min, 1);
  assertEquals(targetFor("mlp:wasm")?.min, undefined);
  assertEquals(targetFor("embed:F16")?.min, 1);
  assertEquals(targetFor("quantize:Q4_K_M:2")?.on, "ours");
  // an absolute target on our own rate: 62.5 MB/s ≥ 50 MB/s
  assertEquals(
    tableRow({
      id: "quantize:Q4_K_M:2",
      what: "Q4_K_M",
      unit: "MB/s",
      ours: 62.5,
      peer: null,
      peerName: "llama-quantize",
      ratio: null,
    }, 2).met,
    "yes",
  );
});

Deno.test("perf table: per-round ratios are the median of peer ms ÷ our ms", () => {
  // rounds: 20/10 = 2, 30/20 = 1.5, 10/20 = 0.5 → median 1.5
  assertEquals(roundRatios([10, 20, 20], [20, 30, 10]), {
    ratio: 1.5,
    lo: 0.5,
    hi: 2,
  });
  assertEquals(roundRatios([10, 20], []), { ratio: null, lo: null, hi: null });
});

Deno.test("perf table: the block has the machine line, one table and the notes", () => {
  const machine: MachineInfo = {
    date: "2026-11-27 12:00 UTC",
    commit: "abc1234",
    cpu: "AMD EPYC",
    logicalCpus: 2,
    flags: { avx2: true, avx512f: false },
    loadStart: "1.0 1.0 1.0",
    loadEnd: "2.0 2.0 2.0",
    deno: "2.9.6",
    threads: 2,
    minutes: 12.4,
  };
  const sweep: BenchResult = {
    bench: "llama_sweep",
    threads: 2,
    rounds: 3,
    rows: [{ ...decode576, note: "greedy 16/16 same" }],
    notes: ["stories260K Q8_0: 32/32 greedy ids the same"],
  };
  const block = renderBlock(machine, [
    { name: "sweep", result: sweep },
    { name: "embed", skipped: "no MiniLM folder" },
    { name: "wllama", error: "exit code 1" },
  ]);
  const lines = block.split("\n");
  assert(lines[0].includes("2026-11-27 12:00 UTC"));
  assert(lines[0].includes("commit abc1234"));
  assert(lines[0].includes("(avx2 yes, avx512f no)"));
  assert(lines[0].includes("load average 1.0 1.0 1.0 at the start"));
  assert(lines[0].includes("Deno 2.9.6"));
  assert(lines[0].includes("in 12 min"));
  assertEquals(
    lines.filter((l) => l.startsWith("| ")).length,
    5,
    "header, separator, the decode row, the skipped and the failed sections",
  );
  assert(lines.includes(
    "| decode 32 tokens, 576×30 Q8_0 vs llama.cpp (node-llama-cpp, haswell) | 41.3 tok/s | 68.9 tok/s | 0.60× (0.55–0.65) | 0.70× | ≥ 0.7× (#23, 2 threads) | no |",
  ));
  assert(lines.includes(
    "| embed | not run | — | — | — | — | n/a (skipped) |",
  ));
  assert(lines.includes(
    "| wllama | not run | — | — | — | — | n/a (bench failed) |",
  ));
  assert(lines.includes("- embed: skipped: no MiniLM folder"));
  assert(lines.includes("- wllama: failed: exit code 1"));
  assert(
    lines.includes("- decode 32 tokens, 576×30 Q8_0: greedy 16/16 same"),
  );
  assert(
    lines.includes(
      "- sweep: stories260K Q8_0: 32/32 greedy ids the same",
    ),
  );
});
