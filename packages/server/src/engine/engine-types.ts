import type { LockMode, ModeConflict } from "./lock-mode.js";

/** The lock engine's contract types: its events, journal, limits, inputs and outcomes (engine.ts). */
export interface EngineEvents<P> {
  /** A queued acquire was granted: the key was released or its lease expired. */
  granted(
    payload: P,
    key: string,
    token: bigint,
    id: string | undefined,
    waitedMs: number,
    slot: number | undefined,
  ): void;
  /** A queued acquire's wait ran out; it was removed and will never be granted. */
  timedOut(payload: P, key: string, id: string | undefined): void;
}

/** Every change to the holder table, in order: what the cluster replicates to standbys. */
export interface EngineJournal {
  /** `deadline` is the lease's end on the engine's clock (the replicator folds with it). */
  /** `mode` and `slot` only for a shared holder or a permit (absent: an exclusive holder). */
  grant(
    key: string,
    token: bigint,
    leaseMs: number,
    id: string | undefined,
    deadline: number,
    mode?: LockMode,
    slot?: number,
  ): void;
  /** `shared`: the holder freed was a shared holder or a permit (its key may keep others). */
  free(key: string, token: bigint, cause: "release" | "expiry", shared?: boolean): void;
  /**
   * `id` is the holder's (unchanged by an extension): a standby that is behind is sent whole states.
   * `shared`: the holder is a shared holder or a permit (such a key is sent whole, all its holders).
   */
  extend(
    key: string,
    token: bigint,
    leaseMs: number,
    id: string | undefined,
    deadline: number,
    shared?: boolean,
  ): void;
}

/** See `LockEngine.ownership`. */
export type Ownership = "holder" | "not-owner" | "stale";

export interface EngineLimits {
  /** Queued acquires per key; more get `TOO_MANY_WAITERS`. */
  readonly maxWaitersPerKey: number;
  /** Keys held at once; an acquire of another key gets `TOO_MANY_KEYS`. */
  readonly maxKeys: number;
  /** Shared holders of one key at once; more shared acquires wait their turn. */
  readonly maxSharedHolders: number;
  /** Keys one bundle may name (after de-duplication); more get `TOO_MANY_BUNDLE_KEYS`. */
  readonly maxBundleKeys: number;
}

export const DEFAULT_ENGINE_LIMITS: EngineLimits = {
  maxWaitersPerKey: 10_000,
  maxKeys: 5_000_000,
  maxSharedHolders: 10_000,
  maxBundleKeys: 32,
};

export interface AcquireInput<P> {
  readonly key: string;
  readonly leaseMs: number;
  /** 0 waits forever. */
  readonly waitMs: number;
  readonly id?: string | undefined;
  readonly payload: P;
  /** Exclusive when absent. */
  readonly mode?: LockMode | undefined;
}

/**
 * `replayed`: a retry of the acquire that already holds the key (same id): same token. `slot`: a
 * permit's slot, 0..limit−1 (undefined for exclusive and shared holders).
 */
export interface GrantedOutcome {
  readonly status: "granted";
  readonly token: bigint;
  readonly replayed: boolean;
  readonly slot: number | undefined;
}

/** The request disagrees with the key's kind or limit (`ModeConflict`), or a limit was reached. */
export type Rejected<C extends string> =
  | ({ readonly status: "rejected" } & ModeConflict)
  | { readonly status: "rejected"; readonly code: C };

export type AcquireOutcome<P> =
  | GrantedOutcome
  /** Queued. `displaced`: the payload of an earlier try of the same id, whose place this one took. */
  | { readonly status: "queued"; readonly displaced: P | undefined }
  | Rejected<"TOO_MANY_WAITERS" | "TOO_MANY_KEYS">;

export type TryAcquireOutcome = GrantedOutcome | { readonly status: "busy" } | Rejected<"TOO_MANY_KEYS">;

/** A bundle acquire (bundle.ts): every key at once, one token and one lease, exclusive. */
export interface BundleInput<P> {
  readonly keys: readonly string[];
  readonly leaseMs: number;
  /** 0 waits forever. */
  readonly waitMs: number;
  /** Required: a bundle is released, extended and cancelled by its id as much as by its token. */
  readonly id: string;
  readonly payload: P;
}

/** `keys`: the bundle's keys as the engine holds them (sorted, de-duplicated). */
export type BundleOutcome<P> =
  | (GrantedOutcome & { readonly keys: readonly string[] })
  | { readonly status: "queued"; readonly displaced: P | undefined; readonly keys: readonly string[] }
  | Rejected<"TOO_MANY_WAITERS" | "TOO_MANY_KEYS" | "TOO_MANY_BUNDLE_KEYS">;

/** One held key as `listHeld` returns it. */
export interface HeldKey {
  readonly key: string;
  /** The newest grant's token (an exclusive key's only one). */
  readonly token: bigint;
  /** The longest lease left among its holders. */
  readonly remainingMs: number;
  readonly waiters: number;
  /** The holding session's label (lockd: the connection's remote address); undefined if replicated or several. */
  readonly holder: string | undefined;
  readonly mode: "exclusive" | "shared" | "permit";
  /** A semaphore's number of permits; undefined for a lock. */
  readonly limit: number | undefined;
  /** Every holder, oldest grant first. */
  readonly holders: readonly HeldGrant[];
}

/** One holder of a listed key. */
export interface HeldGrant {
  readonly token: bigint;
  readonly remainingMs: number;
  /** As `HeldKey.holder`. */
  readonly holder: string | undefined;
  /** A permit's slot; undefined otherwise. */
  readonly slot: number | undefined;
}

export interface ListHeldInput {
  /** Only keys that start with this. */
  readonly prefix: string;
  /** Only keys after this one (the last key of the previous page). */
  readonly after: string | undefined;
  readonly limit: number;
}

export interface EngineCounters {
  grants: number;
  handoffs: number;
  releases: number;
  staleReleases: number;
  extensions: number;
  expiries: number;
  timeouts: number;
  cancels: number;
}

/** How a holder holds its key, as `EngineMeter` is told. */
export type HolderKind = "exclusive" | "shared" | "permit";

/**
 * Sees every holder and queued acquire come and go, for contention metrics (lockd's key families):
 * called synchronously inside an engine step, after the change, so it must be cheap, must not throw
 * and must not call back into the engine. Counts kept from `held`/`freed` and `queued`/`unqueued`
 * always match the engine's tables; `cleared` says both went to zero at once.
 */
export interface EngineMeter {
  /**
   * `key` gained a holder. `waitedMs`: how long it was queued (0: granted on arrival); undefined
   * for a holder this engine did not grant (a replicated one, installed on a standby). Returns a
   * small non-negative integer the engine keeps with the holder and hands back to `freed` (lockd:
   * the family and kind's slot), so that a release looks nothing up.
   */
  held(key: string, kind: HolderKind, waitedMs: number | undefined): number;
  /**
   * A holder left (released, expired, replaced or dropped by replication). `slot`: what `held`
   * returned for it. `heldMs`: since its grant; undefined if this engine did not grant it (see `held`).
   */
  freed(slot: number, heldMs: number | undefined): void;
  /** An acquire of `key` joined its queue. */
  queued(key: string): void;
  /** A queued acquire of `key` left its queue (granted, timed out, cancelled or dropped). */
  unqueued(key: string): void;
  /** Every holder and waiter was forgotten at once (`clear()`). */
  cleared(): void;
  /**
   * True: wait and hold times may reuse the engine's latest clock reading of the same synchronous
   * run (see RecentReading): no clock read per release, times late by at most that run's length.
   * Absent or false: every time is read from the clock (a test on a manual clock).
   */
  readonly reusesReadings?: boolean;
}
