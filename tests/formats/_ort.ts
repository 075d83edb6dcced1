/**
 * ONNX Runtime (onnxruntime-node) for the tests: run an exported model on
 * float or INT64 inputs.
 */

import * as ort from "onnxruntime-node";

export { ort };

/**
 * An ORT session kept open for several runs. `level` is ORT's graph
 * optimization level: at `extended` and above ORT replaces
 * `DequantizeLinear → MatMul` by a dynamically quantized int8 MatMul
 * (activations rounded to 8 bits), so exact comparisons of int8-weight
 * models use `basic`.
 */
export async function openOrt(
  model: Uint8Array | string,
  level: "disabled" | "basic" | "extended" | "all" = "all",
): Promise<{
  run(
    name: string,
    data: Float32Array | BigInt64Array,
    shape: number[],
  ): Promise<{ data: Float32Array; shape: number[] }>;
  close(): Promise<void>;
}> {
  const session = typeof model === "string"
    ? await ort.InferenceSession.create(model, {
      graphOptimizationLevel: level,
    })
    : await ort.InferenceSession.create(model, {
      graphOptimizationLevel: level,
    });
  return {
    async run(name, data, shape) {
      const t = data instanceof BigInt64Array
        ? new ort.Tensor("int64", data, shape)
        : new ort.Tensor("float32", data, shape);
      const out = await session.run({ [name]: t });
      const y = out[session.outputNames[0]];
      return {
        data: y.data as Float32Array,
        shape: y.dims.map((d) => Number(d)),
      };
    },
    close: () => session.release(),
  };
}

/** Runs `model` (bytes or a path) once on one input; returns the output. */
export async function runOrt(
  model: Uint8Array | string,
  input: { name: string; data: Float32Array | BigInt64Array; shape: number[] },
): Promise<{ data: Float32Array; shape: number[] }> {
  const session = await openOrt(model);
  try {
    return await session.run(input.name, input.data, input.shape);
  } finally {
    await session.close();
  }
}
