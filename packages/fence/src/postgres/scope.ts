/**
 * How one fence() brackets its statements on a connection: a transaction of its own, or a savepoint
 * inside a transaction the caller already opened on that connection (postgresStore({ client }) used
 * between the caller's BEGIN and COMMIT). BEGIN there would only warn ("there is already a transaction
 * in progress") and our COMMIT would end the caller's transaction: a later ROLLBACK of theirs would
 * then undo nothing.
 */
import type { ClientBase } from "pg";

export interface FenceScope {
  /** Opens the scope. Sent in one simple query with the guard, so it must not take parameters. */
  readonly open: string;
  /**
   * Ends the scope after the write returned. Resolves false when Postgres had already aborted it (the
   * write caught a failed statement and went on): then the scope is rolled back, nothing of it took
   * effect, and `rollback` must not be sent again.
   */
  commit(client: ClientBase): Promise<boolean>;
  /** Undoes everything since `open`, on any failure before `commit` settled. */
  readonly rollback: string;
}

/** Our own transaction, on a connection nobody else has a transaction open on. */
export const OWN_TRANSACTION: FenceScope = {
  open: "BEGIN",
  async commit(client) {
    // Postgres answers COMMIT on an aborted transaction by rolling back, without an error.
    return (await client.query("COMMIT")).command !== "ROLLBACK";
  },
  rollback: "ROLLBACK",
};

const SAVEPOINT = "lock_fence";
// ROLLBACK TO keeps the savepoint; release it too, so that repeated fence() calls do not pile them up.
const ROLLBACK_TO_SAVEPOINT = `ROLLBACK TO SAVEPOINT ${SAVEPOINT}; RELEASE SAVEPOINT ${SAVEPOINT}`;
// SQLSTATE in_failed_sql_transaction: the transaction is aborted, every statement but a rollback fails.
const IN_FAILED_TRANSACTION = "25P02";

/**
 * A savepoint in the caller's transaction. Releasing it keeps our statements in the caller's
 * transaction, so the caller's COMMIT or ROLLBACK decides them; the fence row stays locked until then.
 * A rollback leaves the caller's transaction as it was before fence(), and usable.
 */
export const CALLER_TRANSACTION: FenceScope = {
  open: `SAVEPOINT ${SAVEPOINT}`,
  async commit(client) {
    try {
      await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
      return true;
    } catch (error) {
      if ((error as { code?: unknown }).code !== IN_FAILED_TRANSACTION) throw error;
      await client.query(ROLLBACK_TO_SAVEPOINT);
      return false;
    }
  },
  rollback: ROLLBACK_TO_SAVEPOINT,
};

/**
 * Whether a transaction block is open on `client`: asked of Postgres, since pg's client has no public
 * flag for it and the caller's BEGIN never passes through this package.
 *
 * Postgres documents that statement_timestamp() and transaction_timestamp() "return the same value
 * during the first command of a transaction". Outside a transaction block this query is that first
 * command, so they are equal, always. Inside one, the transaction began with an earlier message
 * (BEGIN), timed when Postgres read it: a round trip before this one, or, if pg's pipeline mode sent
 * both at once, at least the time Postgres took to run BEGIN and answer it. Both are microsecond
 * timestamps, so the probe can only be wrong if that gap is under a microsecond or the server's clock
 * steps back onto the very microsecond; then fence() would BEGIN/COMMIT as it did before. Not used:
 * txid_current_if_assigned() / pg_current_xact_id_if_assigned(), which are NULL in a transaction that
 * has not written yet, and a SAVEPOINT that fails outside a transaction, which logs an ERROR on the
 * server for every call. The cost is one round trip per fence() on a `{ client }` store; pool
 * connections are checked out by the store itself and never probed.
 */
export async function inTransactionBlock(client: ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ open: boolean }>(
    "SELECT statement_timestamp() <> transaction_timestamp() AS open",
  );
  return rows[0]?.open === true;
}
