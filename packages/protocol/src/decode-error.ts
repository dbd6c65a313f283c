import type { ErrorCode, ErrorReply, RequestOp } from "./messages.js";

/**
 * A line the codec refused. The decoders return these in place of a frame (they never throw), so
 * the server can answer with an `E` line and go on with the next line. `op`, `key` and `id` are the
 * bad line's own as far as they could be parsed and were valid (`?`, `-` and absent otherwise), so
 * the client can match the `E` reply to its request.
 */
export interface DecodeError {
  readonly kind: "error";
  readonly code: ErrorCode;
  readonly message: string;
  readonly op: RequestOp | "?";
  readonly key: string;
  readonly id?: string;
  /**
   * Set when the refused line was a peer frame (it starts with `!`): a server refuses those on a
   * connection that is not an authenticated peer link without answering their fields.
   */
  readonly peer?: true;
}

export function decodeError(
  code: ErrorCode,
  message: string,
  op: RequestOp | "?" = "?",
  key = "-",
  id?: string,
): DecodeError {
  return id === undefined
    ? { kind: "error", code, message, op, key }
    : { kind: "error", code, message, op, key, id };
}

export function isDecodeError(value: object): value is DecodeError {
  return "kind" in value && value.kind === "error";
}

/** The `E` reply a server sends for a line it could not decode. */
export function toErrorReply(error: DecodeError): ErrorReply {
  const { code, message, op, key, id } = error;
  return id === undefined ? { kind: "E", op, key, code, message } : { kind: "E", op, key, code, message, id };
}

/** Quotes a piece of a bad line for an error message: short, and with control characters escaped. */
export function quote(text: string): string {
  return JSON.stringify(text.length > 24 ? `${text.slice(0, 24)}…` : text);
}
