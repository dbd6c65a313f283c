import type { ClientBase, Pool } from "pg";
import { assertOptions, hasMethods } from "../arguments.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { checkFenceInput } from "../fence-input.js";
import { KeyedMutex } from "../keyed-mutex.js";
import { assertResource } from "../resource.js";
import { decideRead, decideWrite, type FenceDecision, type FenceMarks, type FenceRefusal } from "../rule.js";
import type { FenceReadOptions, FenceWrite, ReadFenceStore } from "../store.js";
import { type Connection, poolConnection, sharedConnection } from "./connection.js";
import { MARKS_COLUMNS, type MarksRow, marksOf, readGuard, readGuardInsert } from "./guard.js";
import { inPipelineMode, runPipelinedWrite } from "./pipelined-write.js";
import type { Queryable } from "./queryable.js";
import { DEFAULT_FENCE_TABLE } from "./schema.js";
import type { FenceScope } from "./scope.js";
import { outdatedTable, sendGuard, sendWriteGuard } from "./send-guard.js";
import { quoteQualifiedName } from "./sql.js";
import { statementsOf } from "./statements-write.js";

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

/**
 * Fences writes (and reads, fenceRead()) in Postgres. Each call is one transaction on one connection:
 *
 *   BEGIN; <the guard, guard.ts>                                -- one round trip
 *   <your statements on the same client>
 *   COMMIT                                                      -- or ROLLBACK on any error
 *
 * On a `{ client }` the caller has a transaction open on, SAVEPOINT / RELEASE SAVEPOINT / ROLLBACK TO
 * SAVEPOINT take the places of BEGIN / COMMIT / ROLLBACK (scope.ts).
 *
 * The guard locks the resource's fence row until the transaction ends (guard.ts), so a fenced write
 * waits for every open fenced call of its resource and then decides on the committed marks: a stale
 * writer racing a newer one waits, then fails. Under READ COMMITTED (the default) that is all it takes;
 * under SERIALIZABLE a race may instead surface as a serialization failure (40001).
 *
 * The write must not COMMIT or ROLLBACK itself; throw to abort.
 */
export class PostgresStore implements ReadFenceStore<PostgresFenceTx> {
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
    // Checked here, not only in fence(): the guard is SQL text, and a caller that passed a string
    // token straight to the store once ran `1); DROP TABLE ...` through it.
    const checked = checkFenceInput(resource, token, write);
    const connection = await this.#connect();
    const statements = statementsOf(write);
    if (statements && inPipelineMode(connection.client)) {
      return (await runPipelinedWrite(connection, this.table, resource, checked, statements)) as Awaited<T>;
    }
    return this.#run(connection, resource, checked, write, "write", async (client, scope) => {
      const guard = await sendWriteGuard(client, scope, this.table, resource, checked);
      if (guard.rowCount === 1) return undefined;
      // The row is locked by our upsert, so this reads the marks that refused us.
      const { rows } = await client.query(`SELECT ${MARKS_COLUMNS} FROM ${this.table} WHERE resource = $1`, [
        resource,
      ]);
      return refusal(decideWrite(marksOf(rows[0]), checked)) ?? { code: "FENCE_STALE_TOKEN", current: 0n };
    });
  }

  async fenceRead<T>(
    resource: string,
    token: bigint,
    read: FenceWrite<PostgresFenceTx, T>,
    options: FenceReadOptions = {},
  ): Promise<Awaited<T>> {
    const checked = checkFenceInput(resource, token, read);
    const record = options?.record === true;
    return this.#run(await this.#connect(), resource, checked, read, "read", async (client, scope) => {
      let guard = await sendGuard(
        client,
        `${scope.open}; ${readGuard(this.table, resource, checked, record)}`,
      );
      if (guard.rowCount === 0) {
        guard = await sendGuard(client, readGuardInsert(this.table, resource, checked, record));
      }
      // Any raise already happened in the guard, so the marks are only checked here.
      return refusal(decideRead(marksOf(guard.rows[0]), checked, false));
    });
  }

  async current(resource: string): Promise<bigint | undefined> {
    return (await this.#marks(resource)).write;
  }

  async currentRead(resource: string): Promise<bigint | undefined> {
    return (await this.#marks(resource)).read;
  }

  async #marks(resource: string): Promise<FenceMarks> {
    assertResource(resource);
    const { rows } = await outdatedTable(() =>
      this.#reader.query<MarksRow>(`SELECT ${MARKS_COLUMNS} FROM ${this.table} WHERE resource = $1`, [
        resource,
      ]),
    );
    return marksOf(rows[0]);
  }

  /**
   * One fenced call on `connection`: open the scope with `guard` (which returns the refusal, if any),
   * run the body, commit; roll back on any failure and give the connection back.
   */
  async #run<T>(
    { client, scope, release }: Connection,
    resource: string,
    token: bigint,
    body: FenceWrite<PostgresFenceTx, T>,
    use: "write" | "read",
    guard: (client: ClientBase, scope: FenceScope) => Promise<Refusal | undefined>,
  ): Promise<Awaited<T>> {
    let broken: Error | undefined;
    let rollbackDue = true;
    try {
      const refused = await guard(client, scope);
      if (refused) throw new StaleTokenError(resource, token, refused.current, refused.code);
      const result = await body(client);
      if (!(await scope.commit(client))) {
        // A statement failed and the body caught its error, so Postgres had aborted the transaction
        // (or the caller's, back to our savepoint): neither the body nor the marks took effect.
        rollbackDue = false;
        throw new FenceError(
          "FENCE_WRITE_FAILED",
          `the fenced ${use} of ${JSON.stringify(resource)} swallowed a failed statement; it was rolled ` +
            "back, nothing was written and no token was recorded",
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
}

type Refusal = Pick<FenceRefusal, "code" | "current">;

function refusal(decision: FenceDecision): Refusal | undefined {
  return decision.accepted ? undefined : decision.refusal;
}

export function postgresStore(options: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(options);
}
