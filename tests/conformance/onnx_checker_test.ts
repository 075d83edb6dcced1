// Every export checked by the ONNX reference checker:
// `onnx.checker.check_model(onnx.load(p), full_check=True)` (Debian
// python3-onnx) at opsets 13 and 17, all files in one Python process. The
// same process reads back what our protobuf writer wrote (IR version,
// opsets, symbolic dims, initializer types, metadata). Skipped, with a
// message, when /usr/bin/python3 or its onnx module is absent.

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { exportOnnx, exportOnnxFiles } from "../../formats/onnx/mod.ts";
import { saveOnnx } from "../../io/onnx.ts";
import {
  caseNetwork,
  CASES,
  type OnnxCase,
  SEQUENCE_CASES,
} from "../formats/_onnx_cases.ts";

const PYTHON = "/usr/bin/python3";

function hasOnnx(): boolean {
  try {
    const r = new Deno.Command(PYTHON, {
      args: ["-c", "import onnx"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return r.success;
  } catch {
    return false;
  }
}

const AVAILABLE = hasOnnx();
if (!AVAILABLE) {
  console.error(
    `onnx checker: ${PYTHON} with the onnx module not found; skipping the ONNX conformance test`,
  );
}

const SCRIPT = `
import json, sys, onnx
out = {}
for p in sys.argv[1:]:
    r = {}
    try:
        m = onnx.load(p)
        onnx.checker.check_model(m, full_check=True)
        r["ok"] = True
    except Exception as e:
        r["ok"] = False
        r["error"] = str(e)[:2000]
        out[p] = r
        continue
    dims = lambda v: [d.dim_param if d.HasField("dim_param") else (d.dim_value if d.HasField("dim_value") else None) for d in v.type.tensor_type.shape.dim]
    r["ir"] = m.ir_version
    r["opsets"] = [[o.domain, o.version] for o in m.opset_import]
    r["producer"] = [m.producer_name, m.producer_version]
    r["inputs"] = [[v.name, v.type.tensor_type.elem_type, dims(v)] for v in m.graph.input]
    r["outputs"] = [[v.name, v.type.tensor_type.elem_type, dims(v)] for v in m.graph.output]
    r["init"] = {t.name: [t.data_type, list(t.dims)] for t in m.graph.initializer}
    r["meta"] = {e.key: e.value for e in m.metadata_props}
    r["nodes"] = len(m.graph.node)
    out[p] = r
print(json.dumps(out))
`;

interface Report {
  ok: boolean;
  error?: string;
  ir: number;
  opsets: [string, number][];
  producer: [string, string];
  inputs: [string, number, (string | number | null)[]][];
  outputs: [string, number, (string | number | null)[]][];
  init: Record<string, [number, number[]]>;
  meta: Record<string, string>;
  nodes: number;
}

Deno.test({
  name:
    "conformance: onnx.checker (full_check) accepts every export at opsets 13 and 17",
  ignore: !AVAILABLE,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const files: { path: string; c: OnnxCase; opset: number }[] = [];
      for (const c of [...CASES, ...SEQUENCE_CASES]) {
        const net = caseNetwork(c);
        for (const opset of [13, 17]) {
          const path = join(dir, `${files.length}.onnx`);
          await Deno.writeFile(
            path,
            exportOnnx(net, { ...c.options, opsetVersion: opset }),
          );
          files.push({ path, c, opset });
        }
      }
      // Weight storage variants and external data.
      const mlp = caseNetwork(CASES.find((c) => c.name === "MLP 2 layers")!);
      const extra: Record<string, string> = {};
      for (const wd of ["F16", "I8"] as const) {
        for (const opset of [13, 17]) {
          const path = join(dir, `w_${wd}_${opset}.onnx`);
          await Deno.writeFile(
            path,
            exportOnnxFiles(mlp, { weightDtype: wd, opsetVersion: opset })
              .model,
          );
          extra[`${wd}/${opset}`] = path;
        }
      }
      const ext = join(dir, "external.onnx");
      await saveOnnx(ext, mlp, {
        externalData: true,
        externalDataThreshold: 64,
      });
      const paths = [
        ...files.map((f) => f.path),
        ...Object.values(extra),
        ext,
      ];
      const r = await new Deno.Command(PYTHON, {
        args: ["-c", SCRIPT, ...paths],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert(r.success, new TextDecoder().decode(r.stderr));
      const reports: Record<string, Report> = JSON.parse(
        new TextDecoder().decode(r.stdout),
      );
      const failed = paths.filter((p) => !reports[p].ok).map((p) => {
        const f = files.find((x) => x.path === p);
        return `${f ? `${f.c.name} (opset ${f.opset})` : p}: ${
          reports[p].error
        }`;
      });
      assertEquals(failed, []);

      // What the reader saw equals what we meant to write.
      for (const f of files) {
        const rep = reports[f.path];
        assertEquals(rep.ir, f.opset === 13 ? 7 : 8);
        assertEquals(rep.opsets, [["", f.opset]]);
        assertEquals(rep.producer, ["modelhost", "0.1.0"]);
        const net = caseNetwork(f.c);
        assertEquals(rep.meta["modelhost.config"], JSON.stringify(net.config));
        const [name, elem, dims] = rep.inputs[0];
        if (f.c.input === "ids") {
          assertEquals([name, elem, dims], ["input_ids", 7, [
            "batch",
            "sequence",
          ]]);
        } else if (f.c.input === "sequence") {
          assertEquals([name, elem, dims], ["input", 1, [
            "batch",
            "sequence",
            net.spec.inputSize,
          ]]);
        } else {
          assertEquals([name, elem, dims], ["input", 1, [
            "batch",
            net.spec.inputSize,
          ]]);
        }
        assertEquals(rep.outputs[0][0], "output");
        assertEquals(rep.outputs[0][2].at(-1), net.spec.outputSize);
      }
      const f16 = reports[extra["F16/17"]].init;
      assertEquals(f16["layers.0.weight.T"], [10, [8, 16]]); // FLOAT16, [in, out]
      assertEquals(f16["layers.0.bias"], [1, [16]]);
      const i8 = reports[extra["I8/13"]].init;
      assertEquals(i8["layers.1.weight.T"], [3, [16, 3]]); // INT8
      assertEquals(i8["layers.1.weight.T.scale"], [1, [3]]);
      assertEquals(reports[ext].init["layers.0.weight.T"], [1, [8, 16]]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
