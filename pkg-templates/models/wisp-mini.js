// wisp-mini, the model that ships inside the package and the default of `createAgent()`. Each file is named
// by its own `new URL(..., import.meta.url)`: bundlers copy (and rename) exactly these, and `files` tells
// the loader where each went.

/** The source of wisp-mini (2.0M parameters, 3.9 MB; trained for the demo's tools), for `Model.load`. */
export const wispMini = {
  bundle: new URL("./wisp-mini/manifest.json", import.meta.url),
  files: {
    "model.safetensors": new URL("./wisp-mini/model.safetensors", import.meta.url),
    "config.json": new URL("./wisp-mini/config.json", import.meta.url),
    "tokenizer.json": new URL("./wisp-mini/tokenizer.json", import.meta.url),
    "chat_template.jinja": new URL("./wisp-mini/chat_template.jinja", import.meta.url),
  },
};
