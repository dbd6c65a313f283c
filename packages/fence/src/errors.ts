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
  /** A write's token is lower than the highest token the resource has accepted for a write. */
  FENCE_STALE_TOKEN: 409,
  /** A write's token is lower than a recorded read's: a newer reader has read the resource (fenceRead). */
  FENCE_NEWER_READ: 409,
  /** A read's token is lower than the highest write the resource accepted (fenceRead). */
  FENCE_STALE_READ: 409,
  /**
   * A permit (a lock with a slot) fenced a resource that is not its slot's, or a lock without a slot
   * (or with another slot) fenced a slot's resource: a permit's token guards its slot only.
   */
  FENCE_SLOT_MISMATCH: 400,
  /** A shared (reader's) lock fenced a write: readers overlap, so their tokens cannot order writes. */
  FENCE_SHARED_WRITE: 400,
  /** The resource name is empty, too long or contains a NUL character. */
  FENCE_BAD_RESOURCE: 500,
  /** A Postgres table or column name is not a plain identifier. */
  FENCE_BAD_IDENTIFIER: 500,
  /** fenceRow(): no row matches the key, so there is nothing to fence. */
  FENCE_ROW_MISSING: 404,
  /** Redis: the batched write was refused before anything was applied (command, arity, key type). */
  FENCE_BAD_WRITE: 500,
  /** Redis: a fenced read's batch was refused (not a read command, arity) or failed; nothing recorded. */
  FENCE_BAD_READ: 500,
  /**
   * Redis Cluster: the fence key and the keys a fenced call touches hash to more than one slot, so
   * Redis refused the script before running it (CROSSSLOT). Nothing ran.
   */
  FENCE_CROSS_SLOT: 500,
  /** Postgres: the fence table predates the read rule (no read_token column): run createFenceTable(). */
  FENCE_TABLE_OUTDATED: 500,
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

/** The codes of a stale token: a write below a write or a recorded read, or a read below a write. */
export type StaleTokenCode = "FENCE_STALE_TOKEN" | "FENCE_NEWER_READ" | "FENCE_STALE_READ";

/**
 * A token was refused as stale, and nothing was written (or read). `presentedToken` is lower than
 * `currentToken`, the mark of `resource` that refused it (`refusedBy`): the highest accepted write, or
 * (FENCE_NEWER_READ) the highest recorded read. The holder's grant has ended (lease expired, a newer
 * holder exists); it must not retry with the same token.
 *
 * - FENCE_STALE_TOKEN: a write, below the highest write.
 * - FENCE_NEWER_READ: a write, not below the highest write but below a read recorded since.
 * - FENCE_STALE_READ: a read (fenceRead), below the highest write.
 */
export class StaleTokenError extends FenceError {
  override readonly name = "StaleTokenError";
  declare readonly code: StaleTokenCode;
  readonly resource: string;
  readonly presentedToken: bigint;
  readonly currentToken: bigint;
  /** Which mark refused the token: the highest accepted write, or the highest recorded read. */
  readonly refusedBy: "write" | "read";

  constructor(
    resource: string,
    presentedToken: bigint,
    currentToken: bigint,
    code: StaleTokenCode = "FENCE_STALE_TOKEN",
  ) {
    super(code, staleMessage(code, JSON.stringify(resource), presentedToken, currentToken));
    this.resource = resource;
    this.presentedToken = presentedToken;
    this.currentToken = currentToken;
    this.refusedBy = code === "FENCE_NEWER_READ" ? "read" : "write";
  }
}

function staleMessage(code: StaleTokenCode, resource: string, presented: bigint, current: bigint): string {
  switch (code) {
    case "FENCE_STALE_TOKEN":
      return `stale fencing token for ${resource}: presented ${presented}, the resource already accepted ${current}`;
    case "FENCE_NEWER_READ":
      return `stale fencing token for ${resource}: presented ${presented}, a newer reader (${current}) has read the resource`;
    case "FENCE_STALE_READ":
      return `stale fencing token for a read of ${resource}: presented ${presented}, the resource already accepted a write with ${current}`;
  }
}
