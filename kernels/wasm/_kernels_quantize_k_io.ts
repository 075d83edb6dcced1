/**
 * The data movement around the K-quant searches of
 * `_kernels_quantize_k.ts`, in the same module: values of whole 256-blocks
 * (as the caller stores them) into the searches' four-lane layout, with
 * Q4_K / Q5_K's weights `avX + |x|` computed on the way (the same F32
 * operations in C's order), and the final codes of Q4_K and Q6_K packed
 * into their blocks' code bytes. Every loop over a block's values is
 * unrolled (one block per iteration, addresses as constant offsets).
 *
 * @module
 */

import {
  f32,
  f32x4,
  forLoop,
  type FuncBuilder,
  get,
  i32,
  type Local,
  type ModuleBuilder,
  seq,
  set,
  T,
  v128,
} from "./_asm.ts";

type Code = ReturnType<typeof get>;

/** Where value `l` of sub-block `j` (of `n` values) lies in the four-lane layout of one block, in bytes. */
const laneOffset = (n: number, j: number, l: number): number =>
  ((j >> 2) * n + l) * 16 + (j & 3) * 4;

/**
 * Adds `k4prep` (`pin`, `px`, `pw`, `blocks`): 256-value blocks at `pin`
 * into the layout of `qkx2` at `px`, and the weights at `pw`; `q6prep`
 * (`pin`, `px`, `blocks`): the layout of `qx`; `k4pack` (`pl`, `pout`,
 * `blocks`): Q4_K's 128 code bytes per block from the codes at `pl`;
 * `q6pack` (`pl`, `pout`, `blocks`): Q6_K's 128 low and 64 high code bytes
 * per block (192 bytes each).
 *
 * @param m The module being built.
 *
 * @example
 * ```ts ignore
 * import { buildQuantizeKIo } from "./_kernels_quantize_k_io.ts";
 * buildQuantizeKIo(moduleBuilder);
 * ```
 */
export function buildQuantizeKIo(m: ModuleBuilder): void {
  buildK4Prep(m);
  buildQ6Prep(m);
  buildK4Pack(m);
  buildQ6Pack(m);
}

/** A loop over blocks whose unrolled body uses the pointers' current values; each pointer then moves on by its step. */
function perBlock(
  fn: FuncBuilder,
  blocks: Code,
  steps: [Local, number][],
  body: Code[],
): Code {
  const [b] = fn.locals(T.i32, 1);
  return forLoop(
    "block",
    b,
    i32.const(0),
    blocks,
    i32.const(1),
    ...body,
    ...steps.map(([p, step]) => set(p, i32.add(get(p), i32.const(step)))),
  );
}

function buildK4Prep(m: ModuleBuilder): void {
  const f = m.func("k4prep", [
    ["pin", T.i32],
    ["px", T.i32],
    ["pw", T.i32],
    ["blocks", T.i32],
  ]);
  const p = f.params;
  const [sum, v, avx] = f.locals(T.v128, 3);
  const body: Code[] = [];
  for (let j = 0; j < 8; j++) {
    for (let l = 0; l < 32; l++) {
      body.push(
        f32.store(
          get(p.px),
          f32.load(get(p.pin), 4 * (32 * j + l)),
          laneOffset(32, j, l),
        ),
      );
    }
  }
  for (let g = 0; g < 2; g++) {
    // Σx² per lane in C's order, then avX = sqrt(Σx²/32), w = avX + |x|
    body.push(set(sum, v128.const(new Array(16).fill(0))));
    for (let l = 0; l < 32; l++) {
      body.push(
        set(v, v128.load(get(p.px), laneOffset(32, 4 * g, l))),
        set(sum, f32x4.add(get(sum), f32x4.mul(get(v), get(v)))),
      );
    }
    body.push(
      set(avx, f32x4.sqrt(f32x4.div(get(sum), f32x4.splat(f32.const(32))))),
    );
    for (let l = 0; l < 32; l++) {
      const o = laneOffset(32, 4 * g, l);
      body.push(
        v128.store(
          get(p.pw),
          f32x4.add(get(avx), f32x4.abs(v128.load(get(p.px), o))),
          o,
        ),
      );
    }
  }
  f.body(
    perBlock(f, get(p.blocks), [[p.pin, 1024], [p.px, 1024], [p.pw, 1024]], [
      seq(...body),
    ]),
  );
}

function buildQ6Prep(m: ModuleBuilder): void {
  const f = m.func("q6prep", [
    ["pin", T.i32],
    ["px", T.i32],
    ["blocks", T.i32],
  ]);
  const p = f.params;
  const body: Code[] = [];
  for (let j = 0; j < 16; j++) {
    for (let l = 0; l < 16; l++) {
      body.push(
        f32.store(
          get(p.px),
          f32.load(get(p.pin), 4 * (16 * j + l)),
          laneOffset(16, j, l),
        ),
      );
    }
  }
  f.body(
    perBlock(f, get(p.blocks), [[p.pin, 1024], [p.px, 1024]], [seq(...body)]),
  );
}

function buildK4Pack(m: ModuleBuilder): void {
  const f = m.func("k4pack", [
    ["pl", T.i32],
    ["pout", T.i32],
    ["blocks", T.i32],
  ]);
  const p = f.params;
  const code = (i: number) =>
    i32.load(get(p.pl), laneOffset(32, i >> 5, i & 31));
  const body: Code[] = [];
  // byte 32·q + l: code 64q + l, and code 64q + 32 + l in the high nibble
  for (let q = 0; q < 4; q++) {
    for (let l = 0; l < 32; l++) {
      body.push(
        i32.store8(
          get(p.pout),
          i32.or(
            code(64 * q + l),
            i32.shl(code(64 * q + 32 + l), i32.const(4)),
          ),
          32 * q + l,
        ),
      );
    }
  }
  f.body(
    perBlock(f, get(p.blocks), [[p.pl, 1024], [p.pout, 128]], [seq(...body)]),
  );
}

function buildQ6Pack(m: ModuleBuilder): void {
  const f = m.func("q6pack", [
    ["pl", T.i32],
    ["pout", T.i32],
    ["blocks", T.i32],
  ]);
  const p = f.params;
  const code = (i: number) =>
    i32.load(get(p.pl), laneOffset(16, i >> 4, i & 15));
  const body: Code[] = [];
  // ggml's layout: per half of 128 codes, 64 low-nibble bytes then 32
  // bytes of high bits (ql at 0..128, qh at 128..192)
  for (let h = 0; h < 2; h++) {
    for (let l = 0; l < 32; l++) {
      const j = 128 * h + l;
      const lo = (i: number) => i32.and(code(i), i32.const(15));
      body.push(
        i32.store8(
          get(p.pout),
          i32.or(lo(j), i32.shl(lo(j + 64), i32.const(4))),
          64 * h + l,
        ),
        i32.store8(
          get(p.pout),
          i32.or(lo(j + 32), i32.shl(lo(j + 96), i32.const(4))),
          64 * h + 32 + l,
        ),
        i32.store8(
          get(p.pout),
          i32.or(
            i32.or(
              i32.shr_u(code(j), i32.const(4)),
              i32.shl(i32.shr_u(code(j + 32), i32.const(4)), i32.const(2)),
            ),
            i32.or(
              i32.shl(i32.shr_u(code(j + 64), i32.const(4)), i32.const(4)),
              i32.shl(i32.shr_u(code(j + 96), i32.const(4)), i32.const(6)),
            ),
          ),
          128 + 32 * h + l,
        ),
      );
    }
  }
  f.body(
    perBlock(f, get(p.blocks), [[p.pl, 1024], [p.pout, 192]], [seq(...body)]),
  );
}
