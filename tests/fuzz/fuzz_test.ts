/**
 * The short fuzz run (seeded, a few seconds) and the replay of every input
 * a fuzz run ever failed on (`tests/fuzz/regressions/`). The long run is
 * `deno task fuzz` (tools/fuzz/main.ts); figures in docs/reliability.md.
 */

import { assert, assertEquals } from "@std/assert";
import {
  FAILURES,
  loadTargets,
  runFuzz,
  runOne,
} from "../../tools/fuzz/harness.ts";
import { listRegressions } from "../../tools/fuzz/regressions.ts";

const CASES = Number(Deno.env.get("MODELHOST_FUZZ_CASES") ?? 150);

Deno.test(`fuzz: ${CASES} seeded cases per target, no failure`, async () => {
  const reports = await runFuzz({ seed: 1, cases: CASES });
  const names = reports.map((r) => r.target);
  for (
    const t of [
      "safetensors",
      "gguf",
      "gguf-model",
      "npy",
      "npz",
      "bundle",
      "loom",
      "tokenizer-json",
    ]
  ) assert(names.includes(t), `target ${t} ran`);
  for (const r of reports) {
    assertEquals(r.cases, CASES, r.target);
    assertEquals(
      r.failures,
      [],
      `${r.target}: ${JSON.stringify(r.outcomes)}`,
    );
    // the mutators must reach past the first check in both directions
    assert(r.outcomes.accepted > 0, `${r.target}: nothing accepted`);
    assert(r.outcomes.refused > 0, `${r.target}: nothing refused`);
  }
});

Deno.test("fuzz: every saved regression input is now accepted or refused with a typed error", async () => {
  const targets = await loadTargets();
  const saved = await listRegressions();
  assert(
    saved.length > 0,
    "tests/fuzz/regressions holds the inputs found so far",
  );
  for (const r of saved) {
    const t = targets.get(r.target);
    assert(t, `${r.file}: no target ${r.target}`);
    const { outcome, error } = await runOne(t!, r.input);
    assert(
      !FAILURES.includes(outcome),
      `${r.file}: ${outcome} ${error?.name}: ${error?.message}`,
    );
  }
});
