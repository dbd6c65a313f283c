/**
 * The write guard prepared once per connection (SQL PREPARE, then EXECUTE), and what happens when the
 * connection's prepared statements are not what the store remembers: deallocated (DISCARD ALL,
 * DEALLOCATE, a pooler), or prepared already by someone else. On a real PostgreSQL.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import { PG_URL, type PgSandbox, pgSandbox, selectTokens, uniqueName } from "../testing/sandbox.js";
import { createFenceTable, PostgresStore, sqlStatements } from "./index.js";

describe("the prepared write guard", () => {
  let sandbox: PgSandbox;
  let fenceTable: string;
  let log: string;
  const clients: pg.Client[] = [];
  const connect = async (config: pg.ClientConfig = {}) => {
    const client = new pg.Client({ connectionString: PG_URL, ...config });
    clients.push(client);
    await client.connect();
    return client;
  };
  const storeOn = (client: pg.Client) => new PostgresStore({ client, table: fenceTable });
  /** The PREPAREs of the guards `client`'s session has (Postgres shows the whole query each came in). */
  const guards = async (client: pg.Client) =>
    (
      await client.query<{ statement: string }>(
        "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'lock\\_fence\\_%' ORDER BY name",
      )
    ).rows.flatMap((row) => /PREPARE lock_fence_.*? RETURNING 1/.exec(row.statement) ?? []);
  const append = (tx: pg.ClientBase, resource: string, token: bigint) =>
    tx.query(`INSERT INTO ${log} (resource, token) VALUES ($1, $2)`, [resource, token.toString()]);
  const logged = (resource: string) =>
    selectTokens(sandbox.pool, `SELECT token::text AS token FROM ${log} WHERE resource = $1 ORDER BY seq`, [
      resource,
    ]);

  beforeAll(async () => {
    sandbox = await pgSandbox(2);
    fenceTable = sandbox.table("fence");
    await createFenceTable(sandbox.pool, fenceTable);
    log = sandbox.table("log");
    await sandbox.pool.query(
      `CREATE TABLE ${log} (seq bigserial, resource text NOT NULL, token numeric(20, 0) NOT NULL)`,
    );
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.end()));
  });
  afterAll(() => sandbox?.close());

  it("is prepared once per connection and then only executed", async () => {
    const client = await connect();
    const store = storeOn(client);
    const resource = uniqueName("once");
    for (const token of [1n, 2n, 2n, 3n])
      await fence(store, resource, token, (tx) => append(tx, resource, token));
    const prepared = await guards(client);
    expect(prepared).toHaveLength(1);
    expect(prepared[0]).toMatch(/^PREPARE lock_fence_\w+ \(text, numeric\) AS INSERT INTO /);
    await expect(fence(store, resource, 2n, (tx) => append(tx, resource, 2n))).rejects.toBeInstanceOf(
      StaleTokenError,
    );
    expect(await logged(resource)).toEqual([1n, 2n, 2n, 3n]);
  });

  it("goes on unprepared when the connection's statements were deallocated", async () => {
    const client = await connect();
    const store = storeOn(client);
    const resource = uniqueName("deallocated");
    await fence(store, resource, 1n, (tx) => append(tx, resource, 1n));
    await client.query("DEALLOCATE ALL");
    await fence(store, resource, 2n, (tx) => append(tx, resource, 2n));
    await expect(fence(store, resource, 1n, (tx) => append(tx, resource, 1n))).rejects.toBeInstanceOf(
      StaleTokenError,
    );
    await fence(store, resource, 3n, (tx) => append(tx, resource, 3n));
    expect(await logged(resource)).toEqual([1n, 2n, 3n]);
    expect(await guards(client)).toEqual([]); // not prepared again on this connection
  });

  it("executes a guard the connection already has instead of preparing it twice", async () => {
    const first = await connect();
    const resource = uniqueName("duplicate");
    await fence(storeOn(first), resource, 1n, (tx) => append(tx, resource, 1n));
    // Another copy of the package prepared the same guard on a connection this store has not used.
    const second = await connect();
    for (const statement of await guards(first)) await second.query(statement);
    await fence(storeOn(second), resource, 2n, (tx) => append(tx, resource, 2n));
    expect(await logged(resource)).toEqual([1n, 2n]);
    expect(await guards(second)).toHaveLength(1);
  });

  it("recovers inside the caller's transaction, which stays open and keeps its own statements", async () => {
    const client = await connect();
    const store = storeOn(client);
    const resource = uniqueName("caller");
    await fence(store, resource, 1n, (tx) => append(tx, resource, 1n));
    await client.query("DEALLOCATE ALL");
    await client.query("BEGIN");
    await append(client, resource, 100n);
    await fence(store, resource, 2n, (tx) => append(tx, resource, 2n));
    await client.query("COMMIT");
    expect(await logged(resource)).toEqual([1n, 100n, 2n]);
  });

  it("recovers on the pipelined path too, running the statements exactly once", async () => {
    const client = await connect({ pipeline: true });
    const store = storeOn(client);
    const resource = uniqueName("pipelined");
    const write = (token: bigint) =>
      sqlStatements({
        text: `INSERT INTO ${log} (resource, token) VALUES ($1, $2)`,
        values: [resource, token.toString()],
      });
    await fence(store, resource, 1n, write(1n));
    await client.query("DEALLOCATE ALL");
    await fence(store, resource, 2n, write(2n));
    await expect(fence(store, resource, 1n, write(1n))).rejects.toMatchObject({
      code: "FENCE_STALE_TOKEN",
      currentToken: 2n,
    });
    expect(await logged(resource)).toEqual([1n, 2n]);
  });
});
