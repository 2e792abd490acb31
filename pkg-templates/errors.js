/** Errors thrown by this package: `code` is stable and documented in README. */
export class WispError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "WispError";
    this.code = code;
  }
}
