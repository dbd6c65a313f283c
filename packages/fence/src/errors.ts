/**
 * Every error this package throws. One class per distinct payload (StaleTokenError carries tokens), a
 * stable `code` on all of them, and a literal `name` so logs survive minification. README.md documents
 * every code in FENCE_ERROR_CODES; a test keeps the two in step.
 */

/** Each code with the HTTP status a framework adapter should answer it with. */
const STATUS_BY_CODE = {
  /** A token was not a bigint in [0, 2^64-1] nor the canonical decimal string of one. */
  FENCE_BAD_TOKEN: 400,
  /** An HTTP request to a fenced route carried no `Fencing-Token` header. */
  FENCE_MISSING_TOKEN: 400,
  /** The presented token is lower than the highest token the resource has accepted. */
  FENCE_STALE_TOKEN: 409,
  /** The resource name is empty, too long or contains a NUL character. */
  FENCE_BAD_RESOURCE: 500,
  /** A Postgres table or column name is not a plain identifier. */
  FENCE_BAD_IDENTIFIER: 500,
  /** fenceRow(): no row matches the key, so there is nothing to fence. */
  FENCE_ROW_MISSING: 404,
  /** Redis: the batched write was refused before anything was applied (command, arity, key type). */
  FENCE_BAD_WRITE: 500,
  /**
   * The write failed inside the store without throwing to fence(). Postgres: it caught a failed
   * statement, so COMMIT rolled back (nothing written). Redis: a command failed while the script ran;
   * earlier commands stay. The token did not advance in either case.
   */
  FENCE_WRITE_FAILED: 500,
  /** Fastify: the plugin is already registered in this encapsulation context or a parent. */
  FENCE_PLUGIN_REGISTERED: 500,
  /** An adapter or plugin was given unusable options. */
  FENCE_BAD_OPTIONS: 500,
  /**
   * A programmer error in a call: a store that is not a FenceStore, a write that is not a function, a
   * database handle without query(), no lock.
   */
  FENCE_BAD_ARGUMENT: 500,
} as const;

export type FenceErrorCode = keyof typeof STATUS_BY_CODE;

/** Every code this package can throw, for documentation checks and exhaustive handling. */
export const FENCE_ERROR_CODES = Object.keys(STATUS_BY_CODE) as readonly FenceErrorCode[];

export class FenceError extends Error {
  override readonly name: "FenceError" | "StaleTokenError" = "FenceError";
  readonly code: FenceErrorCode;
  /** A hint for HTTP frameworks (Fastify's default error handler reads it). */
  readonly statusCode: number;

  constructor(code: FenceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.statusCode = STATUS_BY_CODE[code];
  }
}

/**
 * The write was refused: `presentedToken` is lower than `currentToken`, the highest token `resource` has
 * accepted. Nothing was written. The holder's lock was lost (lease expired, a newer holder exists); it
 * must not retry with the same token.
 */
export class StaleTokenError extends FenceError {
  override readonly name = "StaleTokenError";
  readonly resource: string;
  readonly presentedToken: bigint;
  readonly currentToken: bigint;

  constructor(resource: string, presentedToken: bigint, currentToken: bigint) {
    super(
      "FENCE_STALE_TOKEN",
      `stale fencing token for ${JSON.stringify(resource)}: presented ${presentedToken}, ` +
        `the resource already accepted ${currentToken}`,
    );
    this.resource = resource;
    this.presentedToken = presentedToken;
    this.currentToken = currentToken;
  }
}
