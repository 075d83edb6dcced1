/**
 * Recorded checksums are verified on load by default (issue 18, defect 4):
 * one flipped byte in a SafeTensors file with `modelhost.sha256` used to be
 * computed with by `openSafetensors`, `openModel` and `run` (only `validate`
 * noticed); a bundle's I8 tensor relabelled BOOL passed its checksum, and a
 * bundle with a tensor's `sha256` deleted was accepted.
 */

import { assert, assertEquals, assertRejects } from "@std/assert";
import { join } from "@std/path";
import { memoryTensorIndex, type ModelFile } from "../../core/model.ts";
import { memorySource } from "../../core/sources.ts";
import { initNetwork } from "../../core/network.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import {
  readSafetensors,
  serializeSafetensors,
} from "../../formats/safetensors/mod.ts";
import {
  ChecksumError,
  loadBundle,
  saveBundle,
} from "../../formats/bundle/mod.ts";
import { openModel } from "../../io/open.ts";
import { openSafetensors } from "../../io/safetensors.ts";
import { runCli } from "../cli/_cli.ts";

const CFG = {
  input_size: 4,
  layers: [{ type: "dense", output_size: 3 }],
};

async function netFile(sha256: boolean): Promise<Uint8Array> {
  const reg = defaultRegistry();
  const file: ModelFile = {
    models: [{
      id: "net",
      config: CFG,
      metadata: {},
      tensors: memoryTensorIndex(initNetwork(reg, CFG, 5).values()),
    }],
  };
  return await serializeSafetensors(file, { sha256 });
}

/** The file with the last data byte flipped (inside layers.0.weight or bias). */
function flipped(b: Uint8Array): Uint8Array {
  const c = b.slice();
  c[c.length - 1] ^= 0x40;
  return c;
}

Deno.test("SafeTensors: a flipped byte is refused on load by readSafetensors, openSafetensors, openModel and run", async () => {
  const bad = flipped(await netFile(true));
  const f = await readSafetensors(memorySource(bad, "net.safetensors"));
  const names = f.models[0].tensors.names();
  let refused = 0;
  for (const n of names) {
    try {
      await f.models[0].tensors.load(n);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      assert(e.message.includes("Checksum mismatch in tensor"), e.message);
      assert(e.message.includes("net.safetensors"));
      refused++;
    }
  }
  assertEquals(refused, 1, "exactly the damaged tensor");
  // opted out: reads what is there
  const loose = await readSafetensors(memorySource(bad), { verify: false });
  for (const n of names) await loose.models[0].tensors.load(n);

  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "net.safetensors");
    await Deno.writeFile(path, bad);
    const st = await openSafetensors(path);
    try {
      await assertRejects(
        async () => {
          for (const n of names) await st.models[0].tensors.load(n);
        },
        RangeError,
        "Checksum mismatch",
      );
    } finally {
      st.close();
    }
    const opened = await openModel(defaultRegistry(), path);
    try {
      await assertRejects(
        async () => {
          for (const n of names) await opened.file.models[0].tensors.load(n);
        },
        RangeError,
        "Checksum mismatch",
      );
    } finally {
      opened.close();
    }
    const run = await runCli(["run", path, "--input", "[1, 2, 3, 4]"]);
    assertEquals(run.code, 1, run.out);
    assert(run.err.includes("Checksum mismatch"), run.err);
    const ok = await runCli([
      "run",
      path,
      "--input",
      "[1, 2, 3, 4]",
      "--no-verify",
    ]);
    assertEquals(ok.code, 0, ok.err);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SafeTensors: a file without modelhost.sha256 reads as before; a map missing a tensor is refused", async () => {
  const plain = await readSafetensors(memorySource(await netFile(false)));
  assertEquals(plain.models[0].tensors.names().length, 2);
  const b = await netFile(true);
  const n = Number(new DataView(b.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(b.subarray(8, 8 + n)));
  const map = JSON.parse(header.__metadata__["modelhost.sha256"]);
  delete map["layers.0.bias"];
  header.__metadata__["modelhost.sha256"] = JSON.stringify(map);
  const h = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + b.length - 8 - n);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(b.subarray(8 + n), 8 + h.length);
  await assertRejects(
    () => readSafetensors(memorySource(out)),
    TypeError,
    'Cannot verify tensor "layers.0.bias"',
  );
  await readSafetensors(memorySource(out), { verify: false });
});

async function i8Bundle(): Promise<string> {
  return await saveBundle([{
    id: "m",
    tensors: [
      { name: "q", dtype: "I8", shape: [4], bytes: Uint8Array.of(0, 1, 1, 0) },
      tensorFromF32("w", Float32Array.of(1, 2), [2]),
    ],
  }]);
}

Deno.test("bundle: an I8 tensor relabelled BOOL is refused by the descriptor checksum", async () => {
  const doc = JSON.parse(await i8Bundle());
  doc.models[0].weights.tensors.q.dtype = "BOOL";
  await assertRejects(
    () => loadBundle(JSON.stringify(doc)),
    ChecksumError,
    "dtype, shape and quantization fields",
  );
  const shaped = JSON.parse(await i8Bundle());
  shaped.models[0].weights.tensors.q.shape = [2, 2];
  await assertRejects(() => loadBundle(JSON.stringify(shaped)), ChecksumError);
  const loose = await loadBundle(JSON.stringify(doc), undefined, {
    verify: false,
  });
  assertEquals(loose.models[0].tensors.info("q").dtype, "BOOL");
});

Deno.test("bundle: a tensor's sha256 removed is refused, with or without weights.sha256", async () => {
  const doc = JSON.parse(await i8Bundle());
  delete doc.models[0].weights.tensors.q.sha256;
  await assertRejects(
    () => loadBundle(JSON.stringify(doc)),
    TypeError,
    'tensor "q" has no sha256',
  );
  delete doc.models[0].weights.sha256;
  await assertRejects(
    () => loadBundle(JSON.stringify(doc)),
    TypeError,
    '1 of 2 tensors record a sha256, "q" does not',
  );
  // every checksum gone: an unchecked bundle, as saveBundle({checksums: false}) writes
  delete doc.models[0].weights.tensors.w.sha256;
  const b = await loadBundle(JSON.stringify(doc));
  assertEquals(b.models[0].tensors.names(), ["q", "w"]);
  const unchecked = await saveBundle([{
    id: "m",
    tensors: [tensorFromF32("w", Float32Array.of(1), [1])],
  }], { checksums: false });
  assert(!unchecked.includes("sha256"));
  await loadBundle(unchecked);
});
