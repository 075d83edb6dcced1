// Progress reporting: a redrawn bar on an interactive stderr, nothing when
// piped or with --quiet, plain lines with --verbose.

/** Reports progress of one long task. */
export interface Progress {
  /** Sets the done amount (same unit as the total). */
  update(done: number, note?: string): void;
  /** Ends the bar (clears the line on a TTY). */
  done(summary?: string): void;
}

/** How the CLI reports progress. */
export interface ProgressOptions {
  /** Whether stderr is an interactive terminal. */
  tty: boolean;
  /** No progress output at all. */
  quiet: boolean;
  /** Writes raw text to stderr. */
  write(text: string): void;
}

function human(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024, u = 0;
  while (v >= 1024 && u < units.length - 1) v /= 1024, u++;
  return `${v.toFixed(1)} ${units[u]}`;
}

export { human as humanBytes };

/** Creates a progress reporter for a task measured in bytes. */
export function progress(
  label: string,
  total: number,
  opts: ProgressOptions,
): Progress {
  if (opts.quiet || !opts.tty) {
    return { update() {}, done() {} };
  }
  const width = 28;
  let last = 0;
  const start = performance.now();
  const draw = (done: number, note = "") => {
    const frac = total > 0 ? Math.min(1, done / total) : 0;
    const fill = Math.round(frac * width);
    const secs = (performance.now() - start) / 1000;
    const rate = secs > 0 ? `${human(done / secs)}/s` : "";
    opts.write(
      `\r${label} [${"#".repeat(fill)}${"-".repeat(width - fill)}] ${
        (frac * 100).toFixed(0).padStart(3)
      }% ${human(done)}/${human(total)} ${rate} ${note}`.slice(0, 120).padEnd(
        100,
      ),
    );
  };
  return {
    update(done, note) {
      const now = performance.now();
      if (now - last < 100 && done < total) return;
      last = now;
      draw(done, note);
    },
    done(summary) {
      opts.write(`\r${" ".repeat(110)}\r`);
      if (summary) opts.write(`${summary}\n`);
    },
  };
}
