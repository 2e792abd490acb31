// `wisp-agent/ai-sdk`: the on-device model as a Vercel AI SDK language model (LanguageModelV4, `ai` 7).
// Typed structurally, so that this package does not depend on `@ai-sdk/provider`: the object fits
// wherever `ai` takes a `LanguageModel`.
import type { Model, WorkerModel } from "./index.js";

export interface WispLanguageModel {
  readonly specificationVersion: "v4";
  readonly provider: "wisp";
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]>;
  doGenerate(options: any): PromiseLike<any>;
  doStream(options: any): PromiseLike<any>;
}

/** A language model for `generateText`, `streamText`, `generateObject` over a loaded model. */
export function wisp(model: Model | WorkerModel, options?: { modelId?: string }): WispLanguageModel;
