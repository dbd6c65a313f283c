import type { ClientBase, Pool, PoolClient, QueryResult } from "pg";
import { assertOptions, hasMethods } from "../arguments.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { checkFenceInput } from "../fence-input.js";
import { KeyedMutex } from "../keyed-mutex.js";
import { assertResource } from "../resource.js";
import type { FenceStore, FenceWrite } from "../store.js";
import type { Queryable } from "./queryable.js";
import { DEFAULT_FENCE_TABLE } from "./schema.js";
import { CALLER_TRANSACTION, type FenceScope, inTransactionBlock, OWN_TRANSACTION } from "./scope.js";
import { quoteLiteral, quoteQualifiedName } from "./sql.js";

/** What a write receives: the connection with the fence transaction open on it. */
export type PostgresFenceTx = ClientBase;

export interface PostgresStoreOptions {
  /** Each fence() call checks out its own connection, so calls for different resources run in parallel. */
  pool?: Pool;
  /**
   * One connection shared by every call: fence() calls queue up and run one at a time. If the caller
   * has a transaction open on it, fence() runs inside that transaction, in a savepoint, and the
   * caller's COMMIT or ROLLBACK decides the write and the token (see scope.ts).
   */
  client?: ClientBase;
  /** The fence table, "name" or "schema.name" (created by createFenceTable). Default "lock_fence". */
  table?: string;
}

interface Connection {
  client: ClientBase;
  /** Our own transaction, or a savepoint in the one the caller has open on `client`. */
  scope: FenceScope;
  /** Give the connection back; `broken` asks the pool to discard it rather than reuse it. */
  release(broken?: Error): void;
}

/**
 * Fences writes in Postgres. Each fence() is one transaction on one connection:
 *
 *   BEGIN; INSERT INTO fence ... ON CONFLICT (resource) DO UPDATE SET token = excluded.token
 *          WHERE fence.token <= excluded.token RETURNING 1      -- one round trip
 *   <your statements on the same client>
 *   COMMIT                                                      -- or ROLLBACK on any error
 *
 * On a `{ client }` the caller has a transaction open on, SAVEPOINT / RELEASE SAVEPOINT / ROLLBACK TO
 * SAVEPOINT take the places of BEGIN / COMMIT / ROLLBACK (scope.ts).
 *
 * The upsert locks the resource's row (also when its WHERE refuses the update), so a concurrent writer
 * for the same resource waits until this transaction ends and then re-evaluates against the committed
 * token: a stale writer racing a newer one waits, then fails. Under READ COMMITTED (the default) that
 * is all it takes; under SERIALIZABLE a race may instead surface as a serialization failure (40001).
 *
 * The write must not COMMIT or ROLLBACK itself; throw to abort.
 */
export class PostgresStore implements FenceStore<PostgresFenceTx> {
  /** The quoted, qualified fence table name. */
  readonly table: string;
  readonly #connect: () => Promise<Connection>;
  /** Runs reads outside any fence transaction. */
  readonly #reader: Queryable;

  constructor(options: PostgresStoreOptions) {
    assertOptions(options, "postgresStore()", "options: { pool } or { client }");
    this.table = quoteQualifiedName(options.table ?? DEFAULT_FENCE_TABLE);
    const { pool, client } = options;
    if (pool && !hasMethods(pool, "connect", "query")) {
      throw new FenceError("FENCE_BAD_OPTIONS", "postgresStore(): `pool` must be a pg Pool");
    }
    if (client && !hasMethods(client, "query")) {
      throw new FenceError(
        "FENCE_BAD_OPTIONS",
        "postgresStore(): `client` must be a pg Client or PoolClient",
      );
    }
    if (pool && !client) {
      this.#connect = async () => poolConnection(await pool.connect());
      this.#reader = pool;
    } else if (client && !pool) {
      // A pg.Client runs one transaction at a time, so calls queue on a mutex instead of interleaving.
      const mutex = new KeyedMutex();
      this.#connect = () => sharedConnection(client, mutex);
      this.#reader = { query: (text, values) => mutex.run("", () => client.query(text, values)) };
    } else {
      throw new FenceError("FENCE_BAD_OPTIONS", "postgresStore() needs exactly one of `pool` or `client`");
    }
  }

  async fence<T>(
    resource: string,
    token: bigint,
    write: FenceWrite<PostgresFenceTx, T>,
  ): Promise<Awaited<T>> {
    // Checked here, not only in fence(): the guard below is SQL text, and a caller that passed a string
    // token straight to the store once ran `1); DROP TABLE ...` through it.
    const checkedToken = checkFenceInput(resource, token, write);
    const { client, scope, release } = await this.#connect();
    let broken: Error | undefined;
    let rollbackDue = true;
    try {
      // BEGIN (or SAVEPOINT) and the guard share one round trip. A multi-statement simple query cannot take
      // parameters, so two values are literals, both produced by the check above: the token is the
      // text of a bigint (digits only), the resource is escaped like PQescapeLiteral.
      const guard = (await client.query(
        `${scope.open}; INSERT INTO ${this.table} AS fence (resource, token) ` +
          `VALUES (${quoteLiteral(resource)}, ${checkedToken.toString()}) ` +
          "ON CONFLICT (resource) DO UPDATE SET token = excluded.token, updated_at = now() " +
          "WHERE fence.token <= excluded.token RETURNING 1",
      )) as unknown as QueryResult[];
      if (!Array.isArray(guard)) {
        // One result per statement is what a multi-statement query returns; anything else means a
        // client that does not run them as one simple query, and the guard's outcome is unknown.
        throw new FenceError("FENCE_BAD_OPTIONS", "the pg client did not return one result per statement");
      }
      if (guard[1]?.rowCount !== 1) {
        // The row is locked by our upsert, so this reads the token that refused us.
        const current = await selectToken(client, this.table, resource);
        throw new StaleTokenError(resource, checkedToken, current ?? 0n);
      }
      const result = await write(client);
      if (!(await scope.commit(client))) {
        // A statement failed and the write caught its error, so Postgres had aborted the transaction
        // (or the caller's, back to our savepoint): neither the write nor the token took effect.
        rollbackDue = false;
        throw new FenceError(
          "FENCE_WRITE_FAILED",
          `the fenced write to ${JSON.stringify(resource)} swallowed a failed statement; it was rolled ` +
            "back, nothing was written and the token was not advanced",
        );
      }
      return result;
    } catch (error) {
      try {
        if (rollbackDue) await client.query(scope.rollback);
      } catch (rollbackError) {
        // The connection is in an unknown state (dropped, or mid-protocol): never reuse it.
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      }
      throw error;
    } finally {
      release(broken);
    }
  }

  async current(resource: string): Promise<bigint | undefined> {
    assertResource(resource);
    return selectToken(this.#reader, this.table, resource);
  }
}

export function postgresStore(options: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(options);
}

function poolConnection(client: PoolClient): Connection {
  // Checked out by us, so no transaction of the caller's can be open on it.
  return { client, scope: OWN_TRANSACTION, release: (broken) => client.release(broken) };
}

/** The caller's client, once it is our turn; the caller may have a transaction open on it. */
async function sharedConnection(client: ClientBase, mutex: KeyedMutex): Promise<Connection> {
  const release = await mutex.lock("");
  try {
    const scope = (await inTransactionBlock(client)) ? CALLER_TRANSACTION : OWN_TRANSACTION;
    // Never "broken": the client is the caller's to end, not ours.
    return { client, scope, release: () => release() };
  } catch (error) {
    // An aborted caller transaction fails the probe (25P02): passed on, the transaction left to them.
    release();
    throw error;
  }
}

async function selectToken(db: Queryable, table: string, resource: string): Promise<bigint | undefined> {
  const { rows } = await db.query(`SELECT token::text AS token FROM ${table} WHERE resource = $1`, [
    resource,
  ]);
  const token = rows[0]?.token;
  return typeof token === "string" ? BigInt(token) : undefined;
}
