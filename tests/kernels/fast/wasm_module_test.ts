import { assert, assertEquals } from "@std/assert";
import { decodeBase64 } from "@std/encoding";
import { renderModuleBytesFile } from "../../../kernels/wasm/_generate.ts";
import { buildKernelModule } from "../../../kernels/wasm/_kernels.ts";
import {
  RELAXED_BASE64,
  SIMD_BASE64,
} from "../../../kernels/wasm/_module_bytes.ts";
import { Writer } from "../../../kernels/wasm/_asm.ts";

Deno.test("the shipped kernel module is generated from the current source (run `deno task build:wasm` if not)", async () => {
  const stored = await Deno.readTextFile(
    new URL("../../../kernels/wasm/_module_bytes.ts", import.meta.url),
  );
  assert(
    stored === renderModuleBytesFile(),
    "kernels/wasm/_module_bytes.ts is stale: run `deno task build:wasm`",
  );
  assertEquals(decodeBase64(RELAXED_BASE64), buildKernelModule("relaxed"));
  assertEquals(decodeBase64(SIMD_BASE64), buildKernelModule("simd"));
});

Deno.test("both module variants validate; only the relaxed one uses relaxed-SIMD opcodes", () => {
  const relaxed = decodeBase64(RELAXED_BASE64);
  const simd = decodeBase64(SIMD_BASE64);
  assert(WebAssembly.validate(relaxed));
  assert(WebAssembly.validate(simd));
  // 0xfd 0x85 0x02 is the LEB128 prefix of f32x4.relaxed_madd (0x105)
  const has = (b: Uint8Array, seq: number[]) =>
    b.some((_, i) => seq.every((v, j) => b[i + j] === v));
  assert(has(relaxed, [0xfd, 0x85, 0x02]));
  assert(!has(simd, [0xfd, 0x85, 0x02]));
  // module emission is deterministic
  assertEquals(buildKernelModule("simd"), buildKernelModule("simd"));
});

Deno.test("assembler LEB128 encodings (hand-computed)", () => {
  const u = new Writer();
  u.u32(624485);
  assertEquals(u.bytes, [0xe5, 0x8e, 0x26]);
  const s = new Writer();
  s.s32(-123456);
  assertEquals(s.bytes, [0xc0, 0xbb, 0x78]);
  const z = new Writer();
  z.s32(-1);
  z.s32(63);
  z.s32(64);
  assertEquals(z.bytes, [0x7f, 0x3f, 0xc0, 0x00]);
});
