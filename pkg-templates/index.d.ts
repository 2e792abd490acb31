export type WispErrorCode =
  | "WASM_LOAD"
  | "FETCH_FAILED"
  | "WEBGPU_UNAVAILABLE"
  | "GPU_SHADER_COMPILE"
  | "GPU_VALIDATION"
  | "GPU_OUT_OF_MEMORY"
  | "GPU_DEVICE_LOST"
  | "GPU_INTERNAL"
  | "INVALID_MODEL"
  | "INVALID_INPUT"
  | "SESSION_CLOSED"
  | "INTERNAL";

export class WispError extends Error {
  readonly name: "WispError";
  readonly code: WispErrorCode;
}

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

/** Loads the wasm module; called for you by every other function. */
export function init(options?: { wasmUrl?: string | URL }): Promise<void>;

/** Rejects with code `WEBGPU_UNAVAILABLE`, saying why, when the page has no WebGPU adapter. */
export function adapterInfo(): Promise<AdapterInfo>;

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
