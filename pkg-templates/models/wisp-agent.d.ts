import type { Source } from "../index.js";

/** The base model file wisp-agent's adapter was trained on, as its manifest names it. */
export const WISP_AGENT_BASE: { name: string; sha256: string; size: number };

/**
 * The source of wisp-agent (SmolLM2-135M-Instruct with the package's tool-use adapter): `base` is where the
 * page serves SmolLM2-135M-Instruct.Q4_1.gguf (a URL relative to the page) or its bytes.
 */
export function wispAgent(options: { base: string | URL | Uint8Array | ArrayBuffer }): Source;
