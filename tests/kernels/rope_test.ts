import { assertEquals, assertThrows } from "@std/assert";
import {
  applyRope,
  ropeFrequencies,
  type RopeScaling,
  ropeTable,
} from "../../kernels/rope.ts";
import { assertClose, VECTORS } from "../layers/_attention_vectors.ts";

const R = VECTORS.rope;

for (const c of R.cases) {
  const label = `${c.style}, θ=${c.theta}, ${
    c.scaling ? (c.scaling.rope_type ?? c.scaling.type) : "no scaling"
  }`;
  Deno.test(`rope ${label}: frequencies and rotation match PyTorch at positions up to 4097`, () => {
    const scaling = c.scaling as RopeScaling | null;
    const freq = ropeFrequencies(R.head_dim, c.theta, scaling);
    assertClose(freq, c.frequencies, 1e-9, `${label} frequencies`);
    const P = R.positions.length;
    const table = ropeTable(freq, Math.max(...R.positions) + 1);
    // The vectors hold [heads, positions, D]; the kernel rotates rows at
    // consecutive positions, so rotate each (head, position) row on its own.
    const out = new Float32Array(R.input.length);
    for (let h = 0; h < R.heads; h++) {
      for (let p = 0; p < P; p++) {
        const o = (h * P + p) * R.head_dim;
        const row = new Float32Array(R.input.slice(o, o + R.head_dim));
        applyRope(row, 1, 1, 1, table, c.style, R.positions[p]);
        out.set(row, o);
      }
    }
    assertClose(out, c.output, 1e-5, label);
  });
}

Deno.test("rope: neox pairs i with i + D/2, interleaved pairs 2i with 2i + 1", () => {
  // Head of 4; frequencies [1, θ^-1/2]; θ = 1e8 makes the second pair rotate by 1e-4 per position.
  const table = ropeTable(ropeFrequencies(4, 1e8), 2);
  const neox = new Float32Array([1, 0, 0, 0]);
  applyRope(neox, 1, 1, 1, table, "neox", 1);
  // x0 pairs with x2: (1, 0) rotated by 1 rad.
  assertClose(neox, [Math.cos(1), 0, Math.sin(1), 0], 1e-7, "neox");
  const inter = new Float32Array([1, 0, 0, 0]);
  applyRope(inter, 1, 1, 1, table, "interleaved", 1);
  assertClose(inter, [Math.cos(1), Math.sin(1), 0, 0], 1e-7, "interleaved");
  const at0 = new Float32Array([1, 2, 3, 4]);
  applyRope(at0, 1, 1, 1, table, "neox", 0);
  assertEquals(at0, new Float32Array([1, 2, 3, 4]));
});

Deno.test("rope: rows of a batch are rotated at start + t", () => {
  const table = ropeTable(ropeFrequencies(2), 8);
  // batch 2, seq 3, 1 head of 2: every row (1, 0).
  const x = new Float32Array(12);
  for (let i = 0; i < 12; i += 2) x[i] = 1;
  applyRope(x, 2, 3, 1, table, "neox", 4);
  const expected = [];
  for (let b = 0; b < 2; b++) {
    for (let t = 0; t < 3; t++) expected.push(Math.cos(4 + t), Math.sin(4 + t));
  }
  assertClose(x, expected, 1e-6, "batch");
});

Deno.test("rope: llama3 scaling keeps short wavelengths, divides long ones, blends between", () => {
  const scaling: RopeScaling = {
    rope_type: "llama3",
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 64,
  };
  const plain = ropeFrequencies(16, 10000);
  const scaled = ropeFrequencies(16, 10000, scaling);
  // wavelengths 2π/f: 6.3 (< 16: kept), 19.9 and 62.8 (in [16, 64]: blended), ≥ 199 (> 64: ÷ 8).
  assertEquals(scaled[0], plain[0]);
  for (const i of [1, 2]) {
    const smooth = (64 / ((2 * Math.PI) / plain[i]) - 1) / 3;
    assertClose(
      [scaled[i]],
      [(1 - smooth) * plain[i] / 8 + smooth * plain[i]],
      1e-12,
      `pair ${i}`,
    );
  }
  for (let i = 3; i < 8; i++) {
    assertClose([scaled[i]], [plain[i] / 8], 1e-12, `pair ${i}`);
  }
});

Deno.test("rope: errors name the sizes", () => {
  assertThrows(
    () => ropeFrequencies(5),
    RangeError,
    "head size 5 is not a positive even integer",
  );
  const table = ropeTable(ropeFrequencies(4), 3);
  assertThrows(
    () => applyRope(new Float32Array(8), 1, 2, 1, table, "neox", 2),
    RangeError,
    "positions 2..3: the table covers 3",
  );
  assertThrows(
    () => applyRope(new Float32Array(7), 1, 2, 1, table, "neox"),
    RangeError,
    "7 values is not 1×2×1×4",
  );
});
