import type { ClientBase, Pool, PoolClient, QueryResult } from "pg";
import { FenceError, StaleTokenError } from "../errors.js";
import { checkFenceInput } from "../fence-input.js";
import { KeyedMutex } from "../keyed-mutex.js";
import { assertResource } from "../resource.js";
import type { FenceStore, FenceWrite } from "../store.js";
import type { Queryable } from "./queryable.js";
import { DEFAULT_FENCE_TABLE } from "./schema.js";
import { quoteLiteral, quoteQualifiedName } from "./sql.js";

/** What a write receives: the connection with the fence transaction open on it. */
export type PostgresFenceTx = ClientBase;

export interface PostgresStoreOptions {
  /** Each fence() call checks out its own connection, so calls for different resources run in parallel. */
  pool?: Pool;
  /** One connection shared by every call: fence() calls queue up and run one transaction at a time. */
  client?: ClientBase;
  /** The fence table, "name" or "schema.name" (created by createFenceTable). Default "lock_fence". */
  table?: string;
}

interface Connection {
  client: ClientBase;
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
    this.table = quoteQualifiedName(options.table ?? DEFAULT_FENCE_TABLE);
    const { pool, client } = options;
    if (pool && !client) {
      this.#connect = async () => poolConnection(await pool.connect());
      this.#reader = pool;
    } else if (client && !pool) {
      // A pg.Client runs one transaction at a time, so calls queue on a mutex instead of interleaving.
      const mutex = new KeyedMutex();
      this.#connect = async () => ({ client, release: await mutex.lock("") });
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
    const checkedToken = checkFenceInput(resource, token);
    const { client, release } = await this.#connect();
    let broken: Error | undefined;
    try {
      // BEGIN and the guard share one round trip. A multi-statement simple query cannot take
      // parameters, so two values are literals, both produced by the check above: the token is the
      // text of a bigint (digits only), the resource is escaped like PQescapeLiteral.
      const guard = (await client.query(
        `BEGIN; INSERT INTO ${this.table} AS fence (resource, token) ` +
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
      const commit = await client.query("COMMIT");
      if (commit.command === "ROLLBACK") {
        // A statement failed and the write caught its error: Postgres answers COMMIT on the aborted
        // transaction by rolling back, silently. Neither the write nor the token took effect.
        throw new FenceError(
          "FENCE_WRITE_FAILED",
          `the fenced write to ${JSON.stringify(resource)} swallowed a failed statement; the transaction ` +
            "was rolled back, nothing was written and the token was not advanced",
        );
      }
      return result;
    } catch (error) {
      try {
        await client.query("ROLLBACK");
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
  return { client, release: (broken) => client.release(broken) };
}

async function selectToken(db: Queryable, table: string, resource: string): Promise<bigint | undefined> {
  const { rows } = await db.query(`SELECT token::text AS token FROM ${table} WHERE resource = $1`, [
    resource,
  ]);
  const token = rows[0]?.token;
  return typeof token === "string" ? BigInt(token) : undefined;
}
