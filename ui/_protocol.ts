/**
 * The messages between the page (main thread) and its worker. Types only:
 * the main thread imports nothing of the library at run time, so the page
 * script stays small and every model byte is handled in the worker.
 *
 * @module
 */

import type { Heatmap, TensorStats } from "./_stats.ts";
import type { Preview, PreviewRow, PreviewType } from "./_quant.ts";

/** A local file and its path inside a dropped or picked folder. */
export interface LocalFile {
  /** Path relative to the folder (`model/config.json`), or the file name. */
  path: string;
  /** The file. */
  blob: Blob;
}

/** Where a model comes from. */
export type OpenInput =
  | { kind: "files"; files: LocalFile[] }
  | { kind: "url"; url: string };

/** One metadata entry, as text. */
export interface MetadataRow {
  /** The key. */
  key: string;
  /** The stored type (GGUF value type, `string`, `number`, ...). */
  type: string;
  /** The value as text, shortened for long arrays and strings. */
  value: string;
}

/** One tensor of the tensor table. */
export interface TensorRow {
  /** Name. */
  name: string;
  /** Stored dtype. */
  dtype: string;
  /** Shape, outermost first. */
  shape: number[];
  /** Elements. */
  elements: number;
  /** Stored bytes. */
  bytes: number;
}

/** Bytes and tensors of one dtype. */
export interface DtypeBytes {
  /** The dtype. */
  dtype: string;
  /** Tensors stored in it. */
  tensors: number;
  /** Their elements. */
  elements: number;
  /** Their bytes. */
  bytes: number;
}

/** The architecture facts the summary shows (absent ones are unknown). */
export interface ArchSummary {
  /** Family or architecture name (`llama`, `qwen2`, `network`, ...). */
  family?: string;
  /** Transformer blocks or network layers. */
  layers?: number;
  /** Attention heads. */
  heads?: number;
  /** Key/value heads. */
  kvHeads?: number;
  /** Hidden size. */
  hidden?: number;
  /** Feed-forward size. */
  ffn?: number;
  /** Context length. */
  context?: number;
  /** Vocabulary size. */
  vocab?: number;
  /** Parameters (elements of every tensor). */
  parameters: number;
  /** Remarks of the detection. */
  notes: string[];
}

/** One box of the layer diagram. */
export interface DiagramBlock {
  /** Title (`Embedding`, `Block 0`, `dense`, ...). */
  label: string;
  /** One line of facts. */
  detail: string;
  /** Parameters in the block. */
  parameters: number;
  /** Tensor names (or layer fields) inside it. */
  items: string[];
  /** How many identical blocks this box stands for. */
  repeat?: number;
}

/** What the page shows of an opened model. */
export interface ModelSummary {
  /** Display name. */
  name: string;
  /** Format that read it (`gguf`, `safetensors`, `bundle`, `hf`, ...). */
  format: string;
  /** File name or URL. */
  source: string;
  /** Bytes of the file(s). */
  size: number;
  /** Ids of the models in the file (bundles hold several; the first is shown). */
  models: string[];
  /** Metadata entries. */
  metadata: MetadataRow[];
  /** Architecture. */
  arch: ArchSummary;
  /** Layer diagram, top to bottom. */
  diagram: DiagramBlock[];
  /** Tensors in file order. */
  tensors: TensorRow[];
  /** Bytes per dtype, largest first. */
  dtypes: DtypeBytes[];
  /** Whether the playground can run this model in the page. */
  canChat: boolean;
  /** Why it cannot, when it cannot. */
  chatNote?: string;
}

/** Bytes read so far (HTTP: body bytes received) and reads made. */
export interface Transfer {
  /** Bytes. */
  bytes: number;
  /** Reads or requests. */
  requests: number;
}

/** Sampling settings of the playground. */
export interface SamplingSettings {
  /** Most tokens. */
  maxTokens: number;
  /** Always the most likely token. */
  greedy: boolean;
  /** Temperature. */
  temperature: number;
  /** Top-k (0: off). */
  topK: number;
  /** Top-p (1: off). */
  topP: number;
  /** Repetition penalty (1: off). */
  repetitionPenalty: number;
  /** Seed. */
  seed: number;
  /** Stop at an end-of-generation token. */
  stopAtEos: boolean;
}

/** A chat message. */
export interface ChatTurn {
  /** `system`, `user` or `assistant`. */
  role: string;
  /** Text. */
  content: string;
}

/** Requests from the page; each carries an id its replies repeat. */
export type Request =
  | { id: number; op: "open"; input: OpenInput }
  | { id: number; op: "tensor"; name: string; slice: number }
  | { id: number; op: "preview"; type: PreviewType }
  | { id: number; op: "convert"; type: PreviewType }
  | { id: number; op: "load" }
  | {
    id: number;
    op: "generate";
    mode: "chat" | "complete";
    prompt: string;
    messages: ChatTurn[];
    settings: SamplingSettings;
  }
  | { id: number; op: "template"; messages: ChatTurn[] }
  | { id: number; op: "abort"; target: number };

/** What the tensor view shows. */
export interface TensorDetail {
  /** The tensor. */
  tensor: TensorRow;
  /** Statistics of its values. */
  stats: TensorStats;
  /** The heat map slice. */
  heatmap: Heatmap;
  /** Milliseconds to read and compute. */
  ms: number;
}

/** The loaded model's playground facts. */
export interface LoadedModel {
  /** Name. */
  name: string;
  /** Chat template family, when one fits. */
  templateFamily?: string;
  /** The model's own (Jinja) chat template text, when it ships one. */
  templateSource?: string;
  /** BOS token id. */
  bos?: number;
  /** Vocabulary size. */
  vocab: number;
  /** Milliseconds to load. */
  ms: number;
  /** Kernel backend and threads. */
  kernels: string;
}

/** What generation reports at its end. */
export interface GenerationDone {
  /** Why it ended. */
  finishReason: string;
  /** Prompt tokens. */
  promptTokens: number;
  /** Generated tokens. */
  tokens: number;
  /** Generated ids. */
  ids: number[];
  /** The whole generated text. */
  text: string;
  /** Prefill milliseconds. */
  prefillMs: number;
  /** Decode milliseconds. */
  decodeMs: number;
}

/** Replies and events from the worker. */
export type Reply =
  | {
    id: number;
    kind: "progress";
    phase: string;
    transfer: Transfer;
    done?: number;
    total?: number;
  }
  | { id: number; kind: "error"; error: string }
  | {
    id: number;
    kind: "opened";
    summary: ModelSummary;
    transfer: Transfer;
    ms: number;
  }
  | { id: number; kind: "tensor"; detail: TensorDetail; transfer: Transfer }
  | {
    id: number;
    kind: "previewRow";
    row: PreviewRow;
    done: number;
    total: number;
  }
  | { id: number; kind: "preview"; preview: Preview; ms: number }
  | { id: number; kind: "converted"; fileName: string; bytes: Uint8Array }
  | { id: number; kind: "loaded"; model: LoadedModel }
  | { id: number; kind: "token"; text: string; tokenId: number; index: number }
  | { id: number; kind: "generated"; done: GenerationDone }
  | { id: number; kind: "template"; text: string }
  | { id: number; kind: "ready"; kernels: string };
