import type { ClientBase, Pool, PoolClient, QueryResult } from "pg";
import { assertOptions, hasMethods } from "../arguments.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { checkFenceInput } from "../fence-input.js";
import { KeyedMutex } from "../keyed-mutex.js";
import { assertResource } from "../resource.js";
import { decideRead, decideWrite, type FenceDecision, type FenceMarks, type FenceRefusal } from "../rule.js";
import type { FenceReadOptions, FenceWrite, ReadFenceStore } from "../store.js";
import {
  MARKS_COLUMNS,
  type MarksRow,
  marksOf,
  raisedRefusal,
  raisingWriteGuard,
  readGuard,
  readGuardInsert,
  writeGuard,
} from "./guard.js";
import type { Queryable } from "./queryable.js";
import { DEFAULT_FENCE_TABLE } from "./schema.js";
import { CALLER_TRANSACTION, type FenceScope, inTransactionBlock, OWN_TRANSACTION } from "./scope.js";
import { quoteQualifiedName } from "./sql.js";
import { type CheckedStatement, statementsOf } from "./statements-write.js";

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
      return (await this.#runPipelined(connection, resource, checked, statements)) as Awaited<T>;
    }
    return this.#run(connection, resource, checked, write, "write", async (client, scope) => {
      const guard = await sendGuard(client, writeGuard(scope.open, this.table, resource, checked));
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

  /**
   * The fast path of a sqlStatements() write, on a connection in pg's pipeline mode: the scope and its
   * raising guard, the statements and the commit all go out at once, one round trip. Nothing of the
   * caller's runs in between, so nothing needs the guard's answer first. A refusal is an error that
   * aborts the transaction: Postgres skips the statements behind it (25P02, never executed) and the
   * commit rolls back. A failing statement aborts it the same way and is rethrown unchanged.
   */
  async #runPipelined(
    { client, scope, release }: Connection,
    resource: string,
    token: bigint,
    statements: readonly CheckedStatement[],
  ): Promise<QueryResult[]> {
    // Each query() call puts its messages on the wire before the next one is made.
    const guard = sendGuard(client, raisingWriteGuard(scope.open, this.table, resource, token));
    const results = statements.map(({ text, values }) => client.query(text, values));
    const outcomes = await Promise.allSettled([guard, ...results, scope.commit(client)]);
    const commit = outcomes.pop() as PromiseSettledResult<boolean>;
    let broken: Error | undefined;
    try {
      if (commit.status === "rejected") {
        // The commit itself failed (a deferred constraint, a dropped connection): roll back as the
        // general path does, and give up the connection if even that fails.
        try {
          await client.query(scope.rollback);
        } catch (rollbackError) {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        }
      }
      // The first query that failed, in the order they were sent: the guard's refusal, or the
      // statement that aborted the transaction (those after it only say so, 25P02).
      const failed = outcomes.find((outcome) => outcome.status === "rejected");
      if (failed) throw this.#pipelineFailure(resource, token, failed.reason);
      if (commit.status === "rejected") throw commit.reason;
      if (!commit.value) {
        throw new FenceError(
          "FENCE_WRITE_FAILED",
          `the fenced write of ${JSON.stringify(resource)} was rolled back at commit; nothing was written`,
        );
      }
      return outcomes.slice(1).map((outcome) => (outcome as PromiseFulfilledResult<QueryResult>).value);
    } finally {
      release(broken);
    }
  }

  /** What a failed pipelined call throws: StaleTokenError for the guard's refusal, else the error. */
  #pipelineFailure(resource: string, token: bigint, failure: unknown): unknown {
    const marks = raisedRefusal(failure);
    if (!marks) return failure;
    const { code, current } = refusal(decideWrite(marks, token)) ?? {
      code: "FENCE_STALE_TOKEN",
      current: 0n,
    };
    return new StaleTokenError(resource, token, current, code);
  }
}

/** Whether pg sends this client's queries without waiting for earlier replies (`pipeline: true`). */
function inPipelineMode(client: ClientBase): boolean {
  return (client as { pipeline?: unknown }).pipeline === true;
}

type Refusal = Pick<FenceRefusal, "code" | "current">;

function refusal(decision: FenceDecision): Refusal | undefined {
  return decision.accepted ? undefined : decision.refusal;
}

/** Sends a scope opening and guard as one simple query; returns the guard's (the last) result. */
async function sendGuard(client: ClientBase, text: string): Promise<QueryResult<MarksRow>> {
  const results = (await outdatedTable(() => client.query(text))) as unknown as QueryResult<MarksRow>[];
  if (!Array.isArray(results)) {
    // One result per statement is what a multi-statement query returns; anything else means a
    // client that does not run them as one simple query, and the guard's outcome is unknown.
    throw new FenceError("FENCE_BAD_OPTIONS", "the pg client did not return one result per statement");
  }
  return results.at(-1)!;
}

// SQLSTATEs of a fence table created before the read rule: no read_token column, token NOT NULL.
const UNDEFINED_COLUMN = "42703";
const NOT_NULL_VIOLATION = "23502";

/** Runs `query`, turning the errors of a fence table from before the read rule into one that says so. */
async function outdatedTable<R>(query: () => Promise<R>): Promise<R> {
  try {
    return await query();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== UNDEFINED_COLUMN && code !== NOT_NULL_VIOLATION) throw error;
    throw new FenceError(
      "FENCE_TABLE_OUTDATED",
      "the fence table predates the read rule (it has no nullable token and read_token columns): run " +
        "createFenceTable() again, or the statements of sql/fence-table.sql, to bring it up to date",
      { cause: error },
    );
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
