import type { Source } from "../index.js";

/** The source of wisp-mini (2.0M parameters, 3.9 MB; trained for the demo's tools), for `Model.load`. */
export const wispMini: Source;
