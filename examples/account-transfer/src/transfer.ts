/**
 * A transfer between two accounts. Both accounts' locks are taken as one lockd bundle
 * (`client.acquireAll`), so a transfer A→B and one B→A never deadlock each other, whichever order
 * they name the accounts in. Both balance rows are written in one PostgreSQL transaction, each
 * account's row behind @lock/fence with the bundle's one token, so a transfer that stalled past its
 * lease is refused once a later holder of either account has written, and none of it is committed.
 */
import type { LockClient } from "@lock/client";
import { fence } from "@lock/fence";
import { postgresStore } from "@lock/fence/postgres";
import type pg from "pg";

export interface Transfer {
  readonly from: string;
  readonly to: string;
  readonly amount: number;
}

export interface TransferOptions {
  readonly client: LockClient;
  /** Holds `accounts (id text PRIMARY KEY, balance bigint)` and the fence table (`createFenceTable`). */
  readonly pool: pg.Pool;
  /** Longer than a transfer takes: a transfer that outlives it is refused by the fence. */
  readonly leaseMs: number;
  /** How long to wait for both accounts; 0 waits forever. */
  readonly waitMs?: number;
}

/**
 * An account's lock key, also its fence resource. One hash tag for every account, so that with a
 * slot map (several clusters) the keys of any two accounts share a slot, as a bundle's keys must.
 */
export function accountKey(account: string): string {
  return `{acct}:${account}`;
}

/** Locks both accounts as one bundle, moves `amount` from one to the other, and releases them. */
export async function transfer(options: TransferOptions, move: Transfer): Promise<void> {
  const { client, pool, leaseMs, waitMs } = options;
  await using lock = await client.acquireAll([accountKey(move.from), accountKey(move.to)], {
    leaseMs,
    waitMs,
  });
  await writeTransfer(pool, lock.token, move);
}

/**
 * The fenced write, in one transaction: for each account, the fence's guard (the token must be at
 * least the highest that has written that account) and its balance update. A StaleTokenError from
 * either guard rolls back both updates and is rethrown.
 */
export async function writeTransfer(pool: pg.Pool, token: bigint, move: Transfer): Promise<void> {
  // One account would get both updates in one row: the credit would overwrite the debit below.
  if (move.from === move.to) throw new RangeError(`a transfer from ${move.from} to itself`);
  const connection = await pool.connect();
  // On a client in a transaction of ours, each fence() is a savepoint; our COMMIT commits both.
  const store = postgresStore({ client: connection });
  const deltas = new Map([
    [move.from, -move.amount],
    [move.to, move.amount],
  ]);
  let broken: Error | undefined;
  try {
    await connection.query("BEGIN");
    // In key order, as the bundle sorts them: a stale transfer racing a live one takes the fence rows
    // in the same order as it does, so the two cannot deadlock inside PostgreSQL either.
    for (const account of [...deltas.keys()].sort()) {
      await fence(store, accountKey(account), token, (tx) =>
        tx.query("UPDATE accounts SET balance = balance + $2 WHERE id = $1", [account, deltas.get(account)]),
      );
    }
    await connection.query("COMMIT");
  } catch (error) {
    // A connection that cannot even roll back is discarded, not returned to the pool.
    await connection.query("ROLLBACK").catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    connection.release(broken);
  }
}
