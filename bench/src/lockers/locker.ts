/**
 * One lock system as an application uses it through its usual client library, for the load workers
 * (bench/src/client-load-worker.ts). Many loops call `acquire` at once, each under its own contender
 * number; a contender never has two acquires of one key outstanding.
 */
export interface Held {
  release(): Promise<unknown>;
}

export interface Locker {
  /**
   * Takes `key` for `contender`, waiting while someone else holds it. Redis's recipe cannot wait
   * (`SET NX` just fails): its acquire rejects if the key is taken, so it runs uncontended only.
   */
  acquire(key: string, contender: number): Promise<Held>;
  close(): Promise<unknown>;
}

export type LockSystem = "lockd" | "redis" | "postgres" | "etcd";

export const LOCK_SYSTEMS: readonly LockSystem[] = ["lockd", "redis", "postgres", "etcd"];

/** Lease of every lock and session taken in a run: far longer than any run, so nothing expires mid-run. */
export const BENCH_LEASE_MS = 60_000;
