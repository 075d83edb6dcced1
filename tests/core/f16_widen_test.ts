/**
 * F16 widening: the table and the platform path (Float16Array plus the NaN
 * pass) give identical bits on all 65,536 codes, and the measured choice
 * runs one of them. The table itself is checked against the platform's
 * decoders and the bit layout in quants_test.ts and dtypes_test.ts.
 */

import { assert, assertEquals } from "@std/assert";
import {
  f16WidenState,
  widenF16,
  widenF16Platform,
  widenF16Table,
} from "../../core/quants/f16_widen.ts";
import { decodeToF32 } from "../../core/dtypes.ts";

const HAS_F16 = typeof (globalThis as { Float16Array?: unknown })
  .Float16Array === "function";

Deno.test("F16 widening: table and platform paths give the same bits on all 65536 codes", () => {
  if (!HAS_F16) {
    console.log("skipped: no Float16Array on this platform");
    return;
  }
  const codes = Uint16Array.from({ length: 65536 }, (_, i) => i);
  const t = new Uint32Array(widenF16Table(codes).buffer);
  const p = new Uint32Array(widenF16Platform(codes).buffer);
  // the platform's own conversion, without the NaN pass: quiets signaling NaNs
  const raw = new Uint32Array(
    new Float32Array(new Float16Array(codes.buffer)).buffer,
  );
  let quieted = 0;
  for (let h = 0; h < 65536; h++) {
    assertEquals(p[h], t[h], `code 0x${h.toString(16)}`);
    if (raw[h] !== t[h]) {
      quieted++;
      assertEquals(raw[h], (t[h] | 0x400000) >>> 0); // only the quiet bit
    }
  }
  // 2 signs × 511 signaling NaN payloads: the case the NaN pass is for
  assertEquals(quieted, 1022);
  // an odd offset into a larger buffer
  const buf = new Uint16Array(65537);
  buf.set(codes, 1);
  assertEquals(widenF16Platform(buf.subarray(1)), widenF16Table(codes));
});

Deno.test("F16 widening: the measured choice is one of the two and decodeToF32 follows it", () => {
  const saved = f16WidenState.path;
  try {
    f16WidenState.path = undefined;
    const n = 1 << 16; // large enough to trigger the measurement
    const codes = Uint16Array.from({ length: n }, (_, i) => i);
    const bytes = new Uint8Array(codes.buffer);
    const y = widenF16(codes);
    const path = f16WidenState.path as string | undefined;
    assert(path === "table" || path === "platform");
    if (HAS_F16) {
      const { table, platform } = f16WidenState.timings!;
      console.log(
        `F16 widening chose ${path}: table ${table.toFixed(2)} ms, platform ${
          platform.toFixed(2)
        } ms per 1 Mi codes`,
      );
    }
    assertEquals(
      new Uint32Array(y.buffer),
      new Uint32Array(widenF16Table(codes).buffer),
    );
    for (const forced of ["table", "platform"] as const) {
      if (forced === "platform" && !HAS_F16) continue;
      f16WidenState.path = forced;
      assertEquals(
        new Uint32Array(decodeToF32("F16", bytes, n).buffer),
        new Uint32Array(widenF16Table(codes).buffer),
      );
    }
  } finally {
    f16WidenState.path = saved;
  }
});
