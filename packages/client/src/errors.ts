import type { ErrorCode } from "@lock/protocol";

/**
 * Every error @lock/client rejects with. One class per kind, each with a literal `name` (logs survive
 * minification) and a stable `code` to match on; the underlying error, if any, is the `cause`.
 * README.md documents every code in CLIENT_ERROR_CODES, and a test keeps the two in step.
 */
export const CLIENT_ERROR_CODES = {
  LOCK_WAIT_TIMEOUT: "the wait for the lock ran out (the server answered T); nothing was granted",
  LOCK_NO_SERVER: "no connection was usable: every configured connection was tried, or none answered in time",
  LOCK_LOST:
    "the lock is no longer held: an extension was refused, or no server confirmed it before the lease ended",
  LOCK_PROTOCOL: "the server sent a reply the client could not parse or match",
  LOCK_AUTH_FAILED: "the server refused the auth token (AUTH_FAILED / NOT_AUTHENTICATED)",
  LOCK_CLIENT_CLOSED: "the client was closed before the call completed, or the call was made after close()",
  LOCK_ABORTED: "the caller's AbortSignal aborted the call",
  LOCK_SERVER_REFUSED: "the server refused the request; `serverCode` holds its error code",
  LOCK_INVALID_ARGUMENT: "a key, duration or option is invalid; nothing was sent",
} as const;

export type ClientErrorCode = keyof typeof CLIENT_ERROR_CODES;

interface ErrorOptions {
  readonly cause?: unknown;
}

/** The base class: `instanceof LockError` catches everything this package rejects with. */
export abstract class LockError extends Error {
  abstract override readonly name: string;
  abstract readonly code: ClientErrorCode;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The server answered `T`: the wait ran out without a grant, so no lock leaked. */
export class LockTimeoutError extends LockError {
  override readonly name = "LockTimeoutError";
  readonly code = "LOCK_WAIT_TIMEOUT";
  readonly key: string;

  constructor(key: string, waitMs: number, options?: ErrorOptions) {
    super(`timed out after waiting ${waitMs} ms for ${JSON.stringify(key)}`, options);
    this.key = key;
  }
}

/** No usable connection: the cause is the last connection error seen, when there was one. */
export class NoServerError extends LockError {
  override readonly name = "NoServerError";
  readonly code = "LOCK_NO_SERVER";
}

/** The lock is gone (lease expired, extension refused, or nothing could confirm it in time). */
export class LockLostError extends LockError {
  override readonly name = "LockLostError";
  readonly code = "LOCK_LOST";
  readonly key: string;
  readonly token: bigint;

  constructor(key: string, token: bigint, reason: string, options?: ErrorOptions) {
    super(`lock ${JSON.stringify(key)} (token ${token}) lost: ${reason}`, options);
    this.key = key;
    this.token = token;
  }
}

/** A reply that does not parse, or answers no outstanding request; the connection is dropped. */
export class ProtocolError extends LockError {
  override readonly name = "ProtocolError";
  readonly code = "LOCK_PROTOCOL";
}

/** The server refused the auth token, or wanted one and none is configured. */
export class AuthError extends LockError {
  override readonly name = "AuthError";
  readonly code = "LOCK_AUTH_FAILED";
}

export class ClientClosedError extends LockError {
  override readonly name = "ClientClosedError";
  readonly code = "LOCK_CLIENT_CLOSED";

  constructor(options?: ErrorOptions) {
    super("the lock client is closed", options);
  }
}

/**
 * The caller's AbortSignal fired; `cause` is the signal's reason. Named `AbortError`, like the DOM
 * error, so code that checks `error.name === "AbortError"` treats it as a cancellation.
 */
export class AbortError extends LockError {
  override readonly name = "AbortError";
  readonly code = "LOCK_ABORTED";

  constructor(what: string, reason: unknown) {
    super(`${what} was aborted`, { cause: reason });
  }
}

/** The server answered `E` with a code that is not the client's to handle (e.g. TOO_MANY_WAITERS). */
export class LockServerError extends LockError {
  override readonly name = "LockServerError";
  readonly code = "LOCK_SERVER_REFUSED";
  readonly serverCode: ErrorCode;

  constructor(serverCode: ErrorCode, message: string, options?: ErrorOptions) {
    super(`server refused: ${serverCode}${message ? ` (${message})` : ""}`, options);
    this.serverCode = serverCode;
  }
}

/** A bad key, duration or option, caught before anything was sent. */
export class InvalidArgumentError extends LockError {
  override readonly name = "InvalidArgumentError";
  readonly code = "LOCK_INVALID_ARGUMENT";
}

/** The error an `E` reply stands for, when the client does not handle its code itself. */
export function errorFromReply(reply: { readonly code: ErrorCode; readonly message: string }): LockError {
  if (reply.code === "AUTH_FAILED" || reply.code === "NOT_AUTHENTICATED" || reply.code === "AUTH_TIMEOUT") {
    return new AuthError(`the server refused the request: ${reply.code} (${reply.message})`);
  }
  return new LockServerError(reply.code, reply.message);
}
