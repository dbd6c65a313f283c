/**
 * Writes given as data, sqlStatements(): on a pool in pg's pipeline mode the guard, the statements and
 * COMMIT go out in one round trip, and a stale token's statements are never executed (Postgres skips
 * them in the aborted transaction); elsewhere they take the general path. On a real PostgreSQL.
 */
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StaleTokenError } from "../errors.js";
import { fence, fenceRead } from "../fence.js";
import { expectOnlyAcceptedApplied, race } from "../testing/race.js";
import { roundTripPool } from "../testing/round-trips.js";
import { PG_URL, type PgSandbox, pgSandbox, selectTokens, uniqueName } from "../testing/sandbox.js";
import { createFenceTable, PostgresStore, sqlStatements } from "./index.js";

describe("sqlStatements(): a fenced Postgres write given as data", () => {
  let sandbox: PgSandbox;
  /** A second pool on the sandbox's schema, its clients in pipeline mode. */
  let pipelined: pg.Pool;
  let fenceTable: string;
  let log: string;
  let calls: string;
  const store = (pool: pg.Pool) => new PostgresStore({ pool, table: fenceTable });
  /** Appends `token` to the log, and draws a number from a sequence, which no rollback gives back. */
  const append = (resource: string, token: bigint) =>
    sqlStatements(
      { text: `INSERT INTO ${log} (resource, token) VALUES ($1, $2)`, values: [resource, token.toString()] },
      `SELECT nextval('${calls}')`,
    );
  const logged = (resource: string) =>
    selectTokens(sandbox.pool, `SELECT token::text AS token FROM ${log} WHERE resource = $1 ORDER BY seq`, [
      resource,
    ]);
  /** How many numbers the statements have drawn from the sequence so far. */
  const callsMade = async () => {
    const { rows } = await sandbox.pool.query(`SELECT last_value::int AS last, is_called FROM ${calls}`);
    return rows[0].is_called ? (rows[0].last as number) : 0;
  };

  beforeAll(async () => {
    sandbox = await pgSandbox(4);
    pipelined = new pg.Pool({ connectionString: PG_URL, max: 6, pipeline: true });
    fenceTable = sandbox.table("fence");
    await createFenceTable(sandbox.pool, fenceTable);
    log = sandbox.table("log");
    calls = sandbox.table("calls");
    await sandbox.pool.query(
      `CREATE TABLE ${log} (seq bigserial, resource text NOT NULL, token numeric(20, 0) NOT NULL)`,
    );
    await sandbox.pool.query(`CREATE SEQUENCE ${calls}`);
  });
  afterAll(async () => {
    await pipelined?.end();
    await sandbox?.close();
  });

  it("takes one round trip on a pipeline-mode pool, where a write function takes three", async () => {
    const resource = uniqueName("round-trips");
    const recorded = roundTripPool(pipelined);
    const fenced = store(recorded.pool);

    const results = await fence(fenced, resource, 1n, append(resource, 1n));
    expect(recorded.roundTrips()).toBe(1);
    expect(results.map((result) => result.command)).toEqual(["INSERT", "SELECT"]);

    recorded.reset();
    await fence(fenced, resource, 2n, (tx) =>
      tx.query(`INSERT INTO ${log} (resource, token) VALUES ($1, 2)`, [resource]),
    );
    expect(recorded.roundTrips()).toBe(3); // BEGIN and the guard; the write; COMMIT
    expect(await logged(resource)).toEqual([1n, 2n]);
  });

  it("takes the general path on a pool not in pipeline mode, with the same outcome", async () => {
    const resource = uniqueName("general");
    const recorded = roundTripPool(sandbox.pool);
    const fenced = store(recorded.pool);
    const results = await fence(fenced, resource, 5n, append(resource, 5n));
    expect(results.map((result) => result.command)).toEqual(["INSERT", "SELECT"]);
    expect(recorded.roundTrips()).toBe(4); // BEGIN and the guard; each statement; COMMIT
    await expect(fence(fenced, resource, 4n, append(resource, 4n))).rejects.toBeInstanceOf(StaleTokenError);
    expect(await logged(resource)).toEqual([5n]);
  });

  it("never executes a stale token's statements: the guard's refusal aborts the transaction", async () => {
    const resource = uniqueName("stale");
    const fenced = store(pipelined);
    await fence(fenced, resource, 10n, append(resource, 10n));
    const drawn = await callsMade();

    const refusal = fence(fenced, resource, 9n, append(resource, 9n));
    await expect(refusal).rejects.toBeInstanceOf(StaleTokenError);
    await expect(refusal).rejects.toMatchObject({
      code: "FENCE_STALE_TOKEN",
      resource,
      presentedToken: 9n,
      currentToken: 10n,
    });
    // A statement that ran and was rolled back would still have drawn from the sequence.
    expect(await callsMade()).toBe(drawn);
    expect(await logged(resource)).toEqual([10n]);
    expect(await fenced.current(resource)).toBe(10n);
    // The connection went back clean: the next call on it works.
    await expect(fence(fenced, resource, 10n, append(resource, 10n))).resolves.toHaveLength(2);
  });

  it("refuses a write below a recorded read (FENCE_NEWER_READ) and keeps both marks", async () => {
    const resource = uniqueName("newer-read");
    const fenced = store(pipelined);
    await fence(fenced, resource, 30n, append(resource, 30n));
    await fenceRead(fenced, resource, 40n, () => undefined, { record: true });
    await expect(fence(fenced, resource, 35n, append(resource, 35n))).rejects.toMatchObject({
      code: "FENCE_NEWER_READ",
      currentToken: 40n,
    });
    expect([await fenced.current(resource), await fenced.currentRead(resource)]).toEqual([30n, 40n]);
    // A token at or above the read goes through, and clears the read mark.
    await fence(fenced, resource, 40n, append(resource, 40n));
    expect([await fenced.current(resource), await fenced.currentRead(resource)]).toEqual([40n, undefined]);
  });

  it("rethrows a failing statement's error unchanged and rolls everything back", async () => {
    const resource = uniqueName("failing");
    const fenced = store(pipelined);
    await fence(fenced, resource, 1n, append(resource, 1n));
    const attempt = fence(
      fenced,
      resource,
      2n,
      sqlStatements(
        { text: `INSERT INTO ${log} (resource, token) VALUES ($1, 2)`, values: [resource] },
        "SELECT 1 / 0",
      ),
    );
    await expect(attempt).rejects.toMatchObject({ code: "22012" }); // division_by_zero, from Postgres
    expect(await logged(resource)).toEqual([1n]);
    expect(await fenced.current(resource)).toBe(1n);
  });

  it("runs in a savepoint inside the caller's transaction, which a refusal leaves open", async () => {
    const resource = uniqueName("caller");
    const client = new pg.Client({ connectionString: PG_URL, pipeline: true });
    await client.connect();
    try {
      const fenced = new PostgresStore({ client, table: fenceTable });
      await client.query("BEGIN");
      await fence(fenced, resource, 7n, append(resource, 7n));
      await expect(fence(fenced, resource, 6n, append(resource, 6n))).rejects.toBeInstanceOf(StaleTokenError);
      await client.query(`INSERT INTO ${log} (resource, token) VALUES ($1, 8)`, [resource]); // still usable
      expect(await logged(resource)).toEqual([]); // nothing visible before the caller commits
      await client.query("COMMIT");
      expect(await logged(resource)).toEqual([7n, 8n]);
    } finally {
      await client.end();
    }
  });

  it("refuses what is not a statement when the write is made", () => {
    const bad = ["", "   ", { text: 42 }, { text: "SELECT $1", values: "x" }, null, 7];
    for (const statement of bad) {
      expect(() => sqlStatements(statement as never)).toThrow(
        expect.objectContaining({ code: "FENCE_BAD_ARGUMENT" }),
      );
    }
  });

  it("never applies a refused write while writers of both kinds race with interleaved tokens (property)", async () => {
    const fenced = store(pipelined);
    const writes = fc.array(fc.record({ token: fc.bigInt({ min: 0n, max: 20n }), asData: fc.boolean() }), {
      minLength: 1,
      maxLength: 12,
    });
    await fc.assert(
      fc.asyncProperty(writes, async (planned) => {
        const resource = uniqueName("property");
        const outcomes = await race(planned, ({ token, asData }) => {
          const write: (tx: pg.ClientBase) => Promise<unknown> = asData
            ? append(resource, token)
            : (tx) =>
                tx.query(`INSERT INTO ${log} (resource, token) VALUES ($1, $2)`, [
                  resource,
                  token.toString(),
                ]);
          return fence(fenced, resource, token, write);
        });
        const highest = expectOnlyAcceptedApplied(await logged(resource), outcomes);
        expect(await fenced.current(resource)).toBe(highest);
      }),
      { numRuns: 25 },
    );
  });
});
