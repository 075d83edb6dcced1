/**
 * Llama-family models (Llama 1/2/3, Mistral, Qwen2/2.5, TinyLlama,
 * SmolLM/SmolLM2): hyperparameters from Hugging Face `config.json` or GGUF
 * metadata, the network of registered layers they stand for, loading from
 * opened checkpoints, architecture detection from tensor names and shapes,
 * HF ↔ GGUF conversion (names, rotary permutation, llama.cpp metadata and
 * vocabulary), and text generation.
 *
 * Everything here is browser-safe; `@modelhost/modelhost/io` adds
 * `loadTransformer(path)` for folders and files on disk.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, generateText, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "qwen2", vocab_size: 32, hidden_size: 16, intermediate_size: 32,
 *   num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
 * });
 * const weights = initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 1);
 * const model = buildTransformer(cfg, weights);
 * const r = await generateText(model, [1, 2], { maxTokens: 3, greedy: true });
 * assert(r.ids.length === 3);
 * ```
 *
 * @module
 */

export {
  configFromHf,
  configToHf,
  FAMILIES,
  type FamilyInfo,
  type HfConfigJson,
  ropeScalingFromHf,
  SUPPORTED_MODEL_TYPES,
  type TransformerConfig,
  type TransformerFamily,
  transformerNetwork,
} from "./config.ts";
export type {
  DecoderFamily,
  DecoderVariant,
  LayerAttention,
  LongRope,
} from "./families/mod.ts";
export {
  checkConfigLimits,
  checkModelBuilds,
  type CheckModelOptions,
  checkTransformerFile,
  type CheckTransformerOptions,
  checkTransformerTensors,
  MAX_BLOCKS,
  MAX_CONTEXT_LENGTH,
  MAX_HEAD_DIM,
  MAX_HEADS,
  MAX_HIDDEN_SIZE,
  MAX_INTERMEDIATE_SIZE,
  MAX_VOCAB_SIZE,
  type TensorShapes,
} from "./check.ts";
export {
  configFromGguf,
  configToGguf,
  GGUF_ARCHITECTURES,
  type GgufConfigOptions,
  type GgufMetadata,
} from "./gguf_config.ts";
export {
  type NameScheme,
  type ParsedTensorName,
  parseTensorName,
  renameTensor,
  tensorName,
  type TensorRole,
} from "./names.ts";
export {
  llama3RopeFactors,
  llama3ScalingFromFactors,
  permuteToHalfSplit,
  permuteToInterleaved,
} from "./rotary.ts";
export {
  type BatchItem,
  buildTransformer,
  type ForwardOptions,
  type GenerationDefaults,
  type HfModelFiles,
  type Transformer,
  transformerFromFiles,
  transformerFromGguf,
  type TransformerMemory,
  type TransformerOptions,
  type TransformerState,
} from "./transformer.ts";
export {
  type FinishReason,
  generate,
  GENERATE_DEFAULTS,
  type GeneratedToken,
  type GenerateOptions,
  type GenerateResult,
  generateText,
  type Prompt,
  promptIds,
  type Sequence,
  startSequence,
} from "./generate.ts";
export {
  ggufToHf,
  type GgufToHfOptions,
  hfToGguf,
  type HfToGgufOptions,
} from "./convert.ts";
export {
  ggufPreName,
  GgufTokenType,
  ggufVocabFromTokenizerJson,
  type HfTokenizerFiles,
  tokenizerJsonFromGguf,
  type VocabToGgufOptions,
} from "./vocab.ts";
export {
  detectArchitecture,
  type DetectedArchitecture,
  type DetectedTensor,
  networkNameOf,
  type TensorShapeInfo,
} from "./detect.ts";
export {
  BatchEngine,
  type BatchEngineOptions,
  type BatchStep,
} from "./batch.ts";
export {
  embed,
  type EmbedInput,
  type EmbedOptions,
  type EmbedResult,
  type Pooling,
} from "./embed.ts";
export {
  klDivergence,
  type KlDivergenceResult,
  type LogitsFile,
  perplexity,
  type PerplexityOptions,
  type PerplexityResult,
  readLogitsFile,
} from "./perplexity.ts";
export {
  computeImatrix,
  type Imatrix,
  type ImatrixEntry,
  type ImatrixOptions,
  imatrixToDat,
  imatrixToGguf,
  imatrixWeights,
  readImatrix,
} from "./imatrix.ts";
export {
  buildEncoder,
  type Encoder,
  type EncoderOptions,
  type EncoderRow,
} from "./encoder.ts";
export {
  ENCODER_MODEL_TYPES,
  type EncoderConfig,
  encoderConfigFromGguf,
  encoderConfigFromHf,
  encoderConfigToGguf,
  type EncoderFamily,
  encoderGgufArchitecture,
  type EncoderHfConfig,
  encoderTensorName,
  isGlobalLayer,
} from "./encoder_config.ts";
export { encoderGgufVocab, encoderUnigramVocab } from "./encoder_vocab.ts";
export { type EncoderNetwork, encoderNetwork } from "./encoder_network.ts";
export {
  cosineSimilarity,
  embedSentences,
  type EmbedSentencesOptions,
  type EncoderModel,
  type PoolingMode,
  poolTokens,
  type ReadJson,
  readSentencePipeline,
  rerankScores,
  type SentenceEmbeddings,
  type SentencePipeline,
} from "./sentence.ts";
