import { assertEquals } from "@std/assert";
import {
  activate,
  applyActivation,
  erf,
  erfc,
} from "../../kernels/activations.ts";
import { assertAllClose } from "../_helpers/close.ts";

const vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/layers.json", import.meta.url)),
) as {
  erf: {
    x: number[];
    erf: number[];
    erfc: number[];
    gelu_x: number[];
    gelu: number[];
  };
};

Deno.test("erf / erfc match Python's math.erf / math.erfc (1e-14 / 1e-13 relative)", () => {
  const v = vectors.erf;
  assertAllClose(v.x.map(erf), v.erf, "erf", 1e-14, 1e-300);
  assertAllClose(v.x.map(erfc), v.erfc, "erfc", 1e-13, 1e-300);
});

Deno.test("gelu keeps its relative precision far in the negative tail", () => {
  const v = vectors.erf;
  assertAllClose(
    v.gelu_x.map((x) => activate("gelu", x)),
    v.gelu,
    "gelu tail",
    1e-13,
    1e-300,
  );
});

Deno.test("activations on hand-computed values", () => {
  assertEquals(activate("relu", -1), 0);
  assertEquals(activate("leaky_relu", -2), -0.02);
  assertEquals(activate("sigmoid", 0), 0.5);
  assertEquals(activate("silu", 0), 0);
  assertEquals(activate("softplus", 0), Math.LN2);
  assertEquals(activate("softplus", 800), 800);
  assertEquals(activate("softplus", -800), 0);
  assertEquals(activate("gelu", 0), 0);
  assertEquals(activate("gelu_tanh", 0), 0);
  const s = applyActivation(
    new Float32Array([1, 1, 1, 1000, 0, -1000]),
    3,
    "softmax",
  );
  assertAllClose(s, [1 / 3, 1 / 3, 1 / 3, 1, 0, 0], "softmax", 1e-7, 0);
});
