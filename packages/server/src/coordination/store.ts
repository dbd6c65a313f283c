/**
 * What lockd keeps in a coordination store (etcd, PostgreSQL, or memory for the simulator and unit
 * tests) when it runs with `--coordinator`: docs/consistency.md ("With a coordinator").
 *
 * - **One global epoch counter.** Every ownership change takes its epoch from it, so tokens are
 *   unique and increasing across the whole deployment with no clock assumption.
 * - **One ownership lease per cluster.** A node is the cluster's active only while it holds it, and
 *   grants only while the lease is valid by its own monotonic clock (`leaseValidUntil`).
 * - **Versioned documents with a watch** (the slot map of several clusters).
 *
 * The store is never on the data path: lockd calls it on ownership changes and lease renewals only.
 * Every call either settles within the backend's call timeout or rejects with a
 * `CoordinatorUnavailableError`; a call that timed out may still have taken effect in the store
 * (each operation below says what a retry then does).
 */
export interface CoordinationStore {
  /** What operators see (logs, /status): the backend and where it is, never a credential. */
  readonly description: string;

  /**
   * Sets the counter to max(counter, `atLeast`) + `count` (default 1), atomically (compare-and-set),
   * and returns the new value: the `count` epochs up to it are the caller's (a promotion takes its
   * epoch and a spare in one call). A call whose answer was lost took numbers nobody uses; a retry
   * takes the next.
   */
  takeEpoch(atLeast: bigint, count?: number): Promise<bigint>;

  /** The counter's value (0 if no epoch was ever taken). */
  readEpoch(): Promise<bigint>;

  /**
   * Takes `cluster`'s ownership lease for `holder` for `ttlMs`, if nobody holds it or its holder's
   * lease has expired by the store's clock. If `holder` itself holds it (an earlier acquire whose
   * answer was lost, or one that arrives late), that same lease (same `handle`) is extended and
   * returned: a late duplicate must never replace the lease its holder renews. `holder` names one
   * process incarnation (an address and a random id), never just an address. The store keeps the lease at least `ttlMs`
   * from the moment it handled the call (longer is allowed: etcd rounds up to whole seconds).
   */
  acquireLease(cluster: string, holder: string, ttlMs: number): Promise<LeaseOutcome>;

  /**
   * Extends `lease` by its `ttlMs` from the moment the store handles the call, if it is still held
   * by its holder and has not expired in the store. A lease that expired stays lost even if nobody
   * took it since: the holder must acquire again (and take a new epoch).
   */
  renewLease(lease: OwnershipLease): Promise<LeaseOutcome>;

  /** Gives `lease` up at once (a graceful handoff) if it is still this holder's; idempotent. */
  releaseLease(lease: OwnershipLease): Promise<void>;

  /** Who holds `cluster`'s lease now and for how long by the store's clock; undefined if nobody. */
  readLease(cluster: string): Promise<LeaseInfo | undefined>;

  /** The document `name` and its version, or undefined if it does not exist. */
  readDocument(name: string): Promise<VersionedDocument | undefined>;

  /**
   * Writes `value` to document `name` if its version is `expectedVersion` (0: it must not exist),
   * and returns the new version (always above the old one); undefined if the version differed.
   */
  writeDocument(name: string, value: string, expectedVersion: bigint): Promise<bigint | undefined>;

  /**
   * Calls `onChange` with the document's state after every change (undefined once deleted), in
   * version order, and once at the start with its current state. Returns the stop function.
   */
  watchDocument(name: string, onChange: (document: VersionedDocument | undefined) => void): () => void;

  /** Ends every watch and closes connections; leases stay until they expire or are released. */
  close(): Promise<void>;
}

/** A held ownership lease. `handle` is the backend's own (etcd lease id, row version): opaque. */
export interface OwnershipLease {
  readonly cluster: string;
  readonly holder: string;
  readonly ttlMs: number;
  readonly handle: string;
}

export type LeaseOutcome =
  | { readonly held: true; readonly lease: OwnershipLease }
  /** Someone else holds it (`holder`, if the store said who), or a renewal found it expired. */
  | { readonly held: false; readonly holder: string | undefined };

export interface LeaseInfo {
  readonly holder: string;
  /** How long the lease has left by the store's clock, in ms (0 if it is about to expire). */
  readonly remainingMs: number;
}

export interface VersionedDocument {
  readonly value: string;
  readonly version: bigint;
}

/** The store did not answer in time or could not be reached: the caller retries later. */
export class CoordinatorUnavailableError extends Error {
  readonly code = "COORDINATOR_UNAVAILABLE";
  override readonly name = "CoordinatorUnavailableError";
}
