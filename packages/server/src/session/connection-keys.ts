/** Prune credit a check at the quota earns: a walk of n keys is paid for by n / this many checks. */
const CREDIT_PER_CHECK = 64;
/** Prune credit per millisecond: a connection that comes back to its quota later walks its keys at once. */
const CREDIT_PER_MS = 50;

/**
 * The keys one connection was granted and may still hold, for its key quota: held keys plus queued
 * acquires at most `maxKeysPerConnection`. The engine does not tell a connection when one of its
 * locks ends (a lease expiry, a release or a retry from another connection, a role change), so
 * the set may hold keys that ended; at the quota they are pruned against the engine (`stillHeld`).
 *
 * A walk costs one engine lookup per key, so it is paid for with credit that checks at the quota
 * and time earn: a client sitting at its quota cannot make every request cost a walk, and one that
 * comes back after its leases ran out is counted afresh. Time comes from `now` (milliseconds on a
 * monotonic clock), so tests drive it.
 */
export class ConnectionKeys {
  readonly #held = new Map<string, bigint>();
  readonly #now: () => number;
  #credit = Number.POSITIVE_INFINITY;
  #creditAt: number;

  constructor(now: () => number) {
    this.#now = now;
    this.#creditAt = now();
  }

  /** Keys recorded as held (some may have ended since the last prune). */
  get size(): number {
    return this.#held.size;
  }

  has(key: string): boolean {
    return this.#held.has(key);
  }

  granted(key: string, token: bigint): void {
    this.#held.set(key, token);
  }

  /** This connection released `key` with `token`. */
  released(key: string, token: bigint): void {
    if (this.#held.get(key) === token) this.#held.delete(key);
  }

  /**
   * Whether the connection, with `queued` acquires waiting, may take one more key under `quota`.
   * `stillHeld` asks the engine whether the connection still holds `key` with `token`.
   */
  admits(queued: number, quota: number, stillHeld: (key: string, token: bigint) => boolean): boolean {
    if (this.#held.size + queued < quota) return true;
    const now = this.#now();
    this.#credit += CREDIT_PER_CHECK + (now - this.#creditAt) * CREDIT_PER_MS;
    this.#creditAt = now;
    if (this.#credit >= this.#held.size) {
      this.#credit = 0;
      for (const [key, token] of this.#held) if (!stillHeld(key, token)) this.#held.delete(key);
    }
    return this.#held.size + queued < quota;
  }

  clear(): void {
    this.#held.clear();
  }
}
