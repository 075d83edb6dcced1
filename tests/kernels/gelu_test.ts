/**
 * GELU with erf (kernels/gelu.ts): the WebAssembly kernel, on one thread
 * and split over two, and the scalar fallback against Python's `math.erf`
 * (tests/vectors/gen/gelu_erf.py) and the exact `activate(x, "gelu")`.
 */

import { assert } from "@std/assert";
import { geluErfApprox, geluErfInPlace } from "../../kernels/gelu.ts";
import { activate } from "../../kernels/activations.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../kernels/fast/runtime.ts";

const V: { x: number[]; y: number[] } = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/gelu_erf.json", import.meta.url),
  ),
);

/** |got − want| ≤ 2e-7·(1 + |x|): erf's approximation, then F32 rounding. */
function check(got: ArrayLike<number>, what: string): void {
  let worst = 0;
  for (let i = 0; i < V.x.length; i++) {
    const err = Math.abs(got[i] - V.y[i]) / (1 + Math.abs(V.x[i]));
    worst = Math.max(worst, err);
    assert(
      err <= 2e-7,
      `${what}: x = ${V.x[i]}: ${got[i]}, math.erf gives ${V.y[i]}`,
    );
  }
  console.log(`${what}: worst |error| / (1 + |x|) ${worst.toExponential(2)}`);
}

Deno.test("geluErfApprox and the exact activate('gelu') equal math.erf's GELU", () => {
  check(V.x.map(geluErfApprox), "geluErfApprox");
  check(V.x.map((x) => activate("gelu", x)), "activate gelu");
});

Deno.test("geluErfInPlace (WebAssembly kernels, 1 and 2 threads) equals math.erf's GELU", async () => {
  try {
    for (
      const [threads, noRelaxedSimd] of [[1, false], [2, false], [
        2,
        true,
      ]] as const
    ) {
      await configureKernels({ threads, minParallelWork: 1, noRelaxedSimd });
      const x = Float32Array.from(V.x);
      // twice: the second call runs with the workers started by the first
      geluErfInPlace(Float32Array.from(V.x));
      assert(geluErfInPlace(x) === x);
      const info = kernelInfo();
      check(x, `geluErfInPlace, ${info.threads} thread(s), ${info.backend}`);
      assert(Object.is(x[1], -0) || x[1] === 0);
    }
  } finally {
    await shutdownKernels();
  }
});
