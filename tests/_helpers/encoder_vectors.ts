/**
 * sentence-transformers' vectors for the tiny encoder checkpoints in
 * tests/vectors/encoders/ (made by tests/vectors/gen/encoders.py), shared
 * by the encoder tests.
 */

import { fromFileUrl } from "@std/path";

/** The folder of the encoder checkpoints, with a trailing separator. */
export const ENCODERS_DIR: string = fromFileUrl(
  new URL("../vectors/encoders/", import.meta.url),
);

/** The sentence-embedding checkpoints every encoder test runs. */
export const ENCODER_CASES: readonly string[] = [
  "bert-mean",
  "bert-cls",
  "bert-max",
  "roberta-mean",
  "xlm-roberta-cls",
  "modernbert-mean",
  "nomic-bert-mean",
  "xlm-roberta-unigram",
];

/** A checkpoint's `expected.json`: texts, their ids and embeddings. */
export interface ExpectedEmbeddings {
  texts: string[];
  prompt_name: string | null;
  ids: number[][];
  pooling: string;
  normalize: boolean;
  embeddings: number[][];
}

/** The `expected.json` of checkpoint `name`. */
export async function readExpected(name: string): Promise<ExpectedEmbeddings> {
  return JSON.parse(
    await Deno.readTextFile(`${ENCODERS_DIR}${name}/expected.json`),
  ) as ExpectedEmbeddings;
}
