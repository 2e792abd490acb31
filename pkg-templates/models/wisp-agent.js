// wisp-agent: SmolLM2-135M-Instruct with our tool-use LoRA adapter. The adapter (9.8 MB) and template ship
// in the package, each named by its own `new URL(..., import.meta.url)` so that bundlers copy them; the
// 98 MB base is served by the page (tools/fetch-smollm2.sh gets it), and checked against the manifest's
// sha256 wherever it comes from.
import { WispError } from "../errors.js";

/** The base model file wisp-agent's adapter was trained on, as its manifest names it. */
export const WISP_AGENT_BASE = {
  name: "SmolLM2-135M-Instruct.Q4_1.gguf",
  sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
  size: 98362432,
};

/**
 * The source of wisp-agent for `Model.load` and `createAgent`: `base` is where the page serves
 * SmolLM2-135M-Instruct.Q4_1.gguf (a URL, relative to the page) or its bytes.
 */
export function wispAgent({ base } = {}) {
  if (base === undefined || base === null) {
    throw new WispError(
      "INVALID_REQUEST",
      `wispAgent needs base: the URL or bytes of ${WISP_AGENT_BASE.name} (sha256 ${WISP_AGENT_BASE.sha256}), which the package does not ship`,
    );
  }
  return {
    bundle: new URL("./wisp-agent/manifest.json", import.meta.url),
    files: {
      [WISP_AGENT_BASE.name]: base,
      "adapter.gguf": new URL("./wisp-agent/adapter.gguf", import.meta.url),
      "chat_template.jinja": new URL("./wisp-agent/chat_template.jinja", import.meta.url),
    },
  };
}
