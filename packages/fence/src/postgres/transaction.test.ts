/**
 * postgresStore({ client }) on a client the caller may already have opened a transaction on: fence()
 * must then work inside a savepoint and leave COMMIT or ROLLBACK to the caller.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import { PG_URL, type PgSandbox, pgSandbox, selectTokens, uniqueName } from "../testing/sandbox.js";
import { createFenceTable, PostgresStore } from "./index.js";

describe("postgresStore({ client }) and the caller's transaction", () => {
  let sandbox: PgSandbox;
  let client: pg.Client;
  /** Fences on the caller's client. */
  let store: PostgresStore;
  /** The same fence table seen from other connections: shows only what was committed. */
  let committed: PostgresStore;
  let log: string;

  const insertLog = (db: pg.ClientBase, resource: string, token: bigint) =>
    db.query(`INSERT INTO ${log} (resource, token) VALUES ($1, $2)`, [resource, token.toString()]);
  const committedLog = (resource: string) =>
    selectTokens(sandbox.pool, `SELECT token::text AS token FROM ${log} WHERE resource = $1 ORDER BY seq`, [
      resource,
    ]);
  /** The caller's transaction survived a refused fence(): it can write again and commit both its rows. */
  const expectCallerTransactionGoesOn = async (resource: string) => {
    await insertLog(client, resource, 2n);
    await client.query("COMMIT");
    expect(await committedLog(resource)).toEqual([1n, 2n]);
  };
  /** What pg_stat_activity says the caller's connection is doing: "idle" or "idle in transaction". */
  const callerState = async () => {
    const { rows } = await sandbox.pool.query("SELECT state FROM pg_stat_activity WHERE pid = $1", [
      (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid,
    ]);
    return rows[0]?.state;
  };

  beforeAll(async () => {
    sandbox = await pgSandbox(2);
    const table = sandbox.table("fence");
    await createFenceTable(sandbox.pool, table);
    log = sandbox.table("log");
    await sandbox.pool.query(
      `CREATE TABLE ${log} (seq bigserial, resource text NOT NULL, token numeric(20, 0) NOT NULL)`,
    );
    client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    store = new PostgresStore({ client, table });
    committed = new PostgresStore({ pool: sandbox.pool, table });
  });
  // A failed test must not leave its transaction open for the next one.
  afterEach(() => client.query("ROLLBACK").catch(() => undefined));
  afterAll(async () => {
    await client?.end();
    await sandbox?.close();
  });

  it("lets the caller's ROLLBACK undo the fenced write and the fence row", async () => {
    const resource = uniqueName("rollback");
    await client.query("BEGIN");
    await insertLog(client, resource, 1n);
    await fence(store, resource, 5n, (tx) => insertLog(tx, resource, 5n));
    await insertLog(client, resource, 2n);
    await client.query("ROLLBACK");
    expect(await committedLog(resource)).toEqual([]);
    expect(await committed.current(resource)).toBeUndefined();
  });

  it("commits nothing itself: the caller's COMMIT makes the write and the token visible together", async () => {
    const resource = uniqueName("commit");
    await client.query("BEGIN");
    // Nothing written yet, so no transaction id assigned: txid_current_if_assigned() would say "none".
    await fence(store, resource, 5n, (tx) => insertLog(tx, resource, 5n));
    expect(await store.current(resource)).toBe(5n); // the caller's transaction sees its own write
    expect(await committedLog(resource)).toEqual([]);
    expect(await committed.current(resource)).toBeUndefined();
    await client.query("COMMIT");
    expect(await committedLog(resource)).toEqual([5n]);
    expect(await committed.current(resource)).toBe(5n);
  });

  it("rolls back only to its savepoint when the write throws; the caller's transaction goes on", async () => {
    const resource = uniqueName("throws");
    await client.query("BEGIN");
    await insertLog(client, resource, 1n);
    const failure = new Error("the write failed half-way");
    const attempt = fence(store, resource, 5n, async (tx) => {
      await insertLog(tx, resource, 5n);
      throw failure;
    });
    await expect(attempt).rejects.toBe(failure);
    await expectCallerTransactionGoesOn(resource);
    expect(await committed.current(resource)).toBeUndefined();
  });

  it("refuses a stale token without ending the caller's transaction", async () => {
    const resource = uniqueName("stale");
    await fence(committed, resource, 10n, () => undefined);
    await client.query("BEGIN");
    await insertLog(client, resource, 1n);
    await expect(fence(store, resource, 9n, (tx) => insertLog(tx, resource, 9n))).rejects.toBeInstanceOf(
      StaleTokenError,
    );
    await expectCallerTransactionGoesOn(resource);
    expect(await committed.current(resource)).toBe(10n);
  });

  it("reports a write that swallowed a failed statement and restores the caller's transaction", async () => {
    const resource = uniqueName("swallowed");
    await client.query("BEGIN");
    await insertLog(client, resource, 1n);
    const attempt = fence(store, resource, 5n, async (tx) => {
      await insertLog(tx, resource, 5n);
      await tx.query("SELECT 1/0").catch(() => "ignored");
    });
    await expect(attempt).rejects.toMatchObject({ code: "FENCE_WRITE_FAILED" });
    await expectCallerTransactionGoesOn(resource);
    expect(await committed.current(resource)).toBeUndefined();
  });

  it("passes the error of an already failed caller transaction through and leaves it to the caller", async () => {
    const resource = uniqueName("aborted");
    await client.query("BEGIN");
    await expect(client.query("SELECT 1/0")).rejects.toThrow(/division by zero/);
    // 25P02: current transaction is aborted, commands ignored until end of transaction block.
    await expect(fence(store, resource, 5n, () => "never")).rejects.toMatchObject({ code: "25P02" });
    await expect(client.query("SELECT 1")).rejects.toMatchObject({ code: "25P02" }); // still the caller's
    await client.query("ROLLBACK");
    expect(await committed.current(resource)).toBeUndefined();
  });

  it("outside a transaction, still commits each call on its own and leaves the client idle", async () => {
    const resource = uniqueName("own");
    await fence(store, resource, 5n, (tx) => insertLog(tx, resource, 5n));
    expect(await committedLog(resource)).toEqual([5n]);
    expect(await committed.current(resource)).toBe(5n);
    expect(await callerState()).toBe("idle");
    await expect(fence(store, resource, 4n, () => undefined)).rejects.toBeInstanceOf(StaleTokenError);
    expect(await callerState()).toBe("idle");
  });
});
