/**
 * Kernel source for the quantized dot products: activation quantization
 * (F32 rows → int8/int16 codes with one scale per 32) and the fused
 * dequantize-dot of Q8_0, Q4_0, Q4_K and Q6_K weight rows. Weights are read
 * in ggml's block layout and never widened to F32 in memory.
 *
 * Four blocks (or sub-blocks) are dotted at a time: each gives an i32x4 of
 * partial sums, a transpose-add turns four of them into one vector of block
 * totals, and one multiply-add applies the four block scales at once.
 *
 * Integer products: weights with unsigned codes (Q4_0, Q4_K nibbles, Q6_K's
 * 6-bit codes before their −32 offset) use the relaxed-SIMD
 * `i32x4.relaxed_dot_i8x16_i7x16_add_s` (codes 0..63 are valid 7-bit
 * operands) with the offset removed through the integer code sums of x;
 * relaxed Q8_0 splits x's codes into a 7-bit part and a sign bit
 * (`x_split`) so its signed weight codes go through the same instruction;
 * the plain-SIMD variant widens to i16 and uses `i32x4.dot_i16x8_s`.
 *
 * @module
 */

import {
  call,
  type Code,
  f32,
  f32x4,
  forLoop,
  type FuncBuilder,
  get,
  i16x8,
  i32,
  i32x4,
  i8x16,
  if_,
  type Local,
  memoryCopy,
  type ModuleBuilder,
  select,
  seq,
  set,
  T,
  v128,
} from "./_asm.ts";
import {
  c,
  type Ctx,
  F16_MASK,
  F16_SCALE,
  f16ToF32,
  f32x4c,
  hsum,
  i32x4c,
  i8x16c,
  lanes32,
  zero,
} from "./_kernels_util.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

/**
 * Per-row metadata of quantized activations, in arrays of `nb` (blocks of
 * 32) 4-byte entries, `ms = nb·4` bytes apart: `xd` scales (f32) at 0, `xs`
 * exact sums (f32) at `ms`, `is32` code sums per 32 (i32) at `2·ms`, `is16`
 * code sums per 16 (i32, 2·nb entries) at `3·ms`. A row takes `5·ms`.
 */
export const META_ARRAYS = 5;

/** Lane sums of four i32x4 vectors as one vector (transpose-add). */
function hsum4i(p: Code[], t: Local[]): Code {
  return seq(
    set(t[0], p[0]),
    set(t[1], p[1]),
    set(t[2], p[2]),
    set(t[3], p[3]),
    set(
      t[0],
      i32x4.add(
        i8x16.shuffle(get(t[0]), get(t[1]), lanes32([0, 4, 1, 5])),
        i8x16.shuffle(get(t[0]), get(t[1]), lanes32([2, 6, 3, 7])),
      ),
    ),
    set(
      t[2],
      i32x4.add(
        i8x16.shuffle(get(t[2]), get(t[3]), lanes32([0, 4, 1, 5])),
        i8x16.shuffle(get(t[2]), get(t[3]), lanes32([2, 6, 3, 7])),
      ),
    ),
    set(
      t[0],
      i32x4.add(
        i8x16.shuffle(get(t[0]), get(t[2]), lanes32([0, 1, 4, 5])),
        i8x16.shuffle(get(t[0]), get(t[2]), lanes32([2, 3, 6, 7])),
      ),
    ),
  );
}

/**
 * Totals of four i16x8 vectors as one i32x4 `[Σq0, Σq1, Σq2, Σq3]`: adds
 * lanes pairwise at 16 bits (each |lane| must be ≤ 8191 so four of them fit
 * in an i16), then one `i32x4.extadd_pairwise_i16x8_s`.
 */
function hsum4i16(q: Code[], t: Local[]): Code {
  const pair = (a: Local, b: Local) =>
    i16x8.add(
      i8x16.shuffle(get(a), get(b), lanes32([0, 4, 1, 5])),
      i8x16.shuffle(get(a), get(b), lanes32([2, 6, 3, 7])),
    );
  return seq(
    set(t[0], q[0]),
    set(t[1], q[1]),
    set(t[2], q[2]),
    set(t[3], q[3]),
    // i32 lanes of t0 hold [q0, q1, q0, q1] pair sums; of t2, q2 and q3
    set(t[0], pair(t[0], t[1])),
    set(t[2], pair(t[2], t[3])),
    set(
      t[0],
      i32x4.extadd_pairwise_i16x8_s(
        i16x8.add(
          i8x16.shuffle(get(t[0]), get(t[2]), lanes32([0, 1, 4, 5])),
          i8x16.shuffle(get(t[0]), get(t[2]), lanes32([2, 3, 6, 7])),
        ),
      ),
    ),
  );
}

/** The sum of the four i32 lanes of a vector. */
function hsumI(v: Code, t: Local): Code {
  return seq(
    set(t, v),
    set(
      t,
      i32x4.add(get(t), i8x16.shuffle(get(t), get(t), lanes32([2, 3, 0, 1]))),
    ),
    i32.add(i32x4.extract_lane(get(t), 0), i32x4.extract_lane(get(t), 1)),
  );
}

/** F16 → F32 of four halves held in the low 16 bits of i32 lanes. */
function f16x4ToF32(v: Code): Code {
  return f32x4.mul(
    v128.and(i32x4.shr_s(i32x4.shl(v, c(16)), c(3)), i32x4c(F16_MASK)),
    f32x4c(F16_SCALE),
  );
}

/** Bytes 4k..4k+3 of `v` widened (unsigned) into the four i32 lanes. */
function bytesToI32(v: Code, first: number): Code {
  const z = 16; // index of a zero byte (from the second operand)
  const lanes: number[] = [];
  for (let i = 0; i < 4; i++) lanes.push(first + i, z, z, z);
  return i8x16.shuffle(v, zero, lanes);
}

/**
 * Widens 16 signed bytes to two i16x8 vectors with shifts (no shuffles):
 * the even-indexed bytes, then the odd-indexed ones. The i16 activation
 * codes are stored in the same order (per 16 elements: evens, then odds).
 */
function widenEvenOdd(v: Code): [Code, Code] {
  return [i16x8.shr_s(i16x8.shl(v, c(8)), c(8)), i16x8.shr_s(v, c(8))];
}

/** `Σ` of the i16x8 dot products of `w[j]` with x at `xp + off + 16j`. */
function dotI16(w: Code[], xp: Code, off: number): Code {
  let sum: Code | null = null;
  w.forEach((wv, j) => {
    const d = i32x4.dot_i16x8_s(wv, v128.load(xp, off + j * 16));
    sum = sum ? i32x4.add(sum, d) : d;
  });
  return sum!;
}

/**
 * Relaxed `Σ x8·q` over 16 bytes as i16 pair sums (`q` in 0..127; the
 * caller keeps each lane's total below 2^15).
 */
function rdot16(x: Code, q: Code): Code {
  return i16x8.relaxed_dot_i8x16_i7x16_s(x, q);
}

/** i16 pair sums → i32 lane sums. */
function widenSums(v: Code): Code {
  return i32x4.extadd_pairwise_i16x8_s(v);
}

// ------------------------------------------------------------ activations

/** Byte shuffle picking the even i16 lanes of two vectors. */
const EVENS = [0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29];
/** Byte shuffle picking the odd i16 lanes of two vectors. */
const ODDS = EVENS.map((b) => b + 2);

/**
 * Quantizes `rows` F32 rows of `kp` elements (a multiple of 32): per block
 * `d = max|x| / 127`, codes `round(x / d)` (ties to even) stored as i8 at
 * `q8 + r·kp` and as i16 at `q16 + r·kp·2` (each 16 elements as their 8
 * even-indexed codes, then the 8 odd ones), metadata per {@link META_ARRAYS}.
 */
function quantizeX(m: ModuleBuilder): void {
  const f = m.func("quantize_x", [
    ["x", I],
    ["rows", I],
    ["kp", I],
    ["q8", I],
    ["q16", I],
    ["meta", I],
  ]);
  const { x, rows, kp, q8, q16, meta } = f.params;
  const [r, b, nb, ms, src, mrow, s0, s1] = f.locals(I, 8);
  const [amax, d, id] = f.locals(F, 3);
  const [va, vs, t, vid] = f.locals(V, 4);
  const cv = f.locals(V, 4);
  const code = (j: number) =>
    i16x8.narrow_i32x4_s(
      i32x4.trunc_sat_f32x4_s(
        f32x4.nearest(f32x4.mul(v128.load(get(src), j * 32), get(vid))),
      ),
      i32x4.trunc_sat_f32x4_s(
        f32x4.nearest(f32x4.mul(v128.load(get(src), j * 32 + 16), get(vid))),
      ),
    );
  const blk = i32.add(i32.mul(get(r), get(kp)), i32.shl(get(b), c(5)));
  const metaAt = (array: number, idx: Code) =>
    i32.add(
      i32.add(get(mrow), i32.mul(get(ms), c(array))),
      i32.shl(idx, c(2)),
    );
  f.body(
    set(nb, i32.shr_u(get(kp), c(5))),
    set(ms, i32.shl(get(nb), c(2))),
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(
        mrow,
        i32.add(get(meta), i32.mul(get(r), i32.mul(get(ms), c(META_ARRAYS)))),
      ),
      forLoop(
        "b",
        b,
        c(0),
        get(nb),
        c(1),
        set(src, i32.add(get(x), i32.shl(blk, c(2)))),
        set(va, zero),
        set(vs, zero),
        ...Array.from({ length: 8 }, (_, j) =>
          seq(
            set(t, v128.load(get(src), j * 16)),
            set(va, f32x4.max(get(va), f32x4.abs(get(t)))),
            set(vs, f32x4.add(get(vs), get(t))),
          )),
        set(
          va,
          f32x4.max(
            get(va),
            i8x16.shuffle(get(va), get(va), lanes32([2, 3, 0, 1])),
          ),
        ),
        set(
          amax,
          f32.max(
            f32x4.extract_lane(get(va), 0),
            f32x4.extract_lane(get(va), 1),
          ),
        ),
        set(d, f32.div(get(amax), f32.const(127))),
        set(
          id,
          f32.div(f32.const(1), get(d)),
        ),
        if_(i32.eqz(f32.gt(get(d), f32.const(0))), [set(id, f32.const(0))]),
        set(vid, f32x4.splat(get(id))),
        ...cv.map((v, j) => set(v, code(j))),
        // i16 codes per 16 elements: evens, then odds (see widenEvenOdd)
        ...[0, 1].flatMap((h) => [
          v128.store(
            i32.add(get(q16), i32.shl(blk, c(1))),
            i8x16.shuffle(get(cv[2 * h]), get(cv[2 * h + 1]), EVENS),
            h * 32,
          ),
          v128.store(
            i32.add(get(q16), i32.shl(blk, c(1))),
            i8x16.shuffle(get(cv[2 * h]), get(cv[2 * h + 1]), ODDS),
            h * 32 + 16,
          ),
        ]),
        v128.store(
          i32.add(get(q8), blk),
          i8x16.narrow_i16x8_s(get(cv[0]), get(cv[1])),
        ),
        v128.store(
          i32.add(get(q8), blk),
          i8x16.narrow_i16x8_s(get(cv[2]), get(cv[3])),
          16,
        ),
        f32.store(metaAt(0, get(b)), get(d)),
        f32.store(metaAt(1, get(b)), hsum(get(vs), t)),
        set(
          s0,
          hsumI(
            i32x4.extadd_pairwise_i16x8_s(i16x8.add(get(cv[0]), get(cv[1]))),
            t,
          ),
        ),
        set(
          s1,
          hsumI(
            i32x4.extadd_pairwise_i16x8_s(i16x8.add(get(cv[2]), get(cv[3]))),
            t,
          ),
        ),
        i32.store(metaAt(2, get(b)), i32.add(get(s0), get(s1))),
        i32.store(metaAt(3, i32.shl(get(b), c(1))), get(s0)),
        i32.store(metaAt(3, i32.shl(get(b), c(1))), get(s1), 4),
      ),
    ),
  );
}

// ------------------------------------------------------------ weights

/** The locals a dot-product body works with. */
interface Dot {
  f: FuncBuilder;
  ctx: Ctx;
  /** Current weight block. */
  wb: Local;
  /** Current x codes (i8) and (i16) for this block. */
  x8: Local;
  x16: Local;
  /** Current x metadata (xd entry of this block). */
  xm: Local;
  /** Bytes between metadata arrays. */
  ms: Local;
  /** Current entry of the per-16 code sums (advances twice as fast as `xm`). */
  is16: Local;
  /** f32x4 accumulator (lanes summed at the end). */
  acc: Local;
  /** f32 scalar accumulator. */
  accs: Local;
  v: Local[];
  p: Local[];
  t: Local[];
  s: Local[];
  n: Local[];
}

/** One weight format's dot product: its block size and loop body emitter. */
interface QuantFormat {
  name: string;
  /** Elements per (super-)block. */
  elems: number;
  /** Bytes per (super-)block as stored (and as read: no repacking). */
  bytes: number;
  /** Blocks handled per main-loop iteration (4 for the 32-element formats). */
  group: number;
  /** Code for `group` blocks; pointers advance outside. */
  main(d: Dot): Code[];
  /** Code for one leftover block (formats with `group > 1`). */
  single?(d: Dot): Code[];
}

/** Address of metadata array `a` (see {@link META_ARRAYS}) at the current block. */
function metaPtr(d: Dot, array: number): Code {
  return array === 0
    ? get(d.xm)
    : i32.add(get(d.xm), i32.mul(get(d.ms), c(array)));
}

/**
 * `x_split(q8, n, out)`: the relaxed Q8_0 operand of `n` int8 activation
 * codes (a multiple of 16): per 16 codes, 16 bytes `x & 127` then 16 bytes
 * `x < 0 ? 1 : 0`, so `x = b − 128·n`.
 */
function xSplit(m: ModuleBuilder): void {
  const f = m.func("x_split", [["q8", I], ["n", I], ["out", I]]);
  const { q8, n, out } = f.params;
  const [i] = f.locals(I, 1);
  const [v] = f.locals(V, 1);
  f.body(
    forLoop(
      "i",
      i,
      c(0),
      get(n),
      c(16),
      set(v, v128.load(i32.add(get(q8), get(i)))),
      v128.store(
        i32.add(get(out), i32.shl(get(i), c(1))),
        v128.and(get(v), i8x16c(0x7f)),
      ),
      v128.store(
        i32.add(get(out), i32.shl(get(i), c(1))),
        i8x16.shr_u(get(v), c(7)),
        16,
      ),
    ),
  );
}

/**
 * Q4_K super-block: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, then
 * 4 × 32 bytes of nibbles (sub-block 2c in the low nibbles of the c-th 32
 * bytes, 2c+1 in the high ones). Sub-block j contributes
 * `d·sc_j·Σ q·x − dmin·m_j·Σ x`.
 */
const Q4_K: QuantFormat = {
  name: "q4_k",
  elems: 256,
  bytes: 144,
  group: 1,
  main: (d) => {
    const [A, B, Cc, S] = d.v.slice(8, 12);
    const [dd, dmin] = d.s;
    const out: Code[] = [
      set(dd, f16ToF32(i32.load16_u(get(d.wb)))),
      set(dmin, f16ToF32(i32.load16_u(get(d.wb), 2))),
      set(S, v128.load(get(d.wb), 4)),
      set(A, bytesToI32(get(S), 0)),
      set(B, bytesToI32(get(S), 4)),
      set(Cc, bytesToI32(get(S), 8)),
    ];
    // sub-block j: low nibbles of chunk j>>1 when j is even, high when odd
    const sub = (j: number): Code[] => {
      const ch = j >> 1;
      const nib = (src: Code) =>
        j & 1
          ? v128.and(i16x8.shr_u(src, c(4)), i8x16c(0x0f))
          : v128.and(src, i8x16c(0x0f));
      const qa = v128.load(get(d.wb), 16 + 32 * ch);
      const qb = v128.load(get(d.wb), 16 + 32 * ch + 16);
      if (d.ctx.relaxed) {
        return [
          set(
            d.p[j & 3],
            i16x8.add(
              rdot16(v128.load(get(d.x8), 32 * j), nib(qa)),
              rdot16(v128.load(get(d.x8), 32 * j + 16), nib(qb)),
            ),
          ),
        ];
      }
      return [
        set(d.v[0], nib(qa)),
        set(d.v[1], nib(qb)),
        set(
          d.p[j & 3],
          dotI16(
            [...widenEvenOdd(get(d.v[0])), ...widenEvenOdd(get(d.v[1]))],
            get(d.x16),
            64 * j,
          ),
        ),
      ];
    };
    for (let half = 0; half < 2; half++) {
      for (let j = 4 * half; j < 4 * half + 4; j++) out.push(...sub(j));
      // scales of sub-blocks 4h..4h+3: low 6 bits of A (h = 0) or the
      // low nibble of C with A's top two bits (h = 1); mins likewise.
      const scale = half === 0 ? v128.and(get(A), i32x4c(63)) : v128.or(
        v128.and(get(Cc), i32x4c(15)),
        i32x4.shl(i32x4.shr_u(get(A), c(6)), c(4)),
      );
      const min = half === 0 ? v128.and(get(B), i32x4c(63)) : v128.or(
        i32x4.shr_u(get(Cc), c(4)),
        i32x4.shl(i32x4.shr_u(get(B), c(6)), c(4)),
      );
      out.push(
        // relaxed: i16 lanes |Σ| ≤ 7620, summed 4 at a time
        d.ctx.relaxed
          ? hsum4i16(d.p.slice(0, 4).map(get), d.t)
          : hsum4i(d.p.slice(0, 4).map(get), d.t),
        set(
          d.acc,
          d.ctx.madd(
            f32x4.convert_i32x4_s(get(d.t[0])),
            f32x4.mul(
              f32x4.mul(f32x4.convert_i32x4_s(scale), f32x4.splat(get(dd))),
              v128.load(metaPtr(d, 0), 16 * half),
            ),
            get(d.acc),
          ),
        ),
        set(
          d.v[12],
          d.ctx.madd(
            f32x4.mul(f32x4.convert_i32x4_s(min), f32x4.splat(get(dmin))),
            v128.load(metaPtr(d, 1), 16 * half),
            get(d.v[12]),
          ),
        ),
      );
    }
    return out;
  },
};

/**
 * Q6_K super-block: ql[128] (low 4 bits), qh[64] (high 2 bits), 16 i8
 * scales, f16 d. In each half of 128 elements, element l + 32·i (l < 32,
 * quarter i) takes ql[l + 32·(i & 1)] (low nibble for i < 2, high for
 * i ≥ 2) and bits 2i..2i+1 of qh[l]; group g = e / 16 has scale sc[g];
 * value `d·sc·(q − 32)`.
 */
const Q6_K: QuantFormat = {
  name: "q6_k",
  elems: 256,
  bytes: 210,
  group: 1,
  main: (d) => {
    const [dd] = d.s;
    const SC = d.v[13];
    const out: Code[] = [
      set(dd, f16ToF32(i32.load16_u(get(d.wb), 208))),
      set(SC, v128.load(get(d.wb), 192)),
    ];
    for (let h = 0; h < 2; h++) {
      const ql = d.v.slice(6, 10);
      const qh = d.v.slice(10, 12);
      for (let i = 0; i < 4; i++) {
        out.push(set(ql[i], v128.load(get(d.wb), h * 64 + i * 16)));
      }
      for (let i = 0; i < 2; i++) {
        out.push(set(qh[i], v128.load(get(d.wb), 128 + h * 32 + i * 16)));
      }
      for (let k = 0; k < 2; k++) {
        for (let gq = 0; gq < 4; gq++) {
          const g = 4 * k + gq; // group within the half
          const i = g >> 1;
          const lo = g & 1;
          const grp = 8 * h + g;
          const src = ql[(i & 1) * 2 + lo];
          const low4 = i < 2
            ? v128.and(get(src), i8x16c(0x0f))
            : v128.and(i16x8.shr_u(get(src), c(4)), i8x16c(0x0f));
          const shift = 2 * i - 4; // move qh bits 2i..2i+1 to bits 4..5
          const high2 = shift < 0
            ? v128.and(i16x8.shl(get(qh[lo]), c(-shift)), i8x16c(0x30))
            : shift === 0
            ? v128.and(get(qh[lo]), i8x16c(0x30))
            : v128.and(i16x8.shr_u(get(qh[lo]), c(shift)), i8x16c(0x30));
          out.push(set(d.v[0], v128.or(low4, high2)));
          if (d.ctx.relaxed) {
            out.push(
              // |Σ| ≤ 2·63·127 < 2^15 per i16 lane
              set(
                d.p[gq],
                widenSums(rdot16(v128.load(get(d.x8), 16 * grp), get(d.v[0]))),
              ),
            );
          } else {
            out.push(
              set(d.v[0], i8x16.sub(get(d.v[0]), i8x16c(32))),
              set(
                d.p[gq],
                dotI16(
                  widenEvenOdd(get(d.v[0])),
                  get(d.x16),
                  32 * grp,
                ),
              ),
            );
          }
        }
        const grp0 = 8 * h + 4 * k;
        out.push(hsum4i(d.p.slice(0, 4).map(get), d.t));
        if (d.ctx.relaxed) {
          // Σ (q − 32)·x = Σ q·x − 32·Σ x, per group of 16
          out.push(
            set(
              d.t[0],
              i32x4.sub(
                get(d.t[0]),
                i32x4.shl(v128.load(get(d.is16), 4 * grp0), c(5)),
              ),
            ),
          );
        }
        // scales sc[grp0..grp0+3] (i8) and x scales [xd_b, xd_b, xd_b+1, xd_b+1]
        const sc = f32x4.convert_i32x4_s(
          i32x4.extend_low_i16x8_s(
            i16x8.extend_low_i8x16_s(
              i8x16.shuffle(get(SC), get(SC), [
                grp0,
                grp0 + 1,
                grp0 + 2,
                grp0 + 3,
                ...new Array(12).fill(0),
              ]),
            ),
          ),
        );
        const xdv = i8x16.shuffle(
          v128.load64_splat(get(d.xm), 4 * (grp0 >> 1)),
          zero,
          lanes32([0, 0, 1, 1]),
        );
        out.push(
          set(
            d.acc,
            d.ctx.madd(
              f32x4.convert_i32x4_s(get(d.t[0])),
              f32x4.mul(f32x4.mul(sc, f32x4.splat(get(dd))), xdv),
              get(d.acc),
            ),
          ),
        );
      }
    }
    return out;
  },
};

const FORMATS: QuantFormat[] = [Q4_K, Q6_K];

/** `name_dot(wrow, nblk, x8, x16, xm, ms) → f32`: one weight row · one x row. */
function dotFunction(m: ModuleBuilder, ctx: Ctx, q: QuantFormat): FuncBuilder {
  const f = m.func(`${q.name}_dot`, [
    ["wrow", I],
    ["nblk", I],
    ["x8", I],
    ["x16", I],
    ["xm", I],
    ["ms", I],
  ], [F]);
  const P = f.params;
  const d: Dot = {
    f,
    ctx,
    wb: P.wrow,
    x8: P.x8,
    x16: P.x16,
    xm: P.xm,
    ms: P.ms,
    is16: f.local(I),
    acc: f.local(V),
    accs: f.local(F),
    v: f.locals(V, 14),
    p: f.locals(V, 4),
    t: f.locals(V, 4),
    s: f.locals(F, 4),
    n: f.locals(I, 2),
  };
  const [b] = d.n;
  const xBlocks = q.elems / 32;
  const advance = (blocks: number): Code[] => [
    set(d.wb, i32.add(get(d.wb), c(q.bytes * blocks))),
    set(d.x8, i32.add(get(d.x8), c(q.elems * blocks))),
    set(d.x16, i32.add(get(d.x16), c(q.elems * 2 * blocks))),
    set(d.xm, i32.add(get(d.xm), c(4 * xBlocks * blocks))),
    set(d.is16, i32.add(get(d.is16), c(8 * xBlocks * blocks))),
  ];
  const body: Code[] = [
    set(d.is16, i32.add(get(d.xm), i32.mul(get(d.ms), c(3)))),
    set(d.acc, zero),
    set(d.accs, f32.const(0)),
    set(d.v[12], zero), // Q4_K min accumulator
    set(b, get(P.nblk)),
    if_(i32.ge_s(get(b), c(q.group)), [
      forLoop(
        "g",
        d.n[1],
        c(q.group),
        i32.add(get(b), c(1)),
        c(q.group),
        ...q.main(d),
        ...advance(q.group),
      ),
    ]),
  ];
  if (q.single) {
    body.push(
      forLoop(
        "s",
        d.n[1],
        c(0),
        i32.and(get(b), c(q.group - 1)),
        c(1),
        ...q.single(d),
        ...advance(1),
      ),
    );
  }
  f.body(
    ...body,
    f32.sub(
      f32.add(hsum(get(d.acc), d.t[0]), get(d.accs)),
      hsum(get(d.v[12]), d.t[1]),
    ),
  );
  return f;
}

// ------------------------------------------------------------ panels (Q8_0, Q4_0)

/**
 * How far ahead of the codes it is reading a panel kernel touches the
 * weight (4-byte loads folded into a dummy value): WebAssembly has no
 * prefetch instruction, and these early misses let the memory system
 * stream the next panels while the current one is being multiplied (about
 * 15% faster decode matvecs here). Weight allocations carry this many
 * bytes of slack (plus one block) so the touches stay inside them.
 */
export const Q8_TOUCH_AHEAD = 1024;

/** Weight rows per panel (the outputs one `*_dot4` call computes). */
export const Q8_PANEL_ROWS = 4;

/** The panel formats: 32-element blocks of an f16 scale and codes. */
interface PanelFormat {
  name: "q8_0" | "q4_0";
  /** Bytes of one stored block (scale + codes). */
  blockBytes: number;
  /** Code bytes of one block of one row. */
  codeBytes: number;
}

const PANEL_FORMATS: PanelFormat[] = [
  { name: "q8_0", blockBytes: 34, codeBytes: 32 },
  { name: "q4_0", blockBytes: 18, codeBytes: 16 },
];

/**
 * Bytes of one panel of `nblk` blocks per row: the f16 scales of the four
 * rows block by block (8 bytes per block, padded to 16), then per block
 * the four rows' code bytes.
 */
export function panelBytes(name: "q8_0" | "q4_0", nblk: number): number {
  const q = PANEL_FORMATS.find((x) => x.name === name)!;
  return ((8 * nblk + 15) & ~15) + 4 * q.codeBytes * nblk;
}

/**
 * `name_repack(src, dst, rows, nblk)`: stored rows (f16 scale + codes per
 * block) into panels of {@link Q8_PANEL_ROWS} rows; `dst` must be zeroed
 * (rows past the last are left as zero codes and scales).
 */
function panelRepack(m: ModuleBuilder, q: PanelFormat): void {
  const f = m.func(`${q.name}_repack`, [
    ["src", I],
    ["dst", I],
    ["rows", I],
    ["nblk", I],
  ]);
  const { src, dst, rows, nblk } = f.params;
  const [r, b, base, scaleBytes, pBytes, from, lane] = f.locals(I, 7);
  const cb = q.codeBytes;
  f.body(
    set(scaleBytes, i32.and(i32.add(i32.shl(get(nblk), c(3)), c(15)), c(~15))),
    set(pBytes, i32.add(get(scaleBytes), i32.mul(get(nblk), c(4 * cb)))),
    set(from, get(src)),
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(lane, i32.and(get(r), c(3))),
      set(
        base,
        i32.add(get(dst), i32.mul(i32.shr_u(get(r), c(2)), get(pBytes))),
      ),
      forLoop(
        "b",
        b,
        c(0),
        get(nblk),
        c(1),
        i32.store16(
          i32.add(
            get(base),
            i32.add(i32.shl(get(b), c(3)), i32.shl(get(lane), c(1))),
          ),
          i32.load16_u(get(from)),
        ),
        memoryCopy(
          i32.add(
            i32.add(get(base), get(scaleBytes)),
            i32.add(i32.mul(get(b), c(4 * cb)), i32.mul(get(lane), c(cb))),
          ),
          i32.add(get(from), c(2)),
          c(cb),
        ),
        set(from, i32.add(get(from), c(q.blockBytes))),
      ),
    ),
  );
}

/**
 * `name_dot4(wp, nblk, x8, x16, xm, ms) → f32x4`: the four rows of the
 * panel at `wp` dotted with one activation row (`x8`: int8 codes; `x16`:
 * i16 codes, or for relaxed Q8_0 the split codes of `x_split`; `xm`: its
 * metadata, arrays `ms` bytes apart). Per block the four rows' integer sums
 * are transposed into one vector and scaled at once, so nothing is summed
 * per row at the end.
 *
 * - Q8_0, relaxed: `Σ w·x = Σ w·b − 128·Σ w·n` on the split codes, each 16
 *   bytes one `i32x4.relaxed_dot_i8x16_i7x16_add_s` (`b`, `n` are 7-bit).
 * - Q4_0, relaxed: `Σ (q − 8)·x = Σ q·x − 8·Σ x`, the nibbles `q` being the
 *   7-bit operand of `i32x4.relaxed_dot_i8x16_i7x16_add_s` (where it goes
 *   through `pmaddubsw`, pair sums stay below 2·15·127 < 2^15).
 * - Plain SIMD: codes (minus 8 for Q4_0) widened to i16 and dotted with the
 *   i16 activation codes (`i32x4.dot_i16x8_s`).
 */
function panelDot4(m: ModuleBuilder, ctx: Ctx, q: PanelFormat): FuncBuilder {
  const f = m.func(`${q.name}_dot4`, [
    ["wp", I],
    ["nblk", I],
    ["x8", I],
    ["x16", I],
    ["xm", I],
    ["ms", I],
  ], [V]);
  const { wp, nblk, x8, x16, xm, ms } = f.params;
  const [sp, cp, b, pf, is32] = f.locals(I, 5);
  const [acc, w0, w1] = f.locals(V, 3);
  const xv = f.locals(V, 4);
  const p = f.locals(V, 4);
  const t = f.locals(V, 4);
  const cb = q.codeBytes;
  const q4 = q.name === "q4_0";
  // Block u of the current step: codes at cp + 4·cb·u, scales at sp + 8u,
  // x at x8 + 32u (x16 + 64u), x metadata at xm + 4u.
  const rowDot = (u: number, r: number): Code => {
    const at = 4 * cb * u + cb * r;
    if (q4) {
      const lo = v128.and(get(w0), i8x16c(0x0f));
      const hi = v128.and(i16x8.shr_u(get(w0), c(4)), i8x16c(0x0f));
      if (ctx.relaxed) {
        return seq(
          set(w0, v128.load(get(cp), at)),
          i32x4.relaxed_dot_i8x16_i7x16_add_s(
            get(xv[1]),
            hi,
            i32x4.relaxed_dot_i8x16_i7x16_add_s(get(xv[0]), lo, zero),
          ),
        );
      }
      return seq(
        set(w0, v128.load(get(cp), at)),
        set(w1, i8x16.sub(hi, i8x16c(8))),
        set(w0, i8x16.sub(lo, i8x16c(8))),
        dotI16(
          [...widenEvenOdd(get(w0)), ...widenEvenOdd(get(w1))],
          get(x16),
          64 * u,
        ),
      );
    }
    if (!ctx.relaxed) {
      return dotI16(
        [
          ...widenEvenOdd(v128.load(get(cp), at)),
          ...widenEvenOdd(v128.load(get(cp), at + 16)),
        ],
        get(x16),
        64 * u,
      );
    }
    const rdot = (w: Local, x: Local, a: Code) =>
      i32x4.relaxed_dot_i8x16_i7x16_add_s(get(w), get(x), a);
    return seq(
      set(w0, v128.load(get(cp), at)),
      set(w1, v128.load(get(cp), at + 16)),
      i32x4.sub(
        rdot(w1, xv[2], rdot(w0, xv[0], zero)),
        i32x4.shl(rdot(w1, xv[3], rdot(w0, xv[1], zero)), c(7)),
      ),
    );
  };
  const xLoads = (u: number): Code[] => {
    if (!ctx.relaxed) return [];
    if (q4) {
      return [0, 1].map((j) => set(xv[j], v128.load(get(x8), 32 * u + 16 * j)));
    }
    return xv.map((v, j) => set(v, v128.load(get(x16), 64 * u + 16 * j)));
  };
  // Block totals [row 0..3]; relaxed Q4_0 subtracts 8·Σx (same for all rows).
  const totals = (u: number): Code[] => {
    if (q4 && ctx.relaxed) {
      return [
        hsum4i(p.map(get), t),
        set(
          t[0],
          i32x4.sub(
            get(t[0]),
            i32x4.shl(v128.load32_splat(get(is32), 4 * u), c(3)),
          ),
        ),
      ];
    }
    return [hsum4i(p.map(get), t)];
  };
  const touches = (u: number): Code[] =>
    Array.from({ length: Math.max(1, (4 * cb) / 64) }, (_, k) =>
      set(
        pf,
        i32.or(
          get(pf),
          i32.load(get(cp), Q8_TOUCH_AHEAD + 4 * cb * u + 64 * k),
        ),
      ));
  const blockCode = (u: number): Code[] => [
    ...xLoads(u),
    ...p.map((v, r) => set(v, rowDot(u, r))),
    ...totals(u),
    set(
      acc,
      ctx.madd(
        f32x4.convert_i32x4_s(get(t[0])),
        f32x4.mul(
          f16x4ToF32(
            i32x4.extend_low_i16x8_u(v128.load64_zero(get(sp), 8 * u)),
          ),
          f32x4.splat(f32.load(get(xm), 4 * u)),
        ),
        get(acc),
      ),
    ),
    ...touches(u),
  ];
  const advance = (n: number): Code[] => [
    set(sp, i32.add(get(sp), c(8 * n))),
    set(cp, i32.add(get(cp), c(4 * cb * n))),
    set(x8, i32.add(get(x8), c(32 * n))),
    set(x16, i32.add(get(x16), c(64 * n))),
    set(xm, i32.add(get(xm), c(4 * n))),
    set(is32, i32.add(get(is32), c(4 * n))),
  ];
  f.body(
    set(sp, get(wp)),
    set(
      cp,
      i32.add(
        get(wp),
        i32.and(i32.add(i32.shl(get(nblk), c(3)), c(15)), c(~15)),
      ),
    ),
    set(is32, i32.add(get(xm), i32.shl(get(ms), c(1)))),
    set(acc, zero),
    // two blocks per step, then the odd one
    forLoop(
      "b2",
      b,
      c(1),
      get(nblk),
      c(2),
      ...blockCode(0),
      ...blockCode(1),
      ...advance(2),
    ),
    if_(i32.and(get(nblk), c(1)), [...blockCode(0)]),
    // keep the touches alive: store the dummy in the never-allocated null page
    i32.store(c(512), get(pf)),
    get(acc),
  );
  return f;
}

/** The panel kernels of one format: repack, 4-row dot, matmul, multi-weight matmul. */
function panelKernels(m: ModuleBuilder, ctx: Ctx, q: PanelFormat): void {
  panelRepack(m, q);
  const dot4 = panelDot4(m, ctx, q);
  const mm = panelMm(m, q, dot4);
  panelMmMulti(m, q, mm);
}

/** Bytes of one weight descriptor of `*_mm_multi`. */
export const Q8_MULTI_DESC_BYTES = 32;

/**
 * `name_mm_multi(desc, nw, q8, q16, meta, rows, kp, u0, u1)`: several
 * weights of one panel format applied to the same quantized x in one job.
 * `desc` holds `nw` descriptors of {@link Q8_MULTI_DESC_BYTES} bytes (i32:
 * weight panels, y, padded bias, outF, first and end unit); units number
 * the panels of all weights in a row, and a call computes those in
 * `[u0, u1)`, so the threads split the weights' panels together.
 */
function panelMmMulti(m: ModuleBuilder, q: PanelFormat, mm: FuncBuilder): void {
  const f = m.func(`${q.name}_mm_multi`, [
    ["desc", I],
    ["nw", I],
    ["q8", I],
    ["q16", I],
    ["meta", I],
    ["rows", I],
    ["kp", I],
    ["u0", I],
    ["u1", I],
  ]);
  const P = f.params;
  const [i, d, lo, hi, base] = f.locals(I, 5);
  f.body(
    forLoop(
      "w",
      i,
      c(0),
      get(P.nw),
      c(1),
      set(d, i32.add(get(P.desc), i32.mul(get(i), c(Q8_MULTI_DESC_BYTES)))),
      set(base, i32.load(get(d), 16)),
      // [lo, hi) = [u0, u1) ∩ [first, end), relative to the weight
      set(lo, i32.load(get(d), 16)),
      set(lo, select(get(P.u0), get(lo), i32.gt_s(get(P.u0), get(lo)))),
      set(hi, i32.load(get(d), 20)),
      set(hi, select(get(P.u1), get(hi), i32.lt_s(get(P.u1), get(hi)))),
      if_(i32.lt_s(get(lo), get(hi)), [
        call(
          mm,
          i32.load(get(d)),
          get(P.q8),
          get(P.q16),
          get(P.meta),
          i32.load(get(d), 4),
          i32.load(get(d), 8),
          get(P.rows),
          get(P.kp),
          i32.load(get(d), 12),
          i32.sub(get(lo), get(base)),
          i32.sub(get(hi), get(base)),
        ),
      ]),
    ),
  );
}

/**
 * `name_mm(w, q8, q16, meta, y, bp, rows, kp, outF, p0, p1)`: `y[r, o] =
 * W row o · x row r + bias[o]` for the outputs of panels `[p0, p1)`; `bp`
 * holds the bias padded to whole panels.
 */
function panelMm(
  m: ModuleBuilder,
  q: PanelFormat,
  dot4: FuncBuilder,
): FuncBuilder {
  const f = m.func(`${q.name}_mm`, [
    ["w", I],
    ["q8", I],
    ["q16", I],
    ["meta", I],
    ["y", I],
    ["bp", I],
    ["rows", I],
    ["kp", I],
    ["outF", I],
    ["p0", I],
    ["p1", I],
  ]);
  const P = f.params;
  const [pn, r, nblk, pBytes, ms, n, yp] = f.locals(I, 7);
  const [v] = f.locals(V, 1);
  f.body(
    set(nblk, i32.shr_u(get(P.kp), c(5))),
    set(ms, i32.shl(get(nblk), c(2))),
    set(
      pBytes,
      i32.add(
        i32.and(i32.add(i32.shl(get(nblk), c(3)), c(15)), c(~15)),
        i32.mul(get(nblk), c(4 * q.codeBytes)),
      ),
    ),
    forLoop(
      "p",
      pn,
      get(P.p0),
      get(P.p1),
      c(1),
      set(n, i32.sub(get(P.outF), i32.shl(get(pn), c(2)))),
      set(n, select(c(4), get(n), i32.gt_s(get(n), c(4)))),
      forLoop(
        "r",
        r,
        c(0),
        get(P.rows),
        c(1),
        set(
          v,
          f32x4.add(
            call(
              dot4,
              i32.add(get(P.w), i32.mul(get(pn), get(pBytes))),
              get(nblk),
              i32.add(get(P.q8), i32.mul(get(r), get(P.kp))),
              i32.add(get(P.q16), i32.shl(i32.mul(get(r), get(P.kp)), c(1))),
              i32.add(
                get(P.meta),
                i32.mul(get(r), i32.mul(get(ms), c(META_ARRAYS))),
              ),
              get(ms),
            ),
            v128.load(i32.add(get(P.bp), i32.shl(get(pn), c(4)))),
          ),
        ),
        set(
          yp,
          i32.add(
            get(P.y),
            i32.shl(
              i32.add(i32.mul(get(r), get(P.outF)), i32.shl(get(pn), c(2))),
              c(2),
            ),
          ),
        ),
        if_(i32.eq(get(n), c(4)), [v128.store(get(yp), get(v))], [
          f32.store(get(yp), f32x4.extract_lane(get(v), 0)),
          if_(i32.gt_s(get(n), c(1)), [
            f32.store(get(yp), f32x4.extract_lane(get(v), 1), 4),
          ]),
          if_(i32.gt_s(get(n), c(2)), [
            f32.store(get(yp), f32x4.extract_lane(get(v), 2), 8),
          ]),
        ]),
      ),
    ),
  );
  return f;
}

/**
 * Adds activation quantization and, per weight format, `name_dot` and the
 * threaded driver `name_mm(w, q8, q16, meta, y, bp, rows, kp, outF, o0, o1)`
 * computing `y[r, o] = dot(W row o, x row r) + bias[o]` for rows `[o0, o1)`.
 */
export function quantKernels(m: ModuleBuilder, ctx: Ctx): void {
  quantizeX(m);
  xSplit(m);
  for (const q of PANEL_FORMATS) panelKernels(m, ctx, q);
  for (const q of FORMATS) {
    const dot = dotFunction(m, ctx, q);
    const f = m.func(`${q.name}_mm`, [
      ["w", I],
      ["q8", I],
      ["q16", I],
      ["meta", I],
      ["y", I],
      ["bp", I],
      ["rows", I],
      ["kp", I],
      ["outF", I],
      ["o0", I],
      ["o1", I],
    ]);
    const P = f.params;
    const [o, r, nblk, rowBytes, ms, wrow] = f.locals(I, 6);
    f.body(
      set(nblk, i32.div_u(get(P.kp), c(q.elems))),
      set(ms, i32.shl(i32.shr_u(get(P.kp), c(5)), c(2))),
      set(
        rowBytes,
        i32.mul(get(nblk), c(q.bytes)),
      ),
      forLoop(
        "o",
        o,
        get(P.o0),
        get(P.o1),
        c(1),
        set(wrow, i32.add(get(P.w), i32.mul(get(o), get(rowBytes)))),
        forLoop(
          "r",
          r,
          c(0),
          get(P.rows),
          c(1),
          f32.store(
            i32.add(
              get(P.y),
              i32.shl(i32.add(i32.mul(get(r), get(P.outF)), get(o)), c(2)),
            ),
            f32.add(
              call(
                dot,
                get(wrow),
                get(nblk),
                i32.add(get(P.q8), i32.mul(get(r), get(P.kp))),
                i32.add(get(P.q16), i32.shl(i32.mul(get(r), get(P.kp)), c(1))),
                i32.add(
                  get(P.meta),
                  i32.mul(get(r), i32.mul(get(ms), c(META_ARRAYS))),
                ),
                get(ms),
              ),
              f32.load(i32.add(get(P.bp), i32.shl(get(o), c(2)))),
            ),
          ),
        ),
      ),
    );
  }
}
