/**
 * A small WebAssembly binary assembler: enough of the instruction set (i32,
 * f32, 128-bit SIMD and relaxed SIMD) to write the kernels in
 * `_kernels.ts` as folded expressions, the way WAT's folded form reads.
 *
 * Code is a tree of {@link Code} closures; each writes its operands first and
 * then its own opcode, so `i32.add(get(a), i32c(4))` emits
 * `local.get a; i32.const 4; i32.add`. Labels are names, resolved to branch
 * depths while writing.
 *
 * @module
 */

/** WebAssembly value types, by their binary codes. */
export const T = {
  i32: 0x7f,
  i64: 0x7e,
  f32: 0x7d,
  f64: 0x7c,
  v128: 0x7b,
} as const;
/** One of the value type codes in {@link T}. */
export type ValType = typeof T[keyof typeof T];

/** A function local (or parameter). */
export interface Local {
  /** Local index in the function. */
  readonly index: number;
  /** Its type. */
  readonly type: ValType;
}

/** Byte sink with the LEB128 and IEEE writers the binary format needs. */
export class Writer {
  /** The bytes written so far. */
  readonly bytes: number[] = [];
  /** Open structured-control labels, innermost last. */
  readonly labels: string[] = [];
  /** Gives the local holding a pooled v128 constant (set by the function). */
  pool?: (bytes: number[]) => number;

  /** Writes one byte. */
  byte(b: number): void {
    this.bytes.push(b & 0xff);
  }
  /** Writes an unsigned LEB128 number. */
  u32(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
      throw new RangeError(`Cannot encode ${n} as u32 LEB128`);
    }
    do {
      let b = n & 0x7f;
      n = Math.floor(n / 128);
      if (n !== 0) b |= 0x80;
      this.byte(b);
    } while (n !== 0);
  }
  /** Writes a signed LEB128 number (i32 range). */
  s32(n: number): void {
    if (!Number.isInteger(n) || n < -0x80000000 || n > 0xffffffff) {
      throw new RangeError(`Cannot encode ${n} as i32 LEB128`);
    }
    n = n | 0;
    while (true) {
      const b = n & 0x7f;
      n >>= 7;
      const done = (n === 0 && (b & 0x40) === 0) ||
        (n === -1 && (b & 0x40) !== 0);
      this.byte(done ? b : b | 0x80);
      if (done) return;
    }
  }
  /** Writes a little-endian f32. */
  f32(x: number): void {
    const b = new Uint8Array(new Float32Array([x]).buffer);
    for (const v of b) this.byte(v);
  }
  /** Writes a length-prefixed UTF-8 name. */
  name(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u32(b.length);
    for (const v of b) this.byte(v);
  }
  /** Branch depth of a named label. */
  depth(label: string): number {
    const i = this.labels.lastIndexOf(label);
    if (i < 0) throw new SyntaxError(`Unknown branch label "${label}"`);
    return this.labels.length - 1 - i;
  }
}

/** A piece of code that writes itself into a function body. */
export type Code = (w: Writer) => void;

const SIMD = 0xfd;

function plain(op: number, ...args: Code[]): Code {
  return (w) => {
    for (const a of args) a(w);
    w.byte(op);
  };
}

function simd(op: number, ...args: Code[]): Code {
  return (w) => {
    for (const a of args) a(w);
    w.byte(SIMD);
    w.u32(op);
  };
}

function mem(
  prefix: number | null,
  op: number,
  align: number,
  offset: number,
  ...args: Code[]
): Code {
  return (w) => {
    for (const a of args) a(w);
    if (prefix !== null) {
      w.byte(prefix);
      w.u32(op);
    } else w.byte(op);
    w.u32(align);
    w.u32(offset);
  };
}

// ---------------------------------------------------------------- locals

/** `local.get`. */
export const get = (l: Local): Code => (w) => {
  w.byte(0x20);
  w.u32(l.index);
};
/** `local.set`. */
export const set = (l: Local, v: Code): Code => (w) => {
  v(w);
  w.byte(0x21);
  w.u32(l.index);
};
/** `local.tee`. */
export const tee = (l: Local, v: Code): Code => (w) => {
  v(w);
  w.byte(0x22);
  w.u32(l.index);
};
/** `drop`. */
export const drop = (v: Code): Code => plain(0x1a, v);
/** `select`: `a` when `cond` is non-zero, else `b`. */
export const select = (a: Code, b: Code, cond: Code): Code =>
  plain(0x1b, a, b, cond);

// ---------------------------------------------------------------- control

/** A sequence of code. */
export const seq = (...body: Code[]): Code => (w) => {
  for (const c of body) c(w);
};

function structured(op: number, label: string, body: Code[]): Code {
  return (w) => {
    w.byte(op);
    w.byte(0x40);
    w.labels.push(label);
    for (const c of body) c(w);
    w.labels.pop();
    w.byte(0x0b);
  };
}

/** `block` with a named label (a `br` to it jumps past the end). */
export const block = (label: string, ...body: Code[]): Code =>
  structured(0x02, label, body);
/** `loop` with a named label (a `br` to it jumps to the top). */
export const loop = (label: string, ...body: Code[]): Code =>
  structured(0x03, label, body);
/** `br` to a named label. */
export const br = (label: string): Code => (w) => {
  w.byte(0x0c);
  w.u32(w.depth(label));
};
/** `br_if` to a named label. */
export const brIf = (label: string, cond: Code): Code => (w) => {
  cond(w);
  w.byte(0x0d);
  w.u32(w.depth(label));
};
/** `if cond then … else … end` (no result). */
export const if_ =
  (cond: Code, then: Code[], otherwise?: Code[]): Code => (w) => {
    cond(w);
    w.byte(0x04);
    w.byte(0x40);
    w.labels.push("");
    for (const c of then) c(w);
    if (otherwise) {
      w.byte(0x05);
      for (const c of otherwise) c(w);
    }
    w.labels.pop();
    w.byte(0x0b);
  };
/**
 * `i32.atomic.rmw.add`: adds `v` to the aligned i32 at `addr` atomically
 * and returns the old value (threads proposal; also valid on an unshared
 * memory).
 */
export const atomicAdd = (addr: Code, v: Code, offset = 0): Code =>
  mem(0xfe, 0x1e, 2, offset, addr, v);

/** `i32.atomic.load`: reads the aligned i32 at `addr` with sequential consistency. */
export const atomicLoad = (addr: Code, offset = 0): Code =>
  mem(0xfe, 0x10, 2, offset, addr);

/** `memory.copy dst, src, n` (bulk memory). */
export const memoryCopy = (dst: Code, src: Code, n: Code): Code => (w) => {
  dst(w);
  src(w);
  n(w);
  w.byte(0xfc);
  w.u32(10);
  w.byte(0);
  w.byte(0);
};

/** `return`. */
export const ret: Code = (w) => w.byte(0x0f);
/** `call` a function by index. */
export const call = (fn: { index: number }, ...args: Code[]): Code => (w) => {
  for (const a of args) a(w);
  w.byte(0x10);
  w.u32(fn.index);
};

/**
 * `for (i = start; i < end; i += step) body` as a guarded do-while (one
 * branch per iteration). `end` is evaluated before every iteration.
 */
export const forLoop = (
  label: string,
  i: Local,
  start: Code,
  end: Code,
  step: Code,
  ...body: Code[]
): Code =>
  seq(
    set(i, start),
    if_(i32.lt_s(get(i), end), [
      loop(
        label,
        ...body,
        set(i, i32.add(get(i), step)),
        brIf(label, i32.lt_s(get(i), end)),
      ),
    ]),
  );

// ---------------------------------------------------------------- scalars

/** i32 instructions. */
export const i32 = {
  const: (n: number): Code => (w) => {
    w.byte(0x41);
    w.s32(n);
  },
  eqz: (a: Code): Code => plain(0x45, a),
  eq: (a: Code, b: Code): Code => plain(0x46, a, b),
  ne: (a: Code, b: Code): Code => plain(0x47, a, b),
  lt_s: (a: Code, b: Code): Code => plain(0x48, a, b),
  lt_u: (a: Code, b: Code): Code => plain(0x49, a, b),
  gt_s: (a: Code, b: Code): Code => plain(0x4a, a, b),
  gt_u: (a: Code, b: Code): Code => plain(0x4b, a, b),
  le_s: (a: Code, b: Code): Code => plain(0x4c, a, b),
  ge_s: (a: Code, b: Code): Code => plain(0x4e, a, b),
  ge_u: (a: Code, b: Code): Code => plain(0x4f, a, b),
  add: (a: Code, b: Code): Code => plain(0x6a, a, b),
  sub: (a: Code, b: Code): Code => plain(0x6b, a, b),
  mul: (a: Code, b: Code): Code => plain(0x6c, a, b),
  div_s: (a: Code, b: Code): Code => plain(0x6d, a, b),
  div_u: (a: Code, b: Code): Code => plain(0x6e, a, b),
  rem_u: (a: Code, b: Code): Code => plain(0x70, a, b),
  and: (a: Code, b: Code): Code => plain(0x71, a, b),
  or: (a: Code, b: Code): Code => plain(0x72, a, b),
  xor: (a: Code, b: Code): Code => plain(0x73, a, b),
  shl: (a: Code, b: Code): Code => plain(0x74, a, b),
  shr_s: (a: Code, b: Code): Code => plain(0x75, a, b),
  shr_u: (a: Code, b: Code): Code => plain(0x76, a, b),
  trunc_f32_s: (a: Code): Code => plain(0xa8, a),
  reinterpret_f32: (a: Code): Code => plain(0xbc, a),
  load: (addr: Code, offset = 0): Code => mem(null, 0x28, 2, offset, addr),
  load8_s: (addr: Code, offset = 0): Code => mem(null, 0x2c, 0, offset, addr),
  load8_u: (addr: Code, offset = 0): Code => mem(null, 0x2d, 0, offset, addr),
  load16_u: (addr: Code, offset = 0): Code => mem(null, 0x2f, 1, offset, addr),
  store: (addr: Code, v: Code, offset = 0): Code =>
    mem(null, 0x36, 2, offset, addr, v),
  store8: (addr: Code, v: Code, offset = 0): Code =>
    mem(null, 0x3a, 0, offset, addr, v),
  store16: (addr: Code, v: Code, offset = 0): Code =>
    mem(null, 0x3b, 1, offset, addr, v),
};

/** f32 instructions. */
export const f32 = {
  const: (x: number): Code => (w) => {
    w.byte(0x43);
    w.f32(x);
  },
  eq: (a: Code, b: Code): Code => plain(0x5b, a, b),
  lt: (a: Code, b: Code): Code => plain(0x5d, a, b),
  gt: (a: Code, b: Code): Code => plain(0x5e, a, b),
  abs: (a: Code): Code => plain(0x8b, a),
  neg: (a: Code): Code => plain(0x8c, a),
  floor: (a: Code): Code => plain(0x8e, a),
  nearest: (a: Code): Code => plain(0x90, a),
  sqrt: (a: Code): Code => plain(0x91, a),
  add: (a: Code, b: Code): Code => plain(0x92, a, b),
  sub: (a: Code, b: Code): Code => plain(0x93, a, b),
  mul: (a: Code, b: Code): Code => plain(0x94, a, b),
  div: (a: Code, b: Code): Code => plain(0x95, a, b),
  min: (a: Code, b: Code): Code => plain(0x96, a, b),
  max: (a: Code, b: Code): Code => plain(0x97, a, b),
  convert_i32_s: (a: Code): Code => plain(0xb2, a),
  reinterpret_i32: (a: Code): Code => plain(0xbe, a),
  load: (addr: Code, offset = 0): Code => mem(null, 0x2a, 2, offset, addr),
  store: (addr: Code, v: Code, offset = 0): Code =>
    mem(null, 0x38, 2, offset, addr, v),
};

// ---------------------------------------------------------------- SIMD

/** v128 memory, constant and bitwise instructions. */
export const v128 = {
  load: (addr: Code, offset = 0): Code => mem(SIMD, 0x00, 0, offset, addr),
  store: (addr: Code, v: Code, offset = 0): Code =>
    mem(SIMD, 0x0b, 0, offset, addr, v),
  /** `v128.const` from 16 bytes. */
  const: (bytes: ArrayLike<number>): Code => (w) => {
    w.byte(SIMD);
    w.u32(0x0c);
    for (let i = 0; i < 16; i++) w.byte(bytes[i]);
  },
  /**
   * A v128 constant kept in a local set once at function entry: V8 builds
   * a non-trivial constant with several instructions at each use, which
   * would otherwise repeat inside loops.
   */
  pooled: (bytes: ArrayLike<number>): Code => (w) => {
    const b = Array.from({ length: 16 }, (_, i) => bytes[i] & 0xff);
    if (!w.pool) return v128.const(b)(w);
    w.byte(0x20);
    w.u32(w.pool(b));
  },
  load32_splat: (addr: Code, offset = 0): Code =>
    mem(SIMD, 0x09, 0, offset, addr),
  load64_splat: (addr: Code, offset = 0): Code =>
    mem(SIMD, 0x0a, 0, offset, addr),
  load32_zero: (addr: Code, offset = 0): Code =>
    mem(SIMD, 0x5c, 0, offset, addr),
  load64_zero: (addr: Code, offset = 0): Code =>
    mem(SIMD, 0x5d, 0, offset, addr),
  load16_lane: (addr: Code, v: Code, lane: number, offset = 0): Code => (w) => {
    addr(w);
    v(w);
    w.byte(SIMD);
    w.u32(0x55);
    w.u32(0);
    w.u32(offset);
    w.byte(lane);
  },
  not: (a: Code): Code => simd(0x4d, a),
  and: (a: Code, b: Code): Code => simd(0x4e, a, b),
  andnot: (a: Code, b: Code): Code => simd(0x4f, a, b),
  or: (a: Code, b: Code): Code => simd(0x50, a, b),
  xor: (a: Code, b: Code): Code => simd(0x51, a, b),
  bitselect: (a: Code, b: Code, mask: Code): Code => simd(0x52, a, b, mask),
};

/** i8x16 instructions. */
export const i8x16 = {
  splat: (a: Code): Code => simd(0x0f, a),
  /** Lane shuffle of two vectors; indices 0..15 pick from `a`, 16..31 from `b`. */
  shuffle: (a: Code, b: Code, lanes: number[]): Code => (w) => {
    a(w);
    b(w);
    w.byte(SIMD);
    w.u32(0x0d);
    for (let i = 0; i < 16; i++) w.byte(lanes[i]);
  },
  sub: (a: Code, b: Code): Code => simd(0x71, a, b),
  add: (a: Code, b: Code): Code => simd(0x6e, a, b),
  /** `a[s[i]]` per byte (0 where `s[i]` ≥ 16). */
  swizzle: (a: Code, s: Code): Code => simd(0x0e, a, s),
  /** Relaxed swizzle (x86: one `pshufb`); lanes of `s` must be below 16 to be portable. */
  relaxed_swizzle: (a: Code, s: Code): Code => simd(0x100, a, s),
  abs: (a: Code): Code => simd(0x60, a),
  eq: (a: Code, b: Code): Code => simd(0x23, a, b),
  /** Lanes of all ones where `a < b` (signed), else zero. */
  lt_s: (a: Code, b: Code): Code => simd(0x25, a, b),
  shr_u: (a: Code, n: Code): Code => simd(0x6d, a, n),
  narrow_i16x8_s: (a: Code, b: Code): Code => simd(0x65, a, b),
};

/** i16x8 instructions. */
export const i16x8 = {
  splat: (a: Code): Code => simd(0x10, a),
  load8x8_s: (addr: Code, offset = 0): Code => mem(SIMD, 0x01, 0, offset, addr),
  load8x8_u: (addr: Code, offset = 0): Code => mem(SIMD, 0x02, 0, offset, addr),
  extend_low_i8x16_s: (a: Code): Code => simd(0x87, a),
  extend_high_i8x16_s: (a: Code): Code => simd(0x88, a),
  extend_low_i8x16_u: (a: Code): Code => simd(0x89, a),
  extend_high_i8x16_u: (a: Code): Code => simd(0x8a, a),
  shl: (a: Code, n: Code): Code => simd(0x8b, a, n),
  shr_s: (a: Code, n: Code): Code => simd(0x8c, a, n),
  shr_u: (a: Code, n: Code): Code => simd(0x8d, a, n),
  add: (a: Code, b: Code): Code => simd(0x8e, a, b),
  sub: (a: Code, b: Code): Code => simd(0x91, a, b),
  mul: (a: Code, b: Code): Code => simd(0x95, a, b),
  narrow_i32x4_s: (a: Code, b: Code): Code => simd(0x85, a, b),
  /** Relaxed: `a[2i]·b[2i] + a[2i+1]·b[2i+1]` as i16, `b` must be in 0..127. */
  relaxed_dot_i8x16_i7x16_s: (a: Code, b: Code): Code => simd(0x112, a, b),
};

/** i32x4 instructions. */
export const i32x4 = {
  splat: (a: Code): Code => simd(0x11, a),
  extract_lane: (a: Code, lane: number): Code => (w) => {
    a(w);
    w.byte(SIMD);
    w.u32(0x1b);
    w.byte(lane);
  },
  load16x4_s: (addr: Code, offset = 0): Code =>
    mem(SIMD, 0x03, 0, offset, addr),
  load16x4_u: (addr: Code, offset = 0): Code =>
    mem(SIMD, 0x04, 0, offset, addr),
  extend_low_i16x8_s: (a: Code): Code => simd(0xa7, a),
  extend_high_i16x8_s: (a: Code): Code => simd(0xa8, a),
  extend_low_i16x8_u: (a: Code): Code => simd(0xa9, a),
  extend_high_i16x8_u: (a: Code): Code => simd(0xaa, a),
  shl: (a: Code, n: Code): Code => simd(0xab, a, n),
  shr_s: (a: Code, n: Code): Code => simd(0xac, a, n),
  shr_u: (a: Code, n: Code): Code => simd(0xad, a, n),
  add: (a: Code, b: Code): Code => simd(0xae, a, b),
  sub: (a: Code, b: Code): Code => simd(0xb1, a, b),
  mul: (a: Code, b: Code): Code => simd(0xb5, a, b),
  max_s: (a: Code, b: Code): Code => simd(0xb8, a, b),
  min_s: (a: Code, b: Code): Code => simd(0xb6, a, b),
  dot_i16x8_s: (a: Code, b: Code): Code => simd(0xba, a, b),
  trunc_sat_f32x4_s: (a: Code): Code => simd(0xf8, a),
  extadd_pairwise_i16x8_s: (a: Code): Code => simd(0x7e, a),
  /** Relaxed: `Σ a[4i..4i+3]·b[4i..4i+3] + c`, `b` must be in 0..127. */
  relaxed_dot_i8x16_i7x16_add_s: (a: Code, b: Code, c: Code): Code =>
    simd(0x113, a, b, c),
};

/** f32x4 instructions. */
export const f32x4 = {
  splat: (a: Code): Code => simd(0x13, a),
  extract_lane: (a: Code, lane: number): Code => (w) => {
    a(w);
    w.byte(SIMD);
    w.u32(0x1f);
    w.byte(lane);
  },
  replace_lane: (a: Code, lane: number, v: Code): Code => (w) => {
    a(w);
    v(w);
    w.byte(SIMD);
    w.u32(0x20);
    w.byte(lane);
  },
  eq: (a: Code, b: Code): Code => simd(0x41, a, b),
  lt: (a: Code, b: Code): Code => simd(0x43, a, b),
  gt: (a: Code, b: Code): Code => simd(0x44, a, b),
  abs: (a: Code): Code => simd(0xe0, a),
  neg: (a: Code): Code => simd(0xe1, a),
  sqrt: (a: Code): Code => simd(0xe3, a),
  add: (a: Code, b: Code): Code => simd(0xe4, a, b),
  sub: (a: Code, b: Code): Code => simd(0xe5, a, b),
  mul: (a: Code, b: Code): Code => simd(0xe6, a, b),
  div: (a: Code, b: Code): Code => simd(0xe7, a, b),
  min: (a: Code, b: Code): Code => simd(0xe8, a, b),
  max: (a: Code, b: Code): Code => simd(0xe9, a, b),
  pmin: (a: Code, b: Code): Code => simd(0xea, a, b),
  pmax: (a: Code, b: Code): Code => simd(0xeb, a, b),
  nearest: (a: Code): Code => simd(0x6a, a),
  floor: (a: Code): Code => simd(0x68, a),
  convert_i32x4_s: (a: Code): Code => simd(0xfa, a),
  /** Relaxed fused (or unfused) `a·b + c`. */
  relaxed_madd: (a: Code, b: Code, c: Code): Code => simd(0x105, a, b, c),
};

// ---------------------------------------------------------------- module

/** A function under construction. */
export class FuncBuilder {
  /** Index in the module's function space. */
  readonly index: number;
  /** Export name. */
  readonly name: string;
  /** Parameters by name. */
  readonly params: Record<string, Local>;
  readonly #paramTypes: ValType[];
  readonly #results: ValType[];
  readonly #locals: ValType[] = [];
  #body: Code[] = [];

  /** Creates a function; use {@link ModuleBuilder.func}. */
  constructor(
    index: number,
    name: string,
    params: [string, ValType][],
    results: ValType[],
  ) {
    this.index = index;
    this.name = name;
    this.#paramTypes = params.map((p) => p[1]);
    this.#results = results;
    this.params = {};
    params.forEach(([n, t], i) => this.params[n] = { index: i, type: t });
  }

  /** Declares a new local of a type. */
  local(type: ValType): Local {
    const l = { index: this.#paramTypes.length + this.#locals.length, type };
    this.#locals.push(type);
    return l;
  }

  /** Declares several locals of one type. */
  locals(type: ValType, n: number): Local[] {
    return Array.from({ length: n }, () => this.local(type));
  }

  /** Sets the body. */
  body(...code: Code[]): void {
    this.#body = code;
  }

  /** The function's type signature as bytes (for dedup). */
  typeBytes(): number[] {
    const w = new Writer();
    w.byte(0x60);
    w.u32(this.#paramTypes.length);
    for (const t of this.#paramTypes) w.byte(t);
    w.u32(this.#results.length);
    for (const t of this.#results) w.byte(t);
    return w.bytes;
  }

  /** The code section entry (size-prefixed). */
  codeBytes(): number[] {
    // Body first: it may add pooled-constant locals.
    const body = new Writer();
    const pool = new Map<string, number>();
    body.pool = (b) => {
      const key = b.join(",");
      let i = pool.get(key);
      if (i === undefined) {
        i = this.local(T.v128).index;
        pool.set(key, i);
      }
      return i;
    };
    for (const c of this.#body) c(body);
    if (body.labels.length !== 0) throw new SyntaxError("Unbalanced labels");
    const w = new Writer();
    // Run-length encode the local declarations.
    const groups: [number, ValType][] = [];
    for (const t of this.#locals) {
      const last = groups[groups.length - 1];
      if (last && last[1] === t) last[0]++;
      else groups.push([1, t]);
    }
    w.u32(groups.length);
    for (const [n, t] of groups) {
      w.u32(n);
      w.byte(t);
    }
    for (const [key, i] of pool) {
      v128.const(key.split(",").map(Number))(w);
      w.byte(0x21);
      w.u32(i);
    }
    for (const b of body.bytes) w.byte(b);
    w.byte(0x0b);
    const out = new Writer();
    out.u32(w.bytes.length);
    return [...out.bytes, ...w.bytes];
  }
}

/** Options of {@link ModuleBuilder}. */
export interface ModuleOptions {
  /** Whether the imported memory is shared (threads). */
  shared: boolean;
  /** Minimum pages (64 KiB each) of the imported memory. */
  minPages: number;
  /** Maximum pages of the imported memory. */
  maxPages: number;
}

/** Builds a module that imports one memory (`env.memory`) and exports functions. */
export class ModuleBuilder {
  readonly #funcs: FuncBuilder[] = [];
  readonly #opts: ModuleOptions;

  /** Creates an empty module. */
  constructor(opts: ModuleOptions) {
    this.#opts = opts;
  }

  /** Adds an exported function. */
  func(
    name: string,
    params: [string, ValType][],
    results: ValType[] = [],
  ): FuncBuilder {
    const f = new FuncBuilder(this.#funcs.length, name, params, results);
    this.#funcs.push(f);
    return f;
  }

  /** Encodes the module. */
  encode(): Uint8Array {
    const out = new Writer();
    for (const b of [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]) {
      out.byte(b);
    }
    const section = (id: number, fill: (w: Writer) => void) => {
      const w = new Writer();
      fill(w);
      out.byte(id);
      out.u32(w.bytes.length);
      for (const b of w.bytes) out.byte(b);
    };
    // Types, deduplicated by signature.
    const types: string[] = [];
    const typeOf: number[] = [];
    for (const f of this.#funcs) {
      const key = f.typeBytes().join(",");
      let i = types.indexOf(key);
      if (i < 0) {
        i = types.length;
        types.push(key);
      }
      typeOf.push(i);
    }
    section(1, (w) => {
      w.u32(types.length);
      for (const t of types) for (const b of t.split(",")) w.byte(+b);
    });
    section(2, (w) => {
      w.u32(1);
      w.name("env");
      w.name("memory");
      w.byte(0x02);
      w.byte(this.#opts.shared ? 0x03 : 0x01);
      w.u32(this.#opts.minPages);
      w.u32(this.#opts.maxPages);
    });
    section(3, (w) => {
      w.u32(this.#funcs.length);
      for (const t of typeOf) w.u32(t);
    });
    section(7, (w) => {
      w.u32(this.#funcs.length);
      for (const f of this.#funcs) {
        w.name(f.name);
        w.byte(0x00);
        w.u32(f.index);
      }
    });
    section(10, (w) => {
      w.u32(this.#funcs.length);
      for (const f of this.#funcs) for (const b of f.codeBytes()) w.byte(b);
    });
    return new Uint8Array(out.bytes);
  }
}
