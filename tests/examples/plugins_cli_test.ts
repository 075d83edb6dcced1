// The example plugins as a CLI user meets them: `deno run -A cli.ts ...
// --plugin examples/plugins/<name>/mod.ts`, in a subprocess, from the
// repository root. Values are checked against NumPy's reading of the
// fixtures (examples/plugins/npy/testdata/expected.json).

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { readSafetensors } from "../../formats/safetensors/mod.ts";
import { fileSource } from "../../io/file.ts";
import { readNpz } from "../../examples/plugins/npy/mod.ts";
import { conv1dLayer } from "../../examples/plugins/conv1d/mod.ts";
import { saveSafetensors } from "../../io/safetensors.ts";
import {
  buildNetwork,
  defaultRegistry,
  floatTensor,
  initNetwork,
  memoryTensorIndex,
  type ModelFile,
} from "../../mod.ts";
import { runOrt } from "../formats/_ort.ts";

const NPY = "examples/plugins/npy/mod.ts";
const CONV = "examples/plugins/conv1d/mod.ts";
const DATA = "examples/plugins/npy/testdata";

async function cli(
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const res = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "cli.ts", ...args],
    cwd: REPO_ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return {
    code: res.code,
    out: dec.decode(res.stdout),
    err: dec.decode(res.stderr),
  };
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function tensorsHex(file: ModelFile): Promise<Record<string, string>> {
  const m = file.models[0];
  const out: Record<string, string> = {};
  for (const n of m.tensors.names()) {
    const t = await m.tensors.load(n);
    out[n] = `${t.dtype} [${t.shape}] ${hex(t.bytes)}`;
  }
  return out;
}

Deno.test("examples: --plugin lists the npy/npz formats and the conv1d layer", async () => {
  const [formats, layers, json] = await Promise.all([
    cli("formats", "--plugin", NPY),
    cli("layers", "--plugin", CONV),
    cli("formats", "--json", "--plugin", NPY, "--plugin", CONV),
  ]);
  assertEquals(formats.code, 0, formats.err);
  assertStringIncludes(formats.out, "npy            .npy");
  assertStringIncludes(formats.out, "npz            .npz");
  assertEquals(layers.code, 0, layers.err);
  assert(
    layers.out.split("\n").some((l) => /^conv1d\s+1-D convolution/.test(l)),
    layers.out,
  );
  const rows = JSON.parse(json.out) as { name: string; options: string[] }[];
  assertEquals(
    rows.find((r) => r.name === "npz")?.options,
    ["compress", "strictDtypes"],
  );
});

Deno.test("examples: inspect reads .npy and .npz files through the plugin", async () => {
  const [npz, npy] = await Promise.all([
    cli("inspect", `${DATA}/savez_compressed.npz`, "--plugin", NPY),
    cli("inspect", "--json", `${DATA}/big_endian_i8.npy`, "--plugin", NPY),
  ]);
  assertEquals(npz.code, 0, npz.err);
  assertStringIncludes(npz.out, "savez_compressed.npz: npz");
  assert(/layers\.0\.bias\s+F16\s+\[4\]/.test(npz.out), npz.out);
  assert(/big\s+F32\s+\[20, 30\]\s+600\s+2400/.test(npz.out), npz.out);
  assertEquals(npy.code, 0, npy.err);
  const report = JSON.parse(npy.out);
  assertEquals(report.format, "npy");
  assertStringIncludes(JSON.stringify(report), '"I64"');
  assertStringIncludes(JSON.stringify(report), '">i8"');
  // Without the plugin, the CLI does not know the file.
  const without = await cli("inspect", `${DATA}/dtype_f4.npy`);
  assertEquals(without.code, 1);
  assertStringIncludes(without.err, 'No format for "');
});

Deno.test("examples: convert npz → safetensors → npz keeps every array", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const st = join(dir, "w.safetensors");
    const back = join(dir, "back.npz");
    const a = await cli(
      "convert",
      `${DATA}/savez.npz`,
      "-o",
      st,
      "--plugin",
      NPY,
    );
    assertEquals(a.code, 0, a.err);
    const b = await cli(
      "convert",
      st,
      "-o",
      back,
      "--compress",
      "--plugin",
      NPY,
    );
    assertEquals(b.code, 0, b.err);

    const expected = JSON.parse(
      await Deno.readTextFile(join(REPO_ROOT, DATA, "expected.json")),
    )["savez.npz"].arrays as Record<
      string,
      { shape: number[]; hex: string }
    >;
    const dtypes: Record<string, string> = {
      "layers.0.weight": "F32",
      "layers.0.bias": "F16",
      ids: "I64",
      mask: "BOOL",
      big: "F32",
    };
    const want = Object.fromEntries(
      Object.entries(expected).map((
        [k, v],
      ) => [k, `${dtypes[k]} [${v.shape}] ${v.hex}`]),
    );
    const stSrc = await fileSource(st);
    const npzSrc = await fileSource(back);
    try {
      assertEquals(await tensorsHex(await readSafetensors(stSrc)), want);
      assertEquals(await tensorsHex(await readNpz(npzSrc)), want);
    } finally {
      stSrc.close?.();
      npzSrc.close?.();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("examples: convert --to onnx exports a network with the conv1d plugin's layer", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const reg = defaultRegistry().use(conv1dLayer);
    const config = {
      input_size: 3,
      layers: [
        { type: "conv1d", out_channels: 4, kernel_size: 3, padding: "same" },
        { type: "dense", output_size: 2, activation: "tanh" },
      ],
    };
    const weights = initNetwork(reg, config, 3);
    const st = join(dir, "net.safetensors");
    const onnxPath = join(dir, "net.onnx");
    await saveSafetensors(st, {
      models: [{
        id: "net",
        config,
        metadata: {},
        tensors: memoryTensorIndex(weights.values()),
      }],
    });
    const without = await cli("convert", st, "--to", "onnx", "-o", onnxPath);
    assertEquals(without.code, 1);
    assertStringIncludes(without.err, 'Unknown layer type "conv1d"');
    const res = await cli(
      "convert",
      st,
      "--to",
      "onnx",
      "--sequence",
      "-o",
      onnxPath,
      "--plugin",
      CONV,
    );
    assertEquals(res.code, 0, res.err);
    const x = floatTensor(
      Float32Array.from({ length: 2 * 9 * 3 }, (_, i) => Math.sin(i)),
      [2, 9, 3],
    );
    const want = buildNetwork(reg, config, weights).forward(x);
    const got = await runOrt(await Deno.readFile(onnxPath), {
      name: "input",
      ...x,
    });
    assertEquals(got.shape, [2, 9, 2]);
    want.data.forEach((v, i) =>
      assert(Math.abs(got.data[i] - v) <= 1e-5, `${i}: ${got.data[i]} vs ${v}`)
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
