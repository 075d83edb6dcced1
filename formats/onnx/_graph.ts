/**
 * The graph builder behind the ONNX exporter: it implements the
 * {@link OnnxBuilder} that layer plugins lower themselves with, names
 * values and nodes deterministically, and turns stored tensors into
 * initializers plus the nodes that widen them to F32.
 *
 * @module
 */

import { dtypeInfo } from "../../core/dtypes.ts";
import type {
  OnnxAttribute,
  OnnxBuilder,
  OnnxConstantDType,
  OnnxLowerContext,
  OnnxTensorLiteral,
  OnnxWeightOptions,
  ParsedLayer,
  Scope,
} from "../../core/plugin.ts";
import { type QuantParams, type Tensor, toFloat32 } from "../../core/tensor.ts";
import {
  type AttributeMessage,
  type NodeMessage,
  OnnxAttributeType,
  OnnxDataType,
  type TensorMessage,
  type ValueInfoMessage,
} from "./_protobuf.ts";
import {
  codesAsF32,
  convertWeight,
  elementBytes,
  type OnnxWeightDtype,
  passthroughType,
  transposeBytes,
} from "./_weights.ts";

/** Constants up to this many elements are shared between nodes that ask for the same values. */
const DEDUP_LIMIT = 256;

/** ONNX element type of each constant dtype. */
const CONSTANT_TYPES: Record<OnnxConstantDType, number> = {
  F32: OnnxDataType.FLOAT,
  F64: OnnxDataType.DOUBLE,
  F16: OnnxDataType.FLOAT16,
  I64: OnnxDataType.INT64,
  I32: OnnxDataType.INT32,
  BOOL: OnnxDataType.BOOL,
};

/** Raw little-endian bytes of literal values. */
export function literalBytes(
  dtype: OnnxConstantDType,
  values: ArrayLike<number>,
): Uint8Array {
  const n = values.length;
  switch (dtype) {
    case "F32":
      return new Uint8Array(Float32Array.from(values).buffer);
    case "F64":
      return new Uint8Array(Float64Array.from(values).buffer);
    case "F16":
      return new Uint8Array(Float16Array.from(values).buffer);
    case "I32":
      return new Uint8Array(Int32Array.from(values).buffer);
    case "I64": {
      const a = new BigInt64Array(n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (!Number.isSafeInteger(v)) {
          throw new RangeError(`Cannot store ${v} as an INT64 constant`);
        }
        a[i] = BigInt(v);
      }
      return new Uint8Array(a.buffer);
    }
    case "BOOL":
      return Uint8Array.from(values, (v) => (v ? 1 : 0));
  }
}

function literalTensor(name: string, lit: OnnxTensorLiteral): TensorMessage {
  return {
    name,
    dataType: CONSTANT_TYPES[lit.dtype],
    dims: lit.dims.slice(),
    raw: literalBytes(lit.dtype, lit.values),
  };
}

function attributeMessage(name: string, v: OnnxAttribute): AttributeMessage {
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v)) {
      throw new TypeError(
        `ONNX attribute "${name}": ${v} is not an integer; write a float attribute as { float: ${v} }`,
      );
    }
    return { name, type: OnnxAttributeType.INT, i: v };
  }
  if (typeof v === "string") {
    return { name, type: OnnxAttributeType.STRING, s: v };
  }
  if (Array.isArray(v)) {
    const ints = v as readonly number[];
    for (const i of ints) {
      if (!Number.isSafeInteger(i)) {
        throw new TypeError(
          `ONNX attribute "${name}": ${i} is not an integer; write float lists as { floats: [...] }`,
        );
      }
    }
    return { name, type: OnnxAttributeType.INTS, ints };
  }
  const o = v as Record<string, unknown>;
  if ("float" in o) {
    return { name, type: OnnxAttributeType.FLOAT, f: o.float as number };
  }
  if ("floats" in o) {
    return {
      name,
      type: OnnxAttributeType.FLOATS,
      floats: o.floats as number[],
    };
  }
  return {
    name,
    type: OnnxAttributeType.TENSOR,
    t: literalTensor("", o.tensor as OnnxTensorLiteral),
  };
}

/** Options the builder needs from the exporter. */
export interface GraphBuilderOptions {
  /** Opset of the default domain. */
  opset: number;
  /** How weight matrices are stored. */
  weightDtype: OnnxWeightDtype;
  /** Every exporter option, for layers that read their own. */
  options: Readonly<Record<string, unknown>>;
}

/** The exporter's {@link OnnxBuilder}: collects nodes, initializers and I/O. */
export class GraphBuilder implements OnnxBuilder {
  readonly opset: number;
  readonly options: Readonly<Record<string, unknown>>;
  readonly nodes: NodeMessage[] = [];
  readonly initializers: TensorMessage[] = [];
  readonly inputs: ValueInfoMessage[] = [];
  readonly outputs: ValueInfoMessage[] = [];
  #weightDtype: OnnxWeightDtype;
  #names = new Set<string>();
  #types = new Map<string, number>();
  #counter = 0;
  #paths: string[] = [];
  #constants = new Map<string, string>();
  #weights = new Map<string, string>();
  /** Node count per op type (for reports). */
  readonly opCounts = new Map<string, number>();

  constructor(options: GraphBuilderOptions) {
    this.opset = options.opset;
    this.options = options.options;
    this.#weightDtype = options.weightDtype;
  }

  #claim(name: string): string {
    if (this.#names.has(name)) {
      throw new TypeError(`ONNX value name "${name}" is used twice`);
    }
    this.#names.add(name);
    return name;
  }

  #fresh(base: string): string {
    let name = base;
    for (let i = 1; this.#names.has(name); i++) name = `${base}_${i}`;
    return this.#claim(name);
  }

  /** Declares a graph input. */
  addInput(name: string, elemType: number, dims: (number | string)[]): string {
    this.#claim(name);
    this.#types.set(name, elemType);
    this.inputs.push({ name, elemType, dims });
    return name;
  }

  /** A graph input declared on the first request (see {@link OnnxBuilder.sharedInput}). */
  sharedInput(
    name: string,
    elemType: number,
    dims: readonly (number | string)[],
  ): string {
    if (this.inputs.some((i) => i.name === name)) return name;
    return this.addInput(name, elemType, [...dims]);
  }

  /**
   * Declares `value` as a graph output called `name`, renaming the node
   * output (or adding an `Identity` when the value is an input or initializer).
   */
  addOutput(
    value: string,
    name: string,
    elemType: number,
    dims: (number | string | undefined)[],
  ): void {
    const producer = this.nodes.find((n) => n.outputs.includes(value));
    if (!producer || this.#names.has(name)) {
      this.nodes.push({
        opType: "Identity",
        inputs: [value],
        outputs: [this.#claim(name)],
        name: `${name}/Identity`,
      });
    } else {
      this.#claim(name);
      for (const n of this.nodes) {
        n.outputs = n.outputs.map((o) => o === value ? name : o);
        n.inputs = n.inputs.map((i) => i === value ? name : i);
      }
    }
    this.outputs.push({ name, elemType, dims });
  }

  node(
    opType: string,
    inputs: readonly string[],
    attributes: Readonly<Record<string, OnnxAttribute>> = {},
    outputs = 1,
  ): string[] {
    const prefix = this.#paths.length
      ? this.#paths[this.#paths.length - 1]
      : "graph";
    const base = `${prefix}/${opType}_${this.#counter++}`;
    const name = this.#fresh(base);
    const outs = outputs === 1
      ? [name]
      : Array.from({ length: outputs }, (_, i) => this.#fresh(`${name}:${i}`));
    for (const i of inputs) {
      if (i !== "" && !this.#names.has(i)) {
        throw new TypeError(
          `ONNX node ${name}: input "${i}" is not a value of the graph`,
        );
      }
    }
    this.nodes.push({
      opType,
      inputs: inputs.slice(),
      outputs: outs,
      name,
      attributes: Object.entries(attributes).map(([k, v]) =>
        attributeMessage(k, v)
      ),
    });
    this.opCounts.set(opType, (this.opCounts.get(opType) ?? 0) + 1);
    if (opType === "Cast") {
      this.#types.set(outs[0], attributes.to as number);
    } else if (opType === "DequantizeLinear") {
      this.#types.set(outs[0], OnnxDataType.FLOAT);
    }
    return outs;
  }

  op(
    opType: string,
    inputs: readonly string[],
    attributes?: Readonly<Record<string, OnnxAttribute>>,
  ): string {
    return this.node(opType, inputs, attributes, 1)[0];
  }

  #initializer(name: string, t: Omit<TensorMessage, "name">): string {
    const n = this.#fresh(name);
    this.initializers.push({ ...t, name: n });
    this.#types.set(n, t.dataType);
    return n;
  }

  constant(
    dtype: OnnxConstantDType,
    dims: readonly number[],
    values: ArrayLike<number>,
  ): string {
    const count = dims.reduce((a, b) => a * b, 1);
    if (count !== values.length) {
      throw new RangeError(
        `ONNX constant: ${values.length} values for shape [${
          dims.join(", ")
        }] (${count} elements)`,
      );
    }
    const small = values.length <= DEDUP_LIMIT;
    const key = small
      ? `${dtype}|${dims.join(",")}|${Array.from(values).join(",")}`
      : "";
    if (small) {
      const hit = this.#constants.get(key);
      if (hit) return hit;
    }
    const name = this.#initializer(`const_${this.#constants.size}`, {
      dataType: CONSTANT_TYPES[dtype],
      dims: dims.slice(),
      raw: literalBytes(dtype, values),
    });
    this.#constants.set(small ? key : `#${name}`, name);
    return name;
  }

  elemType(value: string): number | undefined {
    return this.#types.get(value);
  }

  refuse(path: string, type: string, reason: string): TypeError {
    return new TypeError(
      `Cannot export ${path} (${type}) to ONNX: ${reason}`,
    );
  }

  lower(
    layer: ParsedLayer,
    weights: Scope,
    input: string,
    context: OnnxLowerContext,
  ): string {
    const plugin = layer.plugin;
    if (!plugin.toOnnx) {
      throw this.refuse(
        context.path,
        plugin.type,
        "its layer plugin has no ONNX lowering (toOnnx)",
      );
    }
    this.#paths.push(context.path);
    try {
      return plugin.toOnnx(this, layer.cfg, weights, input, context);
    } finally {
      this.#paths.pop();
    }
  }

  weight(
    weights: Scope,
    name: string,
    options: OnnxWeightOptions = {},
  ): string {
    const stored = weights.get(name, options.shape);
    const full = weights.prefix === "" ? name : `${weights.prefix}.${name}`;
    const transpose = options.transpose === true;
    if (transpose && stored.shape.length !== 2) {
      throw new TypeError(
        `Cannot transpose weight "${full}" of shape [${
          stored.shape.join(", ")
        }]: only matrices transpose`,
      );
    }
    const key = `${full}${transpose ? "\u0000T" : ""}`;
    const hit = this.#weights.get(key);
    if (hit) return hit;
    const t = convertWeight(
      stored,
      this.#weightDtype,
      () => weights.getF32(name, options.shape),
    );
    const value = this.#lowerWeight(full, t, transpose);
    this.#weights.set(key, value);
    return value;
  }

  /** The initializer(s) of one tensor and the nodes that widen it to F32. */
  #lowerWeight(full: string, t: Tensor, transpose: boolean): string {
    const info = dtypeInfo(t.dtype);
    let dims = t.shape.slice();
    let dataType = passthroughType(t.dtype, this.opset);
    let raw: Uint8Array;
    let quant: QuantParams | undefined = t.quant;
    if (dataType !== undefined) {
      raw = t.bytes.subarray(
        0,
        dims.reduce((a, b) => a * b, 1) * info.blockBytes,
      );
    } else if (
      info.kind === "float" && info.exactInF32 && info.blockBytes <= 1
    ) {
      // FP8 before opset 19, F4: every value is exact in F16.
      dataType = OnnxDataType.FLOAT16;
      raw = new Uint8Array(Float16Array.from(codesAsF32(t)).buffer);
    } else {
      // Block-quantized GGUF types (and anything else ONNX cannot hold):
      // dequantized to F32 here.
      dataType = OnnxDataType.FLOAT;
      raw = new Uint8Array(toFloat32(t).buffer);
      quant = undefined;
    }
    let lateTranspose = false;
    let suffix = "";
    if (transpose) {
      const size = elementBytes(dataType);
      if (quant?.blockSize !== undefined || size === 0) {
        lateTranspose = true;
      } else {
        raw = transposeBytes(raw, dims[0], dims[1], size);
        dims = [dims[1], dims[0]];
        if (quant && typeof quant.scale !== "number") {
          quant = { ...quant, axis: 1 - (quant.axis ?? 0) };
        }
        suffix = ".T";
      }
    }
    const base = `${full}${suffix}`;
    const init = this.#initializer(base, { dataType, dims, raw });
    let value = quant
      ? this.#dequantize(base, init, dataType, dims, quant)
      : dataType === OnnxDataType.FLOAT
      ? init
      : this.op("Cast", [init], { to: OnnxDataType.FLOAT });
    if (lateTranspose) value = this.op("Transpose", [value], { perm: [1, 0] });
    return value;
  }

  /** Codes → F32 with the tensor's scale and zero point. */
  #dequantize(
    base: string,
    init: string,
    dataType: number,
    dims: number[],
    q: QuantParams,
  ): string {
    const perAxis = typeof q.scale !== "number";
    const scales = typeof q.scale === "number"
      ? [q.scale]
      : Array.from(q.scale);
    // One zero point per scale (a single one is repeated).
    const zps = q.zeroPoint === undefined
      ? undefined
      : typeof q.zeroPoint === "number"
      ? scales.map(() => q.zeroPoint as number)
      : Array.from(q.zeroPoint);
    const axis = q.axis ?? 0;
    const range = dataType === OnnxDataType.INT8
      ? [-128, 127]
      : dataType === OnnxDataType.UINT8
      ? [0, 255]
      : undefined;
    const zpFits = zps === undefined ||
      (range !== undefined &&
        zps.every((z) =>
          Number.isInteger(z) && z >= range[0] && z <= range[1]
        ));
    if (range && zpFits && q.blockSize === undefined) {
      const sdims = perAxis ? [scales.length] : [];
      const scale = this.#initializer(`${base}.scale`, {
        dataType: OnnxDataType.FLOAT,
        dims: sdims,
        raw: literalBytes("F32", scales),
      });
      const inputs = [init, scale];
      if (zps) {
        inputs.push(this.#initializer(`${base}.zero_point`, {
          dataType,
          dims: sdims,
          raw: dataType === OnnxDataType.INT8
            ? new Uint8Array(Int8Array.from(zps).buffer)
            : Uint8Array.from(zps),
        }));
      }
      return this.op(
        "DequantizeLinear",
        inputs,
        perAxis ? { axis } : {},
      );
    }
    // General affine form: (float(code) − zero_point) · scale.
    let x = dataType === OnnxDataType.FLOAT
      ? init
      : this.op("Cast", [init], { to: OnnxDataType.FLOAT });
    let pdims: number[];
    if (q.blockSize !== undefined) {
      const n = dims.reduce((a, b) => a * b, 1);
      pdims = [n / q.blockSize, 1];
      x = this.op("Reshape", [x, this.constant("I64", [2], [-1, q.blockSize])]);
    } else if (perAxis) {
      pdims = [scales.length, ...dims.slice(axis + 1).map(() => 1)];
    } else {
      pdims = [];
    }
    if (zps && zps.some((z) => z !== 0)) {
      const zp = this.#initializer(`${base}.zero_point`, {
        dataType: OnnxDataType.FLOAT,
        dims: pdims,
        raw: literalBytes("F32", zps),
      });
      x = this.op("Sub", [x, zp]);
    }
    const scale = this.#initializer(`${base}.scale`, {
      dataType: OnnxDataType.FLOAT,
      dims: pdims,
      raw: literalBytes("F32", scales),
    });
    x = this.op("Mul", [x, scale]);
    if (q.blockSize !== undefined) {
      x = this.op("Reshape", [x, this.constant("I64", [dims.length], dims)]);
    }
    return x;
  }
}
