// The byte automaton of json_schema.ts: one immutable frame per level of
// the parse, stepped one byte at a time.

import type { Node } from "./_json_schema_nodes.ts";

/** What a frame reads of its grammar. */
export interface Limits {
  /** Most spaces or tabs after a newline between tokens. */
  readonly maxWs: number;
}

// ------------------------------------------------------------ the automaton

// Results of Frame.step besides a new frame: reject, "done after this
// byte", "done before this byte" (the byte goes to the parent) and
// "push a child value, which takes this byte".
export const REJECT = 0;
export const DONE = 1;
export const DONE_BEFORE = 2;
export type Step =
  | Frame
  | typeof REJECT
  | typeof DONE
  | typeof DONE_BEFORE
  | Push;

export interface Push {
  push: Node;
  /** What this frame becomes while the child runs. */
  self: Frame;
}

/** One level of the parse: an immutable frame of a node. */
export interface Frame {
  /** Consumes one byte (−1: the end of the input). */
  step(b: number, g: Limits): Step;
  /** This frame once its child value completed (`result`: a matched key's index). */
  child(result: number): Frame;
  /** The key naming this frame's state. */
  key(): string;
}

/** A parse: frames from the innermost out (a persistent list). */
export interface Stack {
  frame: Frame;
  parent: Stack | null;
  depth: number;
}

export const isWs = (b: number) =>
  b === 0x20 || b === 0x0a || b === 0x09 || b === 0x0d;
/**
 * Insignificant whitespace between tokens, by llama.cpp's JSON grammar
 * rule: nothing, one space, or a newline and up to `max` spaces or tabs.
 * `ws` is 0 before any, −1 after the space, k ≥ 1 after the newline and
 * k − 1 indents; undefined refuses the byte.
 */
export function wsStep(ws: number, b: number, max: number): number | undefined {
  if (ws === 0) return b === 0x20 ? -1 : b === 0x0a ? 1 : undefined;
  if (ws > 0 && ws <= max && (b === 0x20 || b === 0x09)) return ws + 1;
  return undefined;
}
export const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
export const isHex = (b: number) =>
  isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);

/** The top of the parse, around the root value: whitespace, the value, nothing after. */
export class RootFrame implements Frame {
  constructor(
    readonly node: Node,
    readonly ws: number,
    readonly done: boolean,
  ) {}
  step(b: number, g: Limits): Step {
    if (this.done) return b < 0 ? DONE : REJECT;
    if (b < 0) return REJECT;
    if (isWs(b)) {
      const w = wsStep(this.ws, b, g.maxWs);
      return w === undefined ? REJECT : new RootFrame(this.node, w, false);
    }
    return { push: this.node, self: new RootFrame(this.node, 0, false) };
  }
  child(): Frame {
    return new RootFrame(this.node, 0, true);
  }
  key(): string {
    return this.done ? "R." : `R${this.ws}`;
  }
}

/**
 * A literal (true, false, null, enum and const values, object keys) among
 * candidates: `index[i]` is the original position of `values[i]`; `keys`
 * says whether completion reports which one matched (object keys).
 */
export class LitFrame implements Frame {
  constructor(
    readonly values: Uint8Array[],
    readonly pos: number,
    readonly id: number,
    readonly index: number[],
    readonly keys: boolean,
  ) {}
  step(b: number): Step {
    const next: Uint8Array[] = [];
    const idx: number[] = [];
    let ended = -1;
    for (let i = 0; i < this.values.length; i++) {
      const v = this.values[i];
      if (v.length === this.pos) ended = i;
      else if (v[this.pos] === b) {
        next.push(v);
        idx.push(this.index[i]);
      }
    }
    if (next.length > 0) {
      // A value that ends right after this byte, with no other continuing,
      // is done now; one that is a prefix of others waits for the next byte.
      if (next.length === 1 && next[0].length === this.pos + 1) {
        return this.keys ? new KeyDone(idx[0]) : DONE;
      }
      return new LitFrame(next, this.pos + 1, this.id, idx, this.keys);
    }
    // (keys end with their quote: a finished key was reported above)
    return ended < 0 || this.keys ? REJECT : DONE_BEFORE;
  }
  child(): Frame {
    return this;
  }
  key(): string {
    return `L${this.id}.${this.pos}.${this.index.join(",")}`;
  }
}

/** A matched object key (a LitFrame's end that reports which key). */
export class KeyDone implements Frame {
  constructor(readonly index: number) {}
  step(): Step {
    return REJECT;
  }
  child(): Frame {
    return this;
  }
  key(): string {
    return `K${this.index}`;
  }
}

/**
 * A JSON string. Phases: 0 before the quote, 1 content, 2 after a
 * backslash, 3–6 the hex digits of `\u`. `need` continuation bytes of a
 * UTF-8 character are pending, the next within [lo, hi].
 */
export class StrFrame implements Frame {
  constructor(
    readonly node: { min: number; max: number; id: number },
    readonly phase: number,
    readonly chars: number,
    readonly need: number,
    readonly lo: number,
    readonly hi: number,
  ) {}
  #with(phase: number, chars: number, need = 0, lo = 0x80, hi = 0xbf) {
    return new StrFrame(this.node, phase, chars, need, lo, hi);
  }
  step(b: number): Step {
    const { min, max } = this.node;
    switch (this.phase) {
      case 0:
        return b === 0x22 ? this.#with(1, 0) : REJECT;
      case 1: {
        if (this.need > 0) {
          if (b < this.lo || b > this.hi) return REJECT;
          return this.#with(1, this.chars, this.need - 1);
        }
        if (b === 0x22) return this.chars >= min ? DONE : REJECT;
        if (b < 0x20 || b > 0xf4 || (b >= 0x80 && b < 0xc2)) return REJECT;
        if (this.chars >= max) return REJECT;
        if (b === 0x5c) return this.#with(2, this.chars);
        if (b < 0x80) {
          // Unbounded strings keep one frame for all plain characters.
          return max === Infinity && this.chars >= min
            ? this
            : this.#with(1, this.chars + 1);
        }
        if (b < 0xe0) return this.#with(1, this.chars + 1, 1);
        if (b < 0xf0) {
          return this.#with(
            1,
            this.chars + 1,
            2,
            b === 0xe0 ? 0xa0 : 0x80,
            b === 0xed ? 0x9f : 0xbf,
          );
        }
        return this.#with(
          1,
          this.chars + 1,
          3,
          b === 0xf0 ? 0x90 : 0x80,
          b === 0xf4 ? 0x8f : 0xbf,
        );
      }
      case 2:
        if (b === 0x75) return this.#with(3, this.chars);
        return '"\\/bfnrt'.includes(String.fromCharCode(b))
          ? this.#with(1, this.chars + 1)
          : REJECT;
      case 3:
        if (!isHex(b)) return REJECT;
        // No surrogate halves (\uD800–\uDFFF): each escape is one character.
        return this.#with(4, this.chars, 0, b === 0x64 || b === 0x44 ? 1 : 0);
      case 4:
        if (!isHex(b)) return REJECT;
        if (this.lo === 1 && !(isDigit(b) && b < 0x38)) return REJECT;
        return this.#with(5, this.chars);
      case 5:
        return isHex(b) ? this.#with(6, this.chars) : REJECT;
      default:
        return isHex(b) ? this.#with(1, this.chars + 1) : REJECT;
    }
  }
  child(): Frame {
    return this;
  }
  key(): string {
    const c = this.node.max === Infinity && this.chars >= this.node.min
      ? "+"
      : this.chars;
    return `S${this.node.id}.${this.phase}.${c}.${this.need}.${this.lo}.${this.hi}`;
  }
}

/**
 * A JSON number. Phases: 0 start, 1 after "-", 2 integer digits, 3 after
 * a leading 0, 4 after ".", 5 fraction digits, 6 after "e", 7 after the
 * exponent's sign, 8 exponent digits; `n` digits so far in the part.
 */
export class NumFrame implements Frame {
  constructor(
    readonly integer: boolean,
    readonly phase: number,
    readonly n: number,
  ) {}
  #to(phase: number, n = 0) {
    return new NumFrame(this.integer, phase, n);
  }
  step(b: number): Step {
    const d = isDigit(b);
    const exp = !this.integer && (b === 0x65 || b === 0x45);
    switch (this.phase) {
      case 0:
      case 1:
        if (b === 0x2d && this.phase === 0) return this.#to(1);
        if (b === 0x30) return this.#to(3);
        return d ? this.#to(2, 1) : REJECT;
      case 2:
        if (d) return this.n < 15 ? this.#to(2, this.n + 1) : REJECT;
        if (b === 0x2e && !this.integer) return this.#to(4);
        if (exp) return this.#to(6);
        return DONE_BEFORE;
      case 3:
        if (b === 0x2e && !this.integer) return this.#to(4);
        if (exp) return this.#to(6);
        return d ? REJECT : DONE_BEFORE;
      case 4:
        return d ? this.#to(5, 1) : REJECT;
      case 5:
        if (d) return this.n < 15 ? this.#to(5, this.n + 1) : REJECT;
        if (exp) return this.#to(6);
        return DONE_BEFORE;
      case 6:
      case 7:
        if ((b === 0x2b || b === 0x2d) && this.phase === 6) return this.#to(7);
        return d ? this.#to(8, 1) : REJECT;
      default:
        if (d) return this.n < 3 ? this.#to(8, this.n + 1) : REJECT;
        return DONE_BEFORE;
    }
  }
  child(): Frame {
    return this;
  }
  key(): string {
    return `N${this.integer ? "i" : "f"}${this.phase}.${this.n}`;
  }
}

/**
 * An array. Phases: 0 before "[", 1 after "[", 2 after an item, 3 after
 * ","; `n` items so far, `ws` the whitespace state (see `wsStep`).
 */
export class ArrFrame implements Frame {
  constructor(
    readonly node: Extract<Node, { kind: "arr" }>,
    readonly phase: number,
    readonly n: number,
    readonly ws: number,
  ) {}
  #item(i: number): Node | null {
    return this.node.prefix[i] ?? this.node.items;
  }
  step(b: number, g: Limits): Step {
    const { min, max } = this.node;
    if (this.phase === 0) {
      return b === 0x5b ? new ArrFrame(this.node, 1, 0, 0) : REJECT;
    }
    if (b < 0) return REJECT;
    if (isWs(b)) {
      const w = wsStep(this.ws, b, g.maxWs);
      return w === undefined
        ? REJECT
        : new ArrFrame(this.node, this.phase, this.n, w);
    }
    const canItem = this.n < max && this.#item(this.n) !== null;
    if (this.phase === 2) {
      if (b === 0x2c) {
        return canItem ? new ArrFrame(this.node, 3, this.n, 0) : REJECT;
      }
      return b === 0x5d && this.n >= min ? DONE : REJECT;
    }
    if (this.phase === 1 && b === 0x5d) return this.n >= min ? DONE : REJECT;
    if (!canItem) return REJECT;
    return {
      push: this.#item(this.n)!,
      self: new ArrFrame(this.node, 3, this.n, 0),
    };
  }
  child(): Frame {
    return new ArrFrame(this.node, 2, this.n + 1, 0);
  }
  key(): string {
    return `A${this.node.id}.${this.phase}.${this.n}.${this.ws}`;
  }
}

/**
 * An object. Phases: 0 before "{", 1 after "{", 2 reading a key, 3 after
 * the key, 4 after ":", 5 after a value, 6 after ","; `seen` is a bit set
 * of the declared keys given so far, `at` the key being read or valued.
 */
export class ObjFrame implements Frame {
  constructor(
    readonly node: Extract<Node, { kind: "obj" }>,
    readonly phase: number,
    readonly seen: bigint,
    readonly at: number,
    readonly ws: number,
  ) {}
  #to(phase: number, seen = this.seen, at = this.at) {
    return new ObjFrame(this.node, phase, seen, at, 0);
  }
  #remaining(): number[] {
    const out: number[] = [];
    this.node.props.forEach((_, i) => {
      if (!(this.seen & (1n << BigInt(i)))) out.push(i);
    });
    return out;
  }
  #canClose(): boolean {
    return this.node.props.every((p, i) =>
      !p.required || (this.seen & (1n << BigInt(i)))
    );
  }
  #canKey(): boolean {
    return this.node.free !== undefined || this.#remaining().length > 0;
  }
  step(b: number, g: Limits): Step {
    if (this.phase === 0) return b === 0x7b ? this.#to(1) : REJECT;
    if (b < 0) return REJECT;
    if (isWs(b) && this.phase !== 2) {
      const w = wsStep(this.ws, b, g.maxWs);
      return w === undefined
        ? REJECT
        : new ObjFrame(this.node, this.phase, this.seen, this.at, w);
    }
    switch (this.phase) {
      case 1:
      case 6:
        if (b === 0x7d && this.phase === 1) {
          return this.#canClose() ? DONE : REJECT;
        }
        if (b !== 0x22 || !this.#canKey()) return REJECT;
        return { push: KEY_NODE, self: this.#to(2) };
      case 3:
        return b === 0x3a ? this.#to(4) : REJECT;
      case 4: {
        const value = this.at >= 0
          ? this.node.props[this.at].node
          : this.node.free!;
        return { push: value, self: this.#to(4) };
      }
      default: // 5
        if (b === 0x2c) return this.#canKey() ? this.#to(6) : REJECT;
        return b === 0x7d && this.#canClose() ? DONE : REJECT;
    }
  }
  child(result: number): Frame {
    if (this.phase === 2) {
      return result >= 0
        ? this.#to(3, this.seen | (1n << BigInt(result)), result)
        : this.#to(3, this.seen, -1);
    }
    return this.#to(5, this.seen, -1);
  }
  /** The frames that read a key here: the remaining declared keys, or any string. */
  keyFrame(): Frame {
    if (this.node.free) {
      return new StrFrame(
        { min: 0, max: Infinity, id: -1 },
        0,
        0,
        0,
        0x80,
        0xbf,
      );
    }
    const rest = this.#remaining();
    return new LitFrame(
      rest.map((i) => this.node.props[i].bytes),
      0,
      this.node.id,
      rest,
      true,
    );
  }
  key(): string {
    return `O${this.node.id}.${this.phase}.${this.seen}.${this.at}.${this.ws}`;
  }
}

/** Stands for "the key of the object frame below" in a push. */
export const KEY_NODE: Node = { kind: "any", id: -2 };
