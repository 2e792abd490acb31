export type WispErrorCode =
  | "WASM_LOAD"
  | "FETCH_FAILED"
  | "FETCH_TRUNCATED"
  | "HASH_MISMATCH"
  | "INVALID_MANIFEST"
  | "INVALID_WEIGHTS"
  | "UNSUPPORTED_WEIGHTS"
  | "INVALID_ADAPTER"
  | "CONTEXT_OVERFLOW"
  | "CONTEXT_POLICY"
  | "MODEL_TOO_LARGE"
  | "BUSY"
  | "INVALID_REQUEST"
  | "WORKER_FAILED"
  | "INVALID_TOOL"
  | "DUPLICATE_TOOL"
  | "UNKNOWN_TOOL"
  | "INVALID_TOOL_ARGUMENTS"
  | "TOOL_RESULT_NOT_JSON"
  | "ALL_TOKENS_MASKED"
  | "TOOL_GRAMMAR"
  | "RESPONSE_FORMAT"
  | "WEBGPU_UNAVAILABLE"
  | "GPU_SHADER_COMPILE"
  | "GPU_VALIDATION"
  | "GPU_OUT_OF_MEMORY"
  | "GPU_DEVICE_LOST"
  | "GPU_INTERNAL"
  | "INVALID_MODEL"
  | "INVALID_INPUT"
  | "SESSION_CLOSED"
  | "WASM_CRASHED"
  | "APPROVAL_FAILED"
  | "INTERNAL";

export class WispError extends Error {
  readonly name: "WispError";
  readonly code: WispErrorCode;
}

/** Every code a `WispError` can carry (README, "Error codes", says what each means). */
export const ERROR_CODES: readonly WispErrorCode[];

export interface AdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A software or fallback adapter (e.g. SwiftShader): correct, but slow. */
  isFallbackAdapter: boolean;
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
}

export interface TensorSpec {
  name: string;
  dims: number[];
}

export interface Tensor {
  dims: number[];
  data: Float32Array;
}

/**
 * Loads the wasm module; called for you by every other function. `wasmUrl`: where `wisp_core_bg.wasm`
 * is served, with `wisp_core_relaxed_bg.wasm` next to it. `relaxedSimd: false`: the plain SIMD build even
 * where the engine has relaxed SIMD (results identical on every CPU; the relaxed build's fused
 * multiply-adds can differ in the last bits between CPUs, and without them prompts took 7-17% more time here).
 */
export function init(options?: {
  /** In Node also a file path (relative to the working directory) or a `file:` URL. */
  wasmUrl?: string | URL;
  /** The bytes of `wisp_core_bg.wasm` (the plain build then runs). */
  wasm?: Uint8Array | ArrayBuffer | ArrayBufferView;
  relaxedSimd?: boolean;
}): Promise<unknown>;

/** Whether this JS engine runs the relaxed-SIMD builds (Chromium does; Node 20, Safari, Firefox do not). */
export const relaxedSimd: boolean;

/** Rejects with code `WEBGPU_UNAVAILABLE`, saying why, when the page has no WebGPU adapter. */
export function adapterInfo(): Promise<AdapterInfo>;

/** The GPU devices Wisp holds and their buffers still alive (for leak checks). */
export function gpuResources(): Promise<{ devices: number; buffers: number; bytes: number }>;

export class GraphSession {
  private constructor();
  /** Compiles an ONNX graph (static shapes, f32) from its bytes or a URL. */
  static create(source: Uint8Array | ArrayBuffer | ArrayBufferView | string | URL): Promise<GraphSession>;
  readonly inputs: TensorSpec[];
  readonly outputs: TensorSpec[];
  readonly adapter: AdapterInfo;
  run(inputs: Record<string, Float32Array | number[]>): Promise<Record<string, Tensor>>;
  /** Destroys the GPU device as a driver reset would: later runs reject with `GPU_DEVICE_LOST`. */
  loseDevice(): void;
  close(): void;
}

/** Forgets every model file kept in the Cache API, the backend measurements and the agents' kept prefixes. */
export function clearModelCache(): Promise<void>;

export interface BundleFile {
  path: string;
  sha256?: string;
  size?: number;
}

/** A bundle's manifest.json (format "wisp-bundle/1"), as documented in README. */
export interface Manifest {
  format: "wisp-bundle/1";
  name: string;
  files: {
    weights: BundleFile;
    config?: BundleFile;
    tokenizer?: BundleFile;
    chat_template?: BundleFile;
    adapters?: Array<BundleFile & { scale?: number }>;
  };
  tool_call_format?: "hermes" | "llama3_json";
  stop: string[];
  context_length?: number;
}

export function parseManifest(text: string): Promise<Manifest>;

export interface ModelConfig {
  family: "llama" | "qwen2" | "qwen3";
  hiddenSize: number;
  intermediateSize: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  numLayers: number;
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  tieWordEmbeddings: boolean;
  attentionBias: boolean;
  qkNorm: boolean;
  ropeStyle: "halves" | "interleaved";
  maxPositionEmbeddings: number;
}

export type LoadProgress =
  | { phase: "download"; file: string; loaded: number; total: number }
  | { phase: "build" }
  | { phase: "ready" };

type Bytes = Uint8Array | ArrayBuffer | ArrayBufferView;
export type Source =
  | string
  | URL
  | Bytes
  /** `files`: where some of the manifest's files are served instead of beside it, by their manifest path. */
  | { bundle: string | URL; files?: Record<string, string | URL | Bytes> }
  | { weights: string | URL | Bytes; tokenizer?: string | URL | Bytes; config?: string | object; chatTemplate?: string };

/** An OpenAI-shaped message, as `agent.messages` gives them and `renderChat` takes them. */
export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  /** Null for an assistant message that only calls tools. */
  content: string | null;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  /** A tool message's call. */
  tool_call_id?: string;
  /** A tool message's tool. */
  name?: string;
}

export interface GenerateOptions {
  /** Default 256. */
  maxTokens?: number;
  /** Default 0 (greedy). */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repetitionPenalty?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Makes sampling reproducible. */
  seed?: number;
  /** Strings that end the answer (never shown); the bundle's stop strings always apply. */
  stop?: string[];
  /**
   * Speculation without a draft model: up to this many tokens copied from the context (prompt lookup)
   * are checked in the same pass as each new token. The output is exactly the same; only the number of
   * passes changes. Default: the backend's choice (WebGPU: chunk length - 1; CPU: 0, off, since each row costs arithmetic there); 0 turns it off.
   */
  draftTokens?: number;
  /**
   * The answer is one JSON value valid for the schema (constrained decoding), as OpenAI's
   * `response_format`; `{ type: "json_object" }` asks for any JSON object. A schema that is not valid or
   * that the grammar compiler cannot handle rejects with `RESPONSE_FORMAT` before anything runs. In an
   * agent run, a message is then tool calls or the JSON answer.
   */
  responseFormat?: ResponseFormat;
  /** Stops between tokens (also while waiting for the model); the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Calls on one model take turns in arrival order; `false` rejects with BUSY at once instead of waiting
   * while the model serves another call.
   */
  wait?: boolean;
  onText?: (delta: string, step: { text: string; token: number }) => void;
}

export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name?: string; description?: string; schema: object; strict?: boolean } };

export interface GenerateResult {
  text: string;
  tokens: number[];
  finishReason: "stop" | "length" | "eos_token" | "cancelled";
  usage: {
    promptTokens: number;
    /** Prompt tokens reused from the cache (prefix reuse), not run again. */
    cachedTokens: number;
    completionTokens: number;
    /** Draft tokens checked, and how many of them were kept. */
    draftTokens: number;
    acceptedDraftTokens: number;
    /** Completion tokens a constraint forced (appended without sampling). */
    forcedTokens: number;
    /** Forward passes of the model (the prefill counts as one). */
    passes: number;
    ttftMs: number | null;
    totalMs: number;
    tokensPerSecond: number | null;
  };
}

export type GenerateInput = string | ArrayLike<number> | { messages: ChatMessage[]; tools?: object[] };

/** Where a model runs and why; on the CPU, how many threads its products use. */
export interface BackendInfo {
  kind: "webgpu" | "cpu";
  reason: string;
  threads?: number;
  /** CPU: the kernels' SIMD, "relaxed" (fused multiply-adds) or "simd128". */
  simd?: "relaxed" | "simd128";
  /**
   * What `backend: "auto"` measured on this load (both backends timed on a hardware adapter); the
   * package keeps it (with `cache`), and later loads of this model on this device build only `kind`.
   */
  measured?: { key: string; kind: "webgpu" | "cpu"; figures: string };
}

export class Model {
  private constructor();
  /** False once a wasm trap took the model's instance down: its calls then reject with WASM_CRASHED. */
  readonly alive: boolean;
  generate(input: GenerateInput, options?: GenerateOptions): Promise<GenerateResult>;
  stream(input: GenerateInput, options?: GenerateOptions): AsyncIterable<{ text: string; token: number }> & {
    result: Promise<GenerateResult>;
  };
  /**
   * A GGUF URL or bytes; `{ bundle: manifestUrl }`; or `{ weights, tokenizer, config, chatTemplate }`.
   * Downloads are cached (Cache API) and checked against the manifest's sha256.
   */
  static load(
    source: Source,
    options?: {
      onProgress?: (event: LoadProgress) => void;
      signal?: AbortSignal;
      /** Keep downloads in the Cache API, and (a bundle's model) its agents' system + tools prefixes (default true). */
      cache?: boolean;
      /** Tokens per GPU call (even, >= 2; default 4). */
      chunkLen?: number;
      /** Cache size in tokens (default 512). */
      contextLen?: number;
      /** Where the model runs (default "auto": on a hardware adapter the backend measured faster over one decode step, the CPU otherwise). */
      backend?: "auto" | "webgpu" | "cpu";
      /**
       * The CPU backend's threads (default `navigator.hardwareConcurrency`). Used only in a worker
       * (worker mode, `WorkerModel`) of a cross-origin isolated page (SharedArrayBuffer); on the page's
       * main thread, elsewhere, or with 1, the model runs on one thread. The threads start once per
       * worker, at the size of its first threaded load.
       */
      threads?: number;
      /**
       * LoRA adapters in llama.cpp's GGUF format, applied on top of the weights (and after a bundle's
       * own `files.adapters`): `scale` is llama.cpp's (`--lora-scaled`), default 1.
       */
      adapters?: Array<{ url: string | URL; scale?: number } | { bytes: Uint8Array | ArrayBuffer; scale?: number }>;
      /**
       * Where a bundle's `files.weights` is served when not beside its manifest (a base model kept
       * elsewhere): a URL or the bytes. The manifest's sha256 and size are still checked.
       */
      baseWeights?: string | URL | Uint8Array | ArrayBuffer;
    },
  ): Promise<Model>;
  /** Where the model runs, why, and on the CPU how many threads. */
  readonly backend: BackendInfo;
  readonly manifest?: Manifest;
  readonly config: ModelConfig;
  /** Tokens in the cache: the position of the next token. */
  readonly length: number;
  readonly contextLength: number;
  encode(text: string): Uint32Array;
  decode(ids: ArrayLike<number>): string;
  /** The chat template's prompt; `tools` go into the system message, Hermes style, when the template has no tools section. */
  renderChat(messages: ChatMessage[], options?: { tools?: object[]; addGenerationPrompt?: boolean }): string;
  /** Appends `ids` to the cache; resolves to `ids.length` rows of `config.vocabSize` logits. */
  forward(ids: ArrayLike<number>): Promise<Float32Array>;
  /** Drops cached tokens from `position` on. */
  seek(position: number): void;
  /** Where the time went since the load or `resetProfile()`: milliseconds and calls per stage. */
  profile(): Profile;
  resetProfile(): void;
  /**
   * Destroys the GPU device as a driver reset would: later calls reject with `GPU_DEVICE_LOST` (close the
   * model and load it again). False on the CPU backend.
   */
  loseDevice(): boolean;
  close(): void;
}

export interface Profile {
  /**
   * WebGPU: inputs, wonnx_run (upload, dispatch, GPU and readback of every output: one call in wonnx),
   * cache_write, logits_copy. CPU: embed, norm, matmul (SwiGLU included), rope_cache, attention, head. Both:
   * sampling, detokenize_stop, draft_lookup.
   */
  stages: Record<string, { ms: number; calls: number }>;
  tokensRun: number;
  tokensSampled: number;
}

/**
 * Worker mode: the same model API with the model in a dedicated Web Worker (the page never janks).
 * Every method returns a promise; bytes given to `load` are transferred (detached on the page).
 */
export class WorkerModel {
  private constructor();
  static load(
    source: Source,
    options?: Parameters<typeof Model.load>[1] & { worker?: Worker },
  ): Promise<WorkerModel>;
  readonly config: ModelConfig;
  readonly contextLength: number;
  readonly manifest?: Manifest;
  /** Where the model runs in the worker, and why. */
  readonly backend: BackendInfo;
  length(): Promise<number>;
  encode(text: string): Promise<Uint32Array>;
  decode(ids: ArrayLike<number>): Promise<string>;
  renderChat(messages: ChatMessage[], options?: { tools?: object[]; addGenerationPrompt?: boolean }): Promise<string>;
  forward(ids: ArrayLike<number>): Promise<Float32Array>;
  seek(position: number): Promise<void>;
  profile(): Promise<Profile>;
  resetProfile(): Promise<void>;
  generate(input: GenerateInput, options?: GenerateOptions): Promise<GenerateResult>;
  stream(input: GenerateInput, options?: GenerateOptions): AsyncIterable<{ text: string; token: number }> & {
    result: Promise<GenerateResult>;
  };
  close(): void;
}

export interface ToolSpec {
  /** `[a-zA-Z0-9_-]{1,64}` */
  name: string;
  description?: string;
  /** A JSON Schema with `"type": "object"`. */
  parameters?: object;
  /** Default 10000; at most 2^31 - 1. */
  timeoutMs?: number;
  /** Ask the `approve` option before each call (a function decides per call, from the arguments). */
  needsApproval?: boolean | ((args: any) => boolean | Promise<boolean>);
}

/** A tool in the shape of WebMCP's `registerTool` (`document.modelContext`). */
export interface ModelContextTool {
  name: string;
  description?: string;
  /** A JSON Schema with `"type": "object"`. */
  inputSchema?: object;
  execute: ToolFunction;
  /** `readOnlyHint: false` means `needsApproval: true` unless `needsApproval` says otherwise. */
  annotations?: { readOnlyHint?: boolean; [hint: string]: unknown };
  timeoutMs?: number;
  needsApproval?: boolean | ((args: any) => boolean | Promise<boolean>);
}

/** What `useModelContext` follows: WebMCP's `ModelContext` (or a polyfill of it). */
export interface ModelContextLike {
  registerTool(tool: ModelContextTool): unknown;
  unregisterTool?(name: string): unknown;
  provideContext?(context: { tools?: ModelContextTool[] }): unknown;
  clearContext?(): unknown;
  getTools?(): ModelContextTool[];
}

/** A call waiting for the page's decision; `approve` returns (or resolves to) whether it may run. */
export interface ToolCallToApprove {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}
export type ApproveFunction = (call: ToolCallToApprove) => boolean | Promise<boolean>;

export type AgentEvent =
  | { type: "step_start"; step: number }
  | { type: "text"; text: string }
  | { type: "tool_call_start"; step: number }
  | { type: "tool_call"; id: string; name: string; arguments: Record<string, unknown> }
  | { type: "tool_result"; id: string; name: string; result: unknown; ms: number }
  | { type: "tool_approval"; id: string; name: string; arguments: Record<string, unknown> }
  | { type: "tool_error"; id: string; name: string | null; error: string; ms?: number; invalid?: boolean; declined?: boolean }
  | { type: "step_end"; step: number; finishReason: string; usage: StepUsage }
  /** The history was cut before `step`'s message (see `ContextPolicy`): what went. */
  | { type: "context_trimmed"; step: number; messages: number; shortened: number; tokens: number; policy: "trim" | "callback" }
  | ({ type: "final" } & AgentResult);

/** One message's tokens: `promptTokens - cachedTokens` ran through the model, the rest was in the cache. */
export interface StepUsage {
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  forcedTokens: number;
}

/** Where the context goes for the next message, in tokens of the model's tokenizer. */
export interface ContextUsage {
  capacity: number;
  systemAndTools: number;
  /** The rest of the prompt: the conversation and the assistant's opener. */
  history: number;
  free: number;
  /** Room kept for the answer: `maxTokens`, at most a quarter of the context. */
  reserve: number;
  /** Whether the prompt leaves `reserve` free (otherwise the policy runs before the next message). */
  fits: boolean;
}

/**
 * What happens when the next prompt would not leave room for the answer: `"trim"` (default) shortens old
 * tool results if that is enough, otherwise drops the oldest whole exchanges after the system message;
 * `"error"` rejects with `CONTEXT_OVERFLOW`; a function returns the messages to keep (the system message
 * first and the current exchange last, unchanged; anything may go or be added between, such as a summary),
 * and what still does not fit is trimmed. It may be async and may use the model.
 */
export type ContextPolicy = "trim" | "error" | ((messages: ChatMessage[], info: ContextUsage) => ChatMessage[] | Promise<ChatMessage[]>);

export interface AgentResult {
  text: string;
  finishReason: "stop" | "length" | "eos_token" | "max_steps";
  steps: number;
  toolCalls: { id: string; name: string; arguments: unknown; result?: unknown; error?: string; ms: number }[];
  /** `forcedTokens`: completion tokens the tool-call grammar forced (appended without sampling). */
  usage: { promptTokens: number; cachedTokens: number; completionTokens: number; forcedTokens: number; totalMs: number };
}

/**
 * Which calls the model may make: `"auto"` (default: text or calls), `"none"`, `"required"` (the message
 * starts with a call), or one tool by name. "required" and a name hold for the run's first message only.
 */
export type ToolChoice = "auto" | "none" | "required" | string | { type: "function"; function: { name: string } };

export interface AgentRunOptions extends Omit<GenerateOptions, "onText"> {
  maxSteps?: number;
  toolChoice?: ToolChoice;
  onEvent?: (event: AgentEvent) => void;
  /** Decides on calls of tools that need approval (this run; default: createAgent's). Without one they are declined. */
  approve?: ApproveFunction;
}

/**
 * An agent: tools are plain functions on the page, the model writes calls and answers. One run at a time:
 * a second `run` while one is in progress rejects with `BUSY` (agents sharing one model take turns). A run
 * that rejects (an error, an abort) or is left early leaves the conversation as it was before it.
 */
export class Agent {
  private constructor();
  tool(spec: ToolSpec, fn: ToolFunction): this;
  tool(tool: ModelContextTool): this;
  /** Registers the tools of a WebMCP model context and follows its changes; returns a function that stops following. */
  useModelContext(context?: ModelContextLike): () => void;
  /** Whether the tool was registered. */
  removeTool(name: string): boolean;
  reset(): void;
  /** What the model sees: the conversation after any trim. */
  readonly messages: ChatMessage[];
  contextUsage(): ContextUsage;
  run(input: string, options?: AgentRunOptions): Promise<AgentResult>;
  stream(input: string, options?: AgentRunOptions): AsyncIterable<AgentEvent> & { result: Promise<AgentResult> };
  /** Frees the agent, and its model when `createAgent` loaded it. */
  close(): void;
}

/**
 * The same in worker mode (`createAgent({ worker: true })` or a `WorkerModel`): the conversation lives in
 * the worker, so `removeTool`, `reset` and `messages` return promises, and a tool whose spec the worker
 * rejects makes the next `run` reject (with its code).
 */
export class WorkerAgent {
  private constructor();
  tool(spec: ToolSpec, fn: ToolFunction): this;
  tool(tool: ModelContextTool): this;
  useModelContext(context?: ModelContextLike): () => void;
  removeTool(name: string): Promise<boolean>;
  reset(): Promise<void>;
  readonly messages: Promise<ChatMessage[]>;
  contextUsage(): Promise<ContextUsage>;
  run(input: string, options?: AgentRunOptions): Promise<AgentResult>;
  stream(input: string, options?: AgentRunOptions): AsyncIterable<AgentEvent> & { result: Promise<AgentResult> };
  close(): void;
}

export type ToolFunction = (args: any, ctx: { signal: AbortSignal; id: string }) => unknown;

export interface AgentOptions {
  /** Default: wisp-mini, which ships inside the package. */
  model?: Model | WorkerModel | Source;
  /** Load the source into a `WorkerModel`: the model and the conversation in a Web Worker, tools on the page. */
  worker?: boolean;
  load?: Parameters<typeof Model.load>[1];
  system?: string;
  /** A history that outgrows the context: `"trim"` (default), `"error"` or a function. */
  contextPolicy?: ContextPolicy;
  /** The most tokens of history (besides the system message and tools) a prompt carries: trimmed to it too. */
  maxHistoryTokens?: number;
  maxSteps?: number;
  toolCallFormat?: "hermes" | "llama3_json";
  /** The most tokens of one tool result the model reads (default: a quarter of the context). */
  maxResultTokens?: number;
  /** A limit in characters too (none by default). */
  maxResultChars?: number;
  temperature?: number;
  maxTokens?: number;
  /** The runs' default `toolChoice`. */
  toolChoice?: ToolChoice;
  /** The runs' default `responseFormat`: each message is tool calls or the JSON answer. */
  responseFormat?: ResponseFormat;
  /** The runs' default `approve`. */
  approve?: ApproveFunction;
}

export function createAgent(options: AgentOptions & ({ worker: true } | { model: WorkerModel })): Promise<WorkerAgent>;
/** Without `model`, the agent runs wisp-mini, which ships inside the package. */
export function createAgent(options?: AgentOptions & { model?: Model | Source; worker?: false }): Promise<Agent>;

export interface ChatCompletionTool {
  type: "function";
  function: { name: string; description?: string; parameters?: object };
}

export interface ChatCompletionRequest {
  messages: (ChatMessage | { role: ChatMessage["role"]; content: string | { type: "text"; text: string }[] | null; [key: string]: unknown })[];
  tools?: ChatCompletionTool[];
  tool_choice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } };
  stream?: boolean;
  temperature?: number;
  top_p?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  seed?: number;
  stop?: string | string[];
  n?: 1;
  response_format?: ResponseFormat;
  [key: string]: unknown;
}

export interface ChatCompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: 0;
    message: { role: "assistant"; content: string | null; tool_calls?: NonNullable<ChatMessage["tool_calls"]> };
    finish_reason: "stop" | "length" | "tool_calls";
    logprobs: null;
  }[];
  usage: ChatCompletionUsage;
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: 0;
    delta: {
      role?: "assistant";
      content?: string;
      tool_calls?: { index: number; id: string; type: "function"; function: { name: string; arguments: string } }[];
    };
    finish_reason: "stop" | "length" | "tool_calls" | null;
    logprobs: null;
  }[];
  /** On the last chunk. */
  usage?: ChatCompletionUsage;
}

/**
 * OpenAI's `chat.completions` over a loaded model (page or worker mode): `create({ messages, tools, tool_choice, stream,
 * temperature, top_p, max_tokens, seed, stop, response_format })` returns a `chat.completion` object, or with `stream: true`
 * an async iterable of `chat.completion.chunk` objects (tool calls as `delta.tool_calls`).
 */
export function createChatCompletions(
  model: Model | WorkerModel,
  /** `contextPolicy`: as an agent's; a trim shows in `usage.context_trimmed`. */
  options?: { name?: string; contextPolicy?: ContextPolicy },
): {
  create(params: ChatCompletionRequest & { stream: true }, options?: { signal?: AbortSignal }): Promise<AsyncIterable<ChatCompletionChunk>>;
  create(params: ChatCompletionRequest & { stream?: false }, options?: { signal?: AbortSignal }): Promise<ChatCompletion>;
};

/**
 * A `fetch` for the official `openai` SDK that answers `POST …/chat/completions` with the on-device model:
 * `new OpenAI({ apiKey: "local", baseURL: "http://wisp.local/v1", fetch: openaiFetch(model), dangerouslyAllowBrowser: true })`.
 */
export function openaiFetch(model: Model | WorkerModel, options?: { name?: string; contextPolicy?: ContextPolicy }): typeof fetch;
