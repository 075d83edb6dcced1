/**
 * Small hand-built vocabularies shared by the tokenizer tests. Expected ids
 * in the tests are worked out by hand from these tables (see the comments
 * next to each assertion).
 */

/** Byte-level BPE (GGUF form). Ids are the array positions. */
export const BPE_TOKENS = [
  "<|endoftext|>", // 0 control
  "l", // 1
  "o", // 2
  "w", // 3
  "e", // 4
  "r", // 5
  "Ġ", // 6
  "n", // 7
  "s", // 8
  "t", // 9
  "lo", // 10
  "low", // 11
  "er", // 12
  "Ġn", // 13
  "Ġne", // 14
  "Ġnew", // 15
  "es", // 16
  "est", // 17
  "lower", // 18
  "!", // 19
  "ee", // 20
  "ĠĠ", // 21 user-defined (two spaces, as MPT / NeoX add them)
  "Ã", // 22 (byte 0xC3)
  "©", // 23 (byte 0xA9)
];

/** Types: 3 = control, 4 = user-defined, 1 = normal. */
export const BPE_TYPES: number[] = BPE_TOKENS.map((_, i) => (i === 0 ? 3 : 1));

/** Merges, highest priority first. */
export const BPE_MERGES = [
  "l o", // r0
  "lo w", // r1
  "e r", // r2
  "Ġ n", // r3
  "Ġn e", // r4
  "Ġne w", // r5
  "e s", // r6
  "es t", // r7
  "low er", // r8
  "e e", // r9
];

/** GGUF metadata of the byte-level BPE vocabulary. */
export function bpeMetadata(
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "gpt-2",
    "tokenizer.ggml.tokens": BPE_TOKENS,
    "tokenizer.ggml.token_type": BPE_TYPES,
    "tokenizer.ggml.merges": BPE_MERGES,
    "tokenizer.ggml.bos_token_id": 0,
    "tokenizer.ggml.eos_token_id": 0,
    ...extra,
  };
}

/**
 * SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte pieces (ids 3..258),
 * then scored pieces.
 */
export function spmMetadata(
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [2, 3, 3];
  const scores = [0, 0, 0];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(6);
    scores.push(0);
  }
  const pieces: [string, number][] = [
    ["▁", -1], // 259
    ["a", -2], // 260
    ["b", -3], // 261
    ["c", -4], // 262
    ["ab", -5], // 263
    ["bc", -0.5], // 264
    ["▁a", -6], // 265
    ["▁ab", -7], // 266
  ];
  for (const [t, s] of pieces) {
    tokens.push(t);
    types.push(1);
    scores.push(s);
  }
  return {
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.scores": scores,
    "tokenizer.ggml.token_type": types,
    "tokenizer.ggml.bos_token_id": 1,
    "tokenizer.ggml.eos_token_id": 2,
    "tokenizer.ggml.unknown_token_id": 0,
    ...extra,
  };
}
