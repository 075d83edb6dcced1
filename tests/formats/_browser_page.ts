/**
 * Runs in headless Chromium for bundle_browser_test.ts: loads the bundle the
 * test serves with the same core modules Deno uses, runs every model on the
 * served input and posts the outputs (as F32 bit patterns) back.
 */

import { loadAllTensors } from "../../core/model.ts";
import { buildNetwork } from "../../core/network.ts";
import { floatTensor } from "../../core/tensor.ts";
import { loadBundle } from "../../formats/bundle/mod.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import { createRegistry } from "../../registry.ts";
import { kernelInfo } from "../../kernels/fast/mod.ts";

interface Input {
  data: number[];
  shape: number[];
}

async function post(body: unknown): Promise<void> {
  await fetch("/result", { method: "POST", body: JSON.stringify(body) });
}

async function main(): Promise<void> {
  try {
    const bytes = new Uint8Array(
      await (await fetch("/model.bundle.json")).arrayBuffer(),
    );
    const input: Input = await (await fetch("/input.json")).json();
    const file = await loadBundle(bytes);
    const reg = createRegistry().use(LAYER_PLUGINS);
    const results: Record<string, { shape: number[]; bits: number[] }> = {};
    for (const m of file.models) {
      const net = buildNetwork(reg, m.config, await loadAllTensors(m.tensors));
      const y = net.forward(
        floatTensor(new Float32Array(input.data), input.shape),
      );
      results[m.id] = {
        shape: y.shape,
        bits: [
          ...new Uint32Array(y.data.buffer, y.data.byteOffset, y.data.length),
        ],
      };
    }
    let tampered = "loaded";
    try {
      await loadBundle(await (await fetch("/tampered.bundle.json")).text());
    } catch (e) {
      tampered = `${(e as Error).name}: ${(e as Error).message}`;
    }
    await post({
      ok: true,
      results,
      tampered,
      agent: navigator.userAgent,
      kernels: kernelInfo(),
    });
  } catch (e) {
    await post({ ok: false, error: String((e as Error)?.stack ?? e) });
  }
}

main();
