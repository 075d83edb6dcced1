// `quantize`: writes a model with a lossy storage type, reads it back, and
// reports each tensor's error against the input.

import type { Model } from "../core/model.ts";
import { toFloat32 } from "../core/tensor.ts";
import { errorStats } from "../core/quantize.ts";
import { openModel } from "../io/open.ts";
import { parseFlags, UsageError } from "./_args.ts";
import {
  type Command,
  FORCE_FLAG,
  ID_FLAG,
  JSON_FLAG,
  pickModel,
  refuseOverwrite,
} from "./_command.ts";
import { humanBytes } from "./_progress.ts";
import { positiveInt, THREADS_FLAG, withStdio } from "./_habits.ts";
import { createQuantPool, type QuantPool } from "../io/quant_pool.ts";
import { convertFile, writerOptions } from "./_write.ts";
import type { GgufTensorPlan } from "../formats/gguf/mod.ts";
import {
  imatrixOptions,
  PRESET_FLAGS,
  presetFlagsGiven,
  presetOptions,
  presetWarnings,
} from "./_quant.ts";

/** Error of one tensor after a lossy conversion. */
interface TensorError {
  name: string;
  from: string;
  to: string;
  rmse: number;
  cosine: number;
  maxAbs: number;
}

/** Compares every tensor of two models by name (the second read back after writing). */
async function compareModels(
  a: Model,
  b: Model,
): Promise<TensorError[]> {
  const rows: TensorError[] = [];
  for (const name of a.tensors.names()) {
    if (!b.tensors.has(name)) continue;
    const ta = await a.tensors.load(name), tb = await b.tensors.load(name);
    let x: Float32Array, y: Float32Array;
    try {
      x = toFloat32(ta);
      y = toFloat32(tb);
    } catch {
      continue;
    }
    const e = errorStats(x, y);
    // Two all-zero tensors agree exactly: cosine 1 rather than 0/0.
    const cosine = Number.isNaN(e.cosine) && e.maxAbsError === 0 ? 1 : e.cosine;
    rows.push({
      name,
      from: ta.dtype,
      to: tb.dtype,
      rmse: e.rmsError,
      cosine,
      maxAbs: e.maxAbsError,
    });
  }
  return rows;
}

/** `modelhost quantize IN OUT TYPE`. */
export const quantizeCommand: Command = {
  name: "quantize",
  summary:
    "Quantize a model (GGUF: llama-quantize's presets Q4_K_M, Q5_K_M, Q2_K, Q8_0 …; other formats: their storage types) with a per-tensor error report",
  usage:
    "quantize IN OUT TYPE [--pure] [--imatrix FILE] [--json] [--force] (- for stdin/stdout)",
  flags: () => [
    ...PRESET_FLAGS,
    {
      ...THREADS_FLAG,
      description: "GGUF: quantize on N worker threads (the same bytes)",
    },
    JSON_FLAG,
    FORCE_FLAG,
    ID_FLAG,
  ],
  more: () => [
    "",
    "GGUF types are llama-quantize's presets, with its per-tensor rules and",
    "byte-identical files: Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M",
    "Q5_K_S Q5_K_M Q6_K Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 IQ4_NL IQ4_XS IQ3_S IQ3_M",
    "IQ3_XS IQ2_XS IQ2_S F16 BF16 F32 (Q3_K, Q4_K, Q5_K are the _M mixes;",
    "--pure gives every tensor the base type; IQ3_XS, IQ2_XS, IQ2_S need --imatrix).",
  ],
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    if (positional.length !== 3) {
      throw new UsageError("quantize takes IN OUT TYPE");
    }
    const [input0, out0, type] = positional;
    const target = out0 === "-"
      ? ctx.reg.format("gguf")
      : ctx.reg.formatForPath(out0);
    // with the file on stdout, the report goes to stderr
    const say = out0 === "-" ? ctx.io.err : ctx.io.out;
    return await withStdio(input0, out0, ".gguf", async (input, out) => {
      if (!input || !out) throw new UsageError("quantize takes IN OUT TYPE");
      let plan: GgufTensorPlan[] | undefined;
      let options: Record<string, unknown>;
      if (target.name === "gguf") {
        options = {
          ...presetOptions(type, flags),
          ...await imatrixOptions(flags.imatrix as string | undefined),
          onPlan: (p: GgufTensorPlan[]) => (plan = p),
        };
      } else {
        if (presetFlagsGiven(flags)) {
          throw new UsageError(
            "--pure, --output-tensor-type, --token-embedding-type, --leave-output-tensor and --imatrix go with a GGUF output",
          );
        }
        options = writerOptions(target, { dtype: type });
      }
      if (
        out0 !== "-" && await refuseOverwrite(ctx, out, Boolean(flags.force))
      ) {
        return 1;
      }
      const threads = positiveInt(flags, "threads");
      let pool: QuantPool | undefined;
      if (threads !== undefined && threads > 1 && target.name === "gguf") {
        pool = createQuantPool(threads);
        options.encode = pool.encode;
        options.encodeStored = pool.encodeStored;
      }
      let r;
      try {
        r = await convertFile(
          ctx,
          input,
          out,
          target,
          options,
          flags.id as string | undefined,
          "quantizing",
        );
      } finally {
        pool?.close();
      }
      if (plan) {
        for (const line of presetWarnings(plan, options.preset as string)) {
          ctx.io.err(line);
        }
      }
      const [a, b] = [
        await openModel(ctx.reg, input),
        await openModel(ctx.reg, out),
      ];
      try {
        const ma = pickModel(
          a.file.models,
          flags.id as string | undefined,
          input,
        );
        const rows = await compareModels(ma, b.file.models[0]);
        if (flags.json) {
          say(
            JSON.stringify(
              {
                input,
                output: out,
                type: (options.preset as string | undefined) ??
                  type.toUpperCase(),
                ...(plan
                  ? {
                    plan: plan.map((p) => ({
                      name: p.name,
                      from: p.from,
                      to: p.to,
                      ...(p.reason ? { reason: p.reason } : {}),
                    })),
                  }
                  : {}),
                bytes: r.written.bytes,
                tensors: rows,
              },
              null,
              2,
            ),
          );
        } else {
          const w = Math.max(4, ...rows.map((x) => x.name.length));
          say(
            `${
              "name".padEnd(w)
            }  from     to        rmse        cosine      max abs`,
          );
          for (const x of rows) {
            say(
              `${x.name.padEnd(w)}  ${x.from.padEnd(7)}  ${x.to.padEnd(7)}  ${
                x.rmse.toExponential(3).padStart(10)
              }  ${x.cosine.toFixed(7)}  ${x.maxAbs.toExponential(3)}`,
            );
          }
          const worst = rows.reduce((m, x) => Math.min(m, x.cosine), 1);
          say(
            `${rows.length} tensors, ${
              humanBytes(r.written.bytes)
            } written to ${out}; lowest cosine ${worst.toFixed(7)}`,
          );
        }
        return 0;
      } finally {
        a.close();
        b.close();
      }
    });
  },
};
