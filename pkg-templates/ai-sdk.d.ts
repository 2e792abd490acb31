// `import { wisp } from "wisp-agent/ai-sdk"`: a Vercel AI SDK language model over a loaded model. The
// types come from `@ai-sdk/provider` (a dependency of `ai`; an optional peer dependency of this package).
import type { LanguageModelV4 } from "@ai-sdk/provider";
import type { Model, WorkerModel } from "./index.js";

export interface WispProviderOptions {
  /** The model's id in the AI SDK's results and telemetry; default: the bundle's name. */
  modelId?: string;
  /** The longest answer, in tokens, when a call sets no `maxOutputTokens`; default 256. */
  maxOutputTokens?: number;
}

/**
 * A LanguageModelV4 for `generateText`, `streamText`, `generateObject` and `Output.object` of `ai` (major 7),
 * running on `model`: tools (calls constrained by their schemas), `toolChoice`, multi-step calls, streaming,
 * `abortSignal`, usage and JSON output (`responseFormat` json, constrained by its schema). Bad input rejects
 * with a WispError (INVALID_REQUEST, INVALID_TOOL, RESPONSE_FORMAT); ignored settings come back as warnings.
 */
export function wisp(model: Model | WorkerModel, options?: WispProviderOptions): LanguageModelV4;
