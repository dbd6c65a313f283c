/**
 * A singleton worker by leader election: every process campaigns for one lockd key, and only the
 * leader works. The leader's term is its grant's fencing token, and every write it makes goes
 * through @lock/fence with the term as the token, so a leader deposed without knowing it (paused
 * past its lease, cut off from lockd) is refused by PostgreSQL once a later leader has written.
 */
import type { Leadership, LockClient } from "@lock/client";
import { fence, StaleTokenError } from "@lock/fence";
import type { PostgresFenceTx, PostgresStore } from "@lock/fence/postgres";

export interface LeaderOptions {
  readonly client: LockClient;
  /** The fence's store, `postgresStore({ pool })`: the highest term that has written. */
  readonly store: PostgresStore;
  /** The election's key: one per singleton (also the fence's resource). */
  readonly key: string;
  /** The leader's lease: how long the service may go without a leader after one dies. */
  readonly leaseMs: number;
  /** Aborting it ends the loop: the campaign stops, and a leader resigns. */
  readonly signal: AbortSignal;
}

/** What the leader's work gets for one term. */
export interface Term {
  readonly term: bigint;
  /** Aborts when this leadership ends (lost, or the loop is stopping): stop working. */
  readonly signal: AbortSignal;
  /** Runs `write` in a transaction that commits only if no later term has written. */
  fenced<T>(write: (tx: PostgresFenceTx) => Promise<T>): Promise<T>;
}

/**
 * Campaigns for `options.key` until `options.signal` aborts. Each time elected, runs `lead` with the
 * term until it returns or the leadership ends, then resigns (a standby is elected at once) and
 * campaigns again. A StaleTokenError from a fenced write means a later leader has written: this
 * leadership is over, whether or not the lease has noticed yet, so the loop campaigns again. Any
 * other error from `lead` ends the loop (after resigning) and rejects.
 */
export async function leaderLoop(options: LeaderOptions, lead: (term: Term) => Promise<void>): Promise<void> {
  const { client, store, key, leaseMs, signal } = options;
  while (!signal.aborted) {
    let leader: Leadership;
    try {
      leader = await client.elect(key, { leaseMs, signal });
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    const term: Term = {
      term: leader.term,
      signal: AbortSignal.any([leader.signal, signal]),
      fenced: (write) => fence(store, key, leader.term, write),
    };
    try {
      await lead(term);
    } catch (error) {
      if (!(error instanceof StaleTokenError) && !term.signal.aborted) throw error;
    } finally {
      // Already lost: resolves false at once. Unconfirmed (no server): the lease ends the term.
      await leader.resign().catch(() => {});
    }
  }
}
