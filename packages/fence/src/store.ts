/**
 * The one contract every adapter implements (memory, Postgres, Redis), in the spirit of
 * fastify-rate-limit's LocalStore/RedisStore: fence() and the Fastify plugin only ever talk to this.
 */

/**
 * The caller's write. It receives the adapter's transaction handle (`Tx`): the pg client inside the
 * open transaction, a Redis command batch, or a small context for the memory store.
 */
export type FenceWrite<Tx, T> = (tx: Tx) => T;

export interface FenceStore<Tx> {
  /**
   * Atomically: read the highest token `resource` has accepted; if `token` is lower, throw
   * StaleTokenError and apply nothing of `write`; otherwise apply `write(tx)` and record `token` as the
   * highest accepted. `write` is not called for a token that is already stale. (Transactional stores
   * check under a lock before calling it. The Redis store reads the token first, then calls `write` to
   * collect its command batch, and its script checks again: a token that turns stale between the two
   * gets `write` called and its batch discarded.) The check, the advance and the write take effect
   * together or not at all, and concurrent calls for one resource behave as if they ran one after
   * another (a stale writer that races a newer one waits for it, then fails).
   *
   * If `write` throws, its error is rethrown unchanged and the token is not advanced.
   *
   * A store must not trust its inputs: it can be called without fence(), from plain JavaScript, with
   * any value. Run checkFenceInput(resource, token, write) first, as fence() does, and use the token it
   * returns.
   */
  fence<T>(resource: string, token: bigint, write: FenceWrite<Tx, T>): Promise<Awaited<T>>;

  /**
   * The highest token `resource` has accepted, or undefined if it never accepted one. Refuses a bad
   * resource name (assertResource) like fence() does.
   */
  current(resource: string): Promise<bigint | undefined>;
}

export interface FenceReadOptions {
  /**
   * Record the read's token on the resource, so that a write with an older token is refused from then
   * on (FENCE_NEWER_READ). Default false: the read is checked, not recorded.
   */
  record?: boolean;
}

/**
 * A store that also implements the read rule (rule.ts), for resources guarded by shared/exclusive
 * locks: readers present their shared grant's token, writers their exclusive grant's. Its fence()
 * then also refuses a write below the highest recorded read (FENCE_NEWER_READ); without reads
 * recorded, fence() is exactly the exclusive rule.
 */
export interface ReadFenceStore<Tx, ReadTx = Tx> extends FenceStore<Tx> {
  /**
   * Atomically: if `token` is lower than the highest write `resource` accepted, throw StaleTokenError
   * (FENCE_STALE_READ) without calling `read`; otherwise run `read(tx)` with no write to the resource
   * able to take effect while it runs, and, with `record`, raise the resource's read mark to `token`.
   * Returns what `read` returns. If `read` throws, its error is rethrown and nothing is recorded.
   * Run checkFenceInput(resource, token, read) first, as fence() does.
   */
  fenceRead<T>(
    resource: string,
    token: bigint,
    read: FenceWrite<ReadTx, T>,
    options?: FenceReadOptions,
  ): Promise<Awaited<T>>;

  /** The highest read recorded on `resource` since its last accepted write, or undefined. */
  currentRead(resource: string): Promise<bigint | undefined>;
}

/** The transaction handle type of a store, for helpers generic over stores. */
export type FenceTx<S> = S extends FenceStore<infer Tx> ? Tx : never;

/** The handle a store's fenceRead() gives the read. */
export type FenceReadTx<S> = S extends ReadFenceStore<unknown, infer ReadTx> ? ReadTx : never;
