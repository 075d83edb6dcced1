// Would this model build? A cheap check run before an upload is linked into
// the registry and when the folder is listed. The hyperparameters and the
// tensor index (names and shapes) go through the library's own build check
// (models/check.ts: the limits, the block count against the tensors, every
// shape, by the same tensor plan the loaders follow), then the vocabulary is
// built as loading builds it; no weight is read.

import type { ModelFile } from "../core/model.ts";
import { checkModelBuilds } from "../models/check.ts";
import { GGUF_ARCHITECTURES } from "../models/gguf_config.ts";
import { createTokenizer } from "../tokenizers/mod.ts";

/**
 * Why a model file would not build as a served model, or `undefined` when
 * it would (plain tensor files pass: there is nothing to build).
 */
export function modelBuildProblem(
  file: ModelFile,
  where: string,
): string | undefined {
  try {
    checkModelBuilds(file, { name: where });
    const m = file.models[0];
    const arch = m?.metadata["general.architecture"];
    if (
      m && !m.config && typeof arch === "string" &&
      GGUF_ARCHITECTURES.includes(arch) && "tokenizer.ggml.model" in m.metadata
    ) {
      createTokenizer(m.metadata, { name: `${where}: GGUF metadata` });
    }
    return undefined;
  } catch (e) {
    if (
      e instanceof TypeError || e instanceof RangeError ||
      e instanceof SyntaxError
    ) return e.message;
    throw e;
  }
}
