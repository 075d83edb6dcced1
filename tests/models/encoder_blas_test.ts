// The system BLAS route of the encoders (io/blas.ts: linears through
// cblas_sgemm, attention's per-head products through kernels/_attention_gemm.ts)
// against the WebAssembly route and sentence-transformers' vectors
// (tests/vectors/encoders/, from tests/vectors/gen/encoders.py). Skipped with
// a message where the library or --allow-ffi is missing.
import { assert } from "@std/assert";
import { fromFileUrl } from "@std/path";
import { openSystemBlas } from "../../io/blas.ts";
import { loadEncoderModel } from "../../io/encoder.ts";
import { setF32GemmBackend } from "../../kernels/fast/backend.ts";
import { countingBackend } from "../_helpers/counting_blas.ts";
import { embedSentences } from "../../models/sentence.ts";

const DIR = fromFileUrl(new URL("../vectors/encoders/", import.meta.url));
// families whose attention is global (the BLAS path) in every layer, and
// ModernBERT, whose local layers keep the windowed attention
const CASES = ["bert-mean", "bert-cls", "roberta-mean", "modernbert-mean"];

interface Expected {
  texts: string[];
  prompt_name: string | null;
  embeddings: number[][];
}

function worstDiff(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  let worst = 0;
  for (const [i, v] of a.entries()) {
    for (let j = 0; j < v.length; j++) {
      worst = Math.max(worst, Math.abs(v[j] - b[i][j]));
    }
  }
  return worst;
}

for (const name of CASES) {
  Deno.test(`encoder ${name}: the system BLAS route gives the WebAssembly route's and sentence-transformers' vectors`, async () => {
    const blas = openSystemBlas({ threads: 2 });
    if (!blas.backend) {
      console.log(`skipped: ${blas.note}`);
      return;
    }
    const exp = JSON.parse(
      await Deno.readTextFile(`${DIR}${name}/expected.json`),
    ) as Expected;
    const m = await loadEncoderModel(`${DIR}${name}`);
    const run = () =>
      embedSentences(m.encoder, m.pipeline, exp.texts, {
        promptName: exp.prompt_name ?? undefined,
      }).embeddings;
    const wasm = run();
    // every product of these tiny models on the library, counted
    const { backend: counting, counts } = countingBackend(blas.backend);
    const before = setF32GemmBackend(counting);
    let native: Float32Array[];
    try {
      native = run();
    } finally {
      setF32GemmBackend(before);
      blas.close();
    }
    const { gemms, sgemms, lists } = counts;
    assert(
      gemms + sgemms > 0 && lists > 0,
      `${gemms} gemm, ${sgemms} sgemm calls, ${lists} sgemmMany lists`,
    );
    const toWasm = worstDiff(native, wasm);
    const toRef = worstDiff(native, exp.embeddings);
    console.log(
      `${name}: ${gemms} gemm, ${sgemms} sgemm calls, ${lists} lists; max |BLAS − WebAssembly| ${
        toWasm.toExponential(2)
      }, max |BLAS − sentence-transformers| ${toRef.toExponential(2)}`,
    );
    assert(toWasm <= 1e-4, `BLAS against WebAssembly: ${toWasm}`);
    assert(toRef <= 1e-4, `BLAS against sentence-transformers: ${toRef}`);
  });
}
