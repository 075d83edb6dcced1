/**
 * The fuzzing harness: seeded targets (one per input format), each case run
 * in a worker so a hang can be stopped, and every outcome classified.
 *
 * A target is `{ name, generate(rng), run(input) }`: `generate` makes one
 * input from a seeded generator (a valid seed file, mutated with knowledge
 * of its structure), `run` reads it the way the library would and checks
 * what it accepted (throwing {@link WrongAcceptance} when an accepted file
 * contradicts itself). Outcomes:
 *
 * - `ok`: accepted and consistent, or refused with a typed error
 *   (`RangeError`, `TypeError`, `SyntaxError` or a subclass) that is not an
 *   engine failure in disguise ("Maximum call stack size exceeded",
 *   "Cannot read properties of undefined", "Invalid array length" …);
 * - failures: `untyped` (any other error), `wrong-acceptance`, `hang`
 *   (longer than the time limit; the worker is ended), `rss` (the process
 *   went over the memory limit), `crash` (the worker died).
 *
 * Targets come from modules that export `fuzzTargets: FuzzTarget[]`; the
 * built-in ones are in `targets.ts` and `targets_text.ts`. To add one (the
 * server's HTTP requests, say), write such a module and add its URL to
 * {@link FUZZ_TARGET_MODULES} (or pass `modules` to {@link runFuzz}, or
 * `--module` to `deno task fuzz`).
 *
 * @module
 */

import type { Rng } from "../../core/rng.ts";
import { createRng } from "../../core/rng.ts";

/** One fuzzing target. */
export interface FuzzTarget {
  /** Unique name (`safetensors`, `gguf`, `http` …); regression files go under `tests/fuzz/regressions/<name>/`. */
  name: string;
  /** Makes one input from the case's generator (deterministic in the generator). */
  generate(rng: Rng): Uint8Array | Promise<Uint8Array>;
  /** Reads an input; throws a typed error to refuse it, {@link WrongAcceptance} when it accepted a contradiction. */
  run(input: Uint8Array): Promise<void>;
}

/** Thrown by a target's `run` when an accepted input contradicts itself. */
export class WrongAcceptance extends Error {
  /**
   * @param message What contradicts what.
   */
  constructor(message: string) {
    super(message);
    this.name = "WrongAcceptance";
  }
}

/** Modules whose `fuzzTargets` export the harness runs by default. */
export const FUZZ_TARGET_MODULES: string[] = [
  new URL("./targets.ts", import.meta.url).href,
  new URL("./targets_text.ts", import.meta.url).href,
];

/** How one case ended. */
export type FuzzOutcome =
  | "accepted"
  | "refused"
  | "untyped"
  | "wrong-acceptance"
  | "hang"
  | "rss"
  | "crash";

/** Outcomes that count as failures. */
export const FAILURES: readonly FuzzOutcome[] = [
  "untyped",
  "wrong-acceptance",
  "hang",
  "rss",
  "crash",
];

const ENGINE_MESSAGES =
  /Maximum call stack|Cannot read propert|Cannot set propert|is not a function|is not iterable|is not a constructor|Invalid array length|Invalid typed array length|Array buffer allocation failed|Invalid string length|out of memory|Cannot convert (?:undefined|null|a BigInt|a Symbol|object to primitive)|Cannot destructure|is not defined|Cannot mix BigInt|Start offset|offset is out of bounds|Invalid DataView/;

/** The project's own error classes that are not Range/Type/SyntaxError subclasses. */
const PROJECT_ERRORS = new Set(["ChecksumError"]);

/** The error summary a worker sends back. */
export interface ErrorSummary {
  /** The constructor's name. */
  name: string;
  /** The message. */
  message: string;
  /** Whether it is a RangeError, TypeError or SyntaxError (or a subclass). */
  typedClass: boolean;
  /** Whether it is a {@link WrongAcceptance}. */
  wrong: boolean;
  /** The stack, for reports. */
  stack?: string;
}

/**
 * Summarizes a thrown value.
 *
 * @param e The thrown value.
 * @returns Its summary.
 */
export function summarize(e: unknown): ErrorSummary {
  if (e instanceof Error) {
    return {
      name: e.constructor?.name ?? e.name,
      message: e.message,
      typedClass: e instanceof RangeError || e instanceof TypeError ||
        e instanceof SyntaxError || PROJECT_ERRORS.has(e.constructor?.name),
      wrong: e instanceof WrongAcceptance,
      stack: e.stack,
    };
  }
  return {
    name: typeof e,
    message: String(e),
    typedClass: false,
    wrong: false,
  };
}

/**
 * Classifies a finished case.
 *
 * @param error The error summary, or undefined when the input was accepted.
 * @returns The outcome.
 */
export function classify(error: ErrorSummary | undefined): FuzzOutcome {
  if (!error) return "accepted";
  if (error.wrong) return "wrong-acceptance";
  if (!error.typedClass || ENGINE_MESSAGES.test(error.message)) {
    return "untyped";
  }
  return "refused";
}

/**
 * Loads the targets of the given modules.
 *
 * @param modules Module URLs, each exporting `fuzzTargets`.
 * @returns The targets by name.
 */
export async function loadTargets(
  modules: readonly string[] = FUZZ_TARGET_MODULES,
): Promise<Map<string, FuzzTarget>> {
  const out = new Map<string, FuzzTarget>();
  for (const m of modules) {
    const mod = await import(m) as { fuzzTargets?: FuzzTarget[] };
    for (const t of mod.fuzzTargets ?? []) {
      if (out.has(t.name)) {
        throw new TypeError(`Two fuzz targets named ${t.name}`);
      }
      out.set(t.name, t);
    }
  }
  return out;
}

/** The generator of case `index` of a run seeded with `seed`. */
export function caseRng(seed: number, index: number): Rng {
  return createRng(
    (Math.imul(seed, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0,
  );
}

/** Options of {@link runFuzz}. */
export interface FuzzOptions {
  /** Target names. @default {every target of the modules} */
  targets?: string[];
  /** Modules to load targets from. @default {FUZZ_TARGET_MODULES} */
  modules?: string[];
  /** Seed of the run. @default {1} */
  seed?: number;
  /** Cases per target. @default {200} */
  cases?: number;
  /** Stop a target after this many milliseconds even if cases remain. @default {Infinity} */
  timeBudgetMs?: number;
  /** Longest a case may take. @default {2000} */
  hangMs?: number;
  /** Largest resident set allowed after a case, in bytes. @default {1 GiB} */
  rssLimit?: number;
  /** Called with each failure (the input that caused it). */
  onFailure?: (f: FuzzFailure) => void | Promise<void>;
  /** Called every `progressEvery` cases. */
  onProgress?: (r: FuzzTargetReport) => void;
  /** @default {5000} */
  progressEvery?: number;
}

/** One failure. */
export interface FuzzFailure {
  /** The target. */
  target: string;
  /** The case index (with the run's seed, it regenerates the input). */
  index: number;
  /** The outcome. */
  outcome: FuzzOutcome;
  /** The error, when there was one. */
  error?: ErrorSummary;
  /** The input. */
  input: Uint8Array;
}

/** What a run found for one target. */
export interface FuzzTargetReport {
  /** The target. */
  target: string;
  /** Cases run. */
  cases: number;
  /** Count per outcome. */
  outcomes: Record<FuzzOutcome, number>;
  /** Slowest case in milliseconds. */
  slowestMs: number;
  /** Largest resident set seen after a case, in bytes. */
  maxRss: number;
  /** Wall time in milliseconds. */
  elapsedMs: number;
  /** Cases over the time limit once, run again on a fresh worker (a hang only if it stalls again). */
  retried: number;
  /** The failures' case indices and messages (the first 20). */
  failures: { index: number; outcome: FuzzOutcome; message?: string }[];
}

interface Reply {
  id: number;
  error?: ErrorSummary;
}

class CaseWorker {
  #worker!: Worker;
  #pending = new Map<number, (r: Reply | "crash") => void>();
  #next = 0;
  #modules: string[];
  #ready!: Promise<void>;
  constructor(modules: string[]) {
    this.#modules = modules;
    this.#start();
  }
  #start(): void {
    this.#worker = new Worker(new URL("./_worker.ts", import.meta.url), {
      type: "module",
    });
    let ready!: () => void;
    this.#ready = new Promise((r) => (ready = r));
    this.#worker.onmessage = (ev: MessageEvent<Reply>) => {
      if (ev.data.id === -1) return ready();
      const done = this.#pending.get(ev.data.id);
      this.#pending.delete(ev.data.id);
      done?.(ev.data);
    };
    this.#worker.onerror = (ev) => {
      ev.preventDefault();
      for (const done of this.#pending.values()) done("crash");
      this.#pending.clear();
      this.restart();
    };
    // loading the targets is not part of any case's time
    this.#worker.postMessage({ id: -1, modules: this.#modules });
  }
  restart(): void {
    this.#worker.terminate();
    this.#start();
  }
  async run(
    target: string,
    input: Uint8Array,
    hangMs: number,
  ): Promise<Reply | "crash" | "hang"> {
    await this.#ready;
    const id = this.#next++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        this.restart();
        resolve("hang");
      }, hangMs);
      this.#pending.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      this.#worker.postMessage({
        id,
        modules: this.#modules,
        target,
        input,
      });
    });
  }
  close(): void {
    this.#worker.terminate();
  }
}

function emptyOutcomes(): Record<FuzzOutcome, number> {
  return {
    accepted: 0,
    refused: 0,
    untyped: 0,
    "wrong-acceptance": 0,
    hang: 0,
    rss: 0,
    crash: 0,
  };
}

/**
 * Runs seeded cases against each target, one worker per run.
 *
 * @param options Targets, seed, case counts, limits, callbacks.
 * @returns One report per target.
 */
export async function runFuzz(
  options: FuzzOptions = {},
): Promise<FuzzTargetReport[]> {
  const modules = options.modules ?? FUZZ_TARGET_MODULES;
  const all = await loadTargets(modules);
  const names = options.targets ?? [...all.keys()];
  const seed = options.seed ?? 1;
  const cases = options.cases ?? 200;
  const hangMs = options.hangMs ?? 2000;
  const rssLimit = options.rssLimit ?? 2 ** 30;
  const budget = options.timeBudgetMs ?? Infinity;
  const every = options.progressEvery ?? 5000;
  const worker = new CaseWorker(modules);
  const reports: FuzzTargetReport[] = [];
  try {
    for (const name of names) {
      const target = all.get(name);
      if (!target) {
        throw new TypeError(
          `No fuzz target ${name}; known: ${[...all.keys()].join(", ")}`,
        );
      }
      const r: FuzzTargetReport = {
        target: name,
        cases: 0,
        outcomes: emptyOutcomes(),
        slowestMs: 0,
        maxRss: 0,
        elapsedMs: 0,
        retried: 0,
        failures: [],
      };
      const t0 = performance.now();
      for (let i = 0; i < cases; i++) {
        if (performance.now() - t0 > budget) break;
        const input = await target.generate(caseRng(seed, i));
        const s = performance.now();
        let reply = await worker.run(name, input, hangMs);
        let ms = performance.now() - s;
        if (reply === "hang") {
          // confirm on a fresh worker: a shared, loaded machine can stall
          // one case; a real hang stalls again
          r.retried++;
          const s2 = performance.now();
          reply = await worker.run(name, input, hangMs);
          ms = performance.now() - s2;
        }
        if (ms > r.slowestMs) r.slowestMs = ms;
        let outcome: FuzzOutcome;
        let error: ErrorSummary | undefined;
        if (reply === "hang" || reply === "crash") outcome = reply;
        else {
          error = reply.error;
          outcome = classify(error);
        }
        const rss = Deno.memoryUsage().rss;
        if (rss > r.maxRss) r.maxRss = rss;
        if (rss > rssLimit && !FAILURES.includes(outcome)) {
          outcome = "rss";
          worker.restart();
        }
        r.cases++;
        r.outcomes[outcome]++;
        if (FAILURES.includes(outcome)) {
          if (r.failures.length < 20) {
            r.failures.push({ index: i, outcome, message: error?.message });
          }
          await options.onFailure?.({
            target: name,
            index: i,
            outcome,
            error,
            input,
          });
        }
        if (r.cases % every === 0) {
          r.elapsedMs = performance.now() - t0;
          options.onProgress?.(r);
        }
      }
      r.elapsedMs = performance.now() - t0;
      reports.push(r);
    }
  } finally {
    worker.close();
  }
  return reports;
}

/**
 * Runs one input through a target in this thread and classifies it (the
 * regression replay: inputs saved from failures must now come out
 * `accepted` or `refused`).
 *
 * @param target The target.
 * @param input The input.
 * @returns The outcome and the error, if any.
 */
export async function runOne(
  target: FuzzTarget,
  input: Uint8Array,
): Promise<{ outcome: FuzzOutcome; error?: ErrorSummary }> {
  try {
    await target.run(input);
    return { outcome: "accepted" };
  } catch (e) {
    const error = summarize(e);
    return { outcome: classify(error), error };
  }
}
