import { assertEquals, assertThrows } from "@std/assert";
import { exportOnnx, exportOnnxFiles } from "../../formats/onnx.ts";
import { assertAllClose } from "../_helpers/close.ts";
import {
  CASES,
  caseNetwork,
  inputFor,
  SEQUENCE_CASES,
} from "./_onnx_cases.ts";
import { openOrt } from "./_ort.ts";

const OPSETS = [13, 17, 23];
const BATCHES = [1, 4];

for (const c of [...CASES, ...SEQUENCE_CASES]) {
  Deno.test(`onnx: ORT equals our forward: ${c.name}`, async () => {
    const net = caseNetwork(c);
    for (const opset of OPSETS) {
      if (opset < (c.minOpset ?? 13) || opset > (c.maxOpset ?? 23)) continue;
      const bytes = exportOnnx(net, { ...c.options, opsetVersion: opset });
      const session = await openOrt(bytes);
      try {
        for (const batch of BATCHES) {
          const x = inputFor(c, net.spec.inputSize, batch);
          const expected = net.forward(x.ours);
          const got = await session.run(
            x.ids ? "input_ids" : "input",
            x.ids ?? x.ours.data,
            x.shape,
          );
          assertEquals(got.shape, expected.shape, `opset ${opset} batch ${batch} shape`);
          assertAllClose(
            got.data,
            expected.data,
            `${c.name}, opset ${opset}, batch ${batch}`,
            1e-4,
            1e-6,
          );
        }
      } finally {
        await session.close();
      }
    }
  });
}

Deno.test("onnx: the same network and options give the same bytes", () => {
  for (const c of CASES.slice(0, 40)) {
    const a = exportOnnx(caseNetwork(c), { ...c.options, opsetVersion: 17 });
    const b = exportOnnx(caseNetwork(c), { ...c.options, opsetVersion: 17 });
    assertEquals(a, b, c.name);
  }
});

Deno.test("onnx: linear and logistic regression export to MatMul + Add (+ Sigmoid)", () => {
  for (const [activation, ops] of [
    ["linear", ["MatMul", "Add"]],
    ["sigmoid", ["MatMul", "Add", "Sigmoid"]],
  ] as const) {
    const net = caseNetwork({
      name: activation,
      config: {
        input_size: 5,
        layers: [{ type: "dense", output_size: 1, activation }],
      },
    });
    for (const opset of [13, 17, 23]) {
      assertEquals(
        exportOnnxFiles(net, { opsetVersion: opset }).ops,
        [...ops],
      );
    }
  }
});

Deno.test("onnx: opset out of range is a RangeError", () => {
  const net = caseNetwork(CASES[0]);
  assertThrows(
    () => exportOnnx(net, { opsetVersion: 12 }),
    RangeError,
    "supported opsets are 13 to 23",
  );
});
