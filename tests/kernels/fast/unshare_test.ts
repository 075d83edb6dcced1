import { assert, assertEquals } from "@std/assert";
import { decodeBase64 } from "@std/encoding";
import { unshare } from "../../../kernels/wasm/_engine.ts";
import {
  RELAXED_BASE64,
  SIMD_BASE64,
} from "../../../kernels/wasm/_module_bytes.ts";

// Pages without cross-origin isolation have no SharedArrayBuffer: the kernel
// module's shared memory import is then rewritten to a plain one.
for (
  const [name, b64] of [["relaxed", RELAXED_BASE64], [
    "simd",
    SIMD_BASE64,
  ]] as const
) {
  Deno.test(`kernel module (${name}) compiles and instantiates with a non-shared memory`, () => {
    const shared = decodeBase64(b64);
    const plain = unshare(shared);
    assertEquals(plain.length, shared.length);
    const diff = [...plain].map((v, i) => v === shared[i] ? -1 : i).filter((
      i,
    ) => i >= 0);
    assertEquals(diff.length, 1, "exactly one byte (the limits flag) changes");
    assertEquals([shared[diff[0]], plain[diff[0]]], [0x03, 0x01]);
    if (
      name === "relaxed" &&
      !WebAssembly.validate(shared as Uint8Array<ArrayBuffer>)
    ) return;
    const memory = new WebAssembly.Memory({ initial: 17, maximum: 65536 });
    const inst = new WebAssembly.Instance(
      new WebAssembly.Module(plain as Uint8Array<ArrayBuffer>),
      {
        env: { memory },
      },
    );
    assert(Object.keys(inst.exports).length > 10);
  });
}
