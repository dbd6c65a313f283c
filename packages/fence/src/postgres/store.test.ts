import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { describeFenceContract, MALFORMED_RESOURCES, MALFORMED_TOKENS } from "../contract/contract.js";
import { fence } from "../fence.js";
import { postgresFixture } from "../testing/fixtures.js";
import { PG_URL, type PgSandbox, pgSandbox, selectTokens, uniqueName } from "../testing/sandbox.js";
import { createFenceTable, PostgresStore } from "./index.js";

describeFenceContract("postgres", postgresFixture);

describe("PostgresStore", () => {
  let sandbox: PgSandbox;
  let store: PostgresStore;
  let log: string;
  const logged = (resource: string) =>
    selectTokens(sandbox.pool, `SELECT token::text AS token FROM ${log} WHERE resource = $1 ORDER BY seq`, [
      resource,
    ]);

  beforeAll(async () => {
    sandbox = await pgSandbox(4);
    await createFenceTable(sandbox.pool, sandbox.table("fence"));
    log = sandbox.table("log");
    await sandbox.pool.query(
      `CREATE TABLE ${log} (seq bigserial, resource text NOT NULL, token numeric(20, 0) NOT NULL)`,
    );
    store = new PostgresStore({ pool: sandbox.pool, table: sandbox.table("fence") });
  });
  afterAll(() => sandbox?.close());

  const insertLog = (tx: pg.ClientBase, resource: string, token: bigint) =>
    tx.query(`INSERT INTO ${log} (resource, token) VALUES ($1, $2)`, [resource, token.toString()]);

  it("makes a stale writer wait for the newer open transaction, then refuses it", async () => {
    const resource = uniqueName("wait");
    let commitNewer!: () => void;
    const gate = new Promise<void>((resolve) => {
      commitNewer = resolve;
    });
    let newerInside!: () => void;
    const inside = new Promise<void>((resolve) => {
      newerInside = resolve;
    });
    const newer = fence(store, resource, 10n, async (tx) => {
      await insertLog(tx, resource, 10n);
      newerInside();
      await gate;
    });
    await inside;
    let staleSettled = false;
    const stale = fence(store, resource, 9n, (tx) => insertLog(tx, resource, 9n));
    const markSettled = () => {
      staleSettled = true;
    };
    stale.then(markSettled, markSettled);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(staleSettled).toBe(false); // blocked on the fence row lock
    commitNewer();
    await newer;
    await expect(stale).rejects.toMatchObject({
      code: "FENCE_STALE_TOKEN",
      presentedToken: 9n,
      currentToken: 10n,
    });
    expect(await logged(resource)).toEqual([10n]);
  });

  it("rolls back statements an async write already ran before it threw", async () => {
    const resource = uniqueName("rollback");
    await fence(store, resource, 1n, (tx) => insertLog(tx, resource, 1n));
    const attempt = fence(store, resource, 2n, async (tx) => {
      await insertLog(tx, resource, 2n);
      await tx.query("SELECT 1/0"); // fails inside the transaction
    });
    await expect(attempt).rejects.toThrow(/division by zero/);
    expect(await logged(resource)).toEqual([1n]);
    expect(await store.current(resource)).toBe(1n);
  });

  it("reports a write that swallowed a failed statement, since COMMIT then silently rolls back", async () => {
    const resource = uniqueName("swallowed");
    const attempt = fence(store, resource, 3n, async (tx) => {
      await insertLog(tx, resource, 3n);
      await tx.query("SELECT 1/0").catch(() => "ignored");
      return "looks fine";
    });
    await expect(attempt).rejects.toMatchObject({ code: "FENCE_WRITE_FAILED" });
    expect(await logged(resource)).toEqual([]);
    expect(await store.current(resource)).toBeUndefined();
  });

  it("gives the connection back to the pool on success, stale, and failure", async () => {
    const single = new pg.Pool({ connectionString: PG_URL, max: 1 });
    try {
      const oneConnection = new PostgresStore({ pool: single, table: sandbox.table("fence") });
      const resource = uniqueName("release");
      await fence(oneConnection, resource, 5n, () => "ok");
      await expect(fence(oneConnection, resource, 4n, () => "stale")).rejects.toThrow(/stale/);
      await expect(
        fence(oneConnection, resource, 6n, () => {
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      await expect(fence(oneConnection, resource, 6n, (tx) => tx.query("SELEC"))).rejects.toThrow(/syntax/);
      // With max 1, a leaked connection would make this call hang until the test times out.
      await expect(fence(oneConnection, resource, 7n, () => "still usable")).resolves.toBe("still usable");
      expect(single.totalCount).toBe(1);
      expect(single.idleCount).toBe(1);
      expect(await oneConnection.current(resource)).toBe(7n);
    } finally {
      await single.end();
    }
  });

  it("queues concurrent calls on a single pg.Client instead of interleaving transactions", async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const shared = new PostgresStore({ client, table: sandbox.table("fence") });
      const resource = uniqueName("client");
      const tokens = [3n, 1n, 4n, 1n, 5n, 9n, 2n, 6n];
      const outcomes = await Promise.allSettled(
        tokens.map((token) => fence(shared, resource, token, (tx) => insertLog(tx, resource, token))),
      );
      // Arrival order is preserved, so exactly the running maxima are accepted.
      expect(outcomes.map((outcome) => outcome.status)).toEqual([
        "fulfilled",
        "rejected",
        "fulfilled",
        "rejected",
        "fulfilled",
        "fulfilled",
        "rejected",
        "rejected",
      ]);
      expect(await logged(resource)).toEqual([3n, 4n, 5n, 9n]);
      expect(await shared.current(resource)).toBe(9n);
    } finally {
      await client.end();
    }
  });

  it("stores resource names verbatim, quotes and backslashes included", async () => {
    const resource = `o'rder\\x"; DROP TABLE x; --${uniqueName("")}`;
    await fence(store, resource, 42n, () => undefined);
    expect(await store.current(resource)).toBe(42n);
    const { rows } = await sandbox.pool.query(`SELECT resource FROM ${store.table} WHERE token = 42`);
    expect(rows.map((row) => row.resource)).toContain(resource);
  });

  it("refuses malformed input called directly, so SQL in a token never runs and nothing is written", async () => {
    const victim = sandbox.table(uniqueName("victim"));
    await sandbox.pool.query(`CREATE TABLE ${victim} (id int)`);
    const resource = uniqueName("injection");
    const fenceRows = async () =>
      (await sandbox.pool.query(`SELECT count(*)::int AS n FROM ${store.table}`)).rows[0].n;
    const rowsBefore = await fenceRows();
    const injection = `1); DROP TABLE ${victim}; COMMIT; --`;
    const write = vi.fn((tx: pg.ClientBase) => insertLog(tx, resource, 1n));
    for (const bad of [injection, ...MALFORMED_TOKENS]) {
      await expect(store.fence(resource, bad as bigint, write)).rejects.toMatchObject({
        code: "FENCE_BAD_TOKEN",
      });
    }
    for (const bad of MALFORMED_RESOURCES) {
      await expect(store.fence(bad as string, 1n, write)).rejects.toMatchObject({
        code: "FENCE_BAD_RESOURCE",
      });
    }
    expect(write).not.toHaveBeenCalled();
    const { rows } = await sandbox.pool.query("SELECT to_regclass($1) IS NOT NULL AS present", [victim]);
    expect(rows[0].present).toBe(true);
    expect(await fenceRows()).toBe(rowsBefore);
    expect(await logged(resource)).toEqual([]);
  });

  it("refuses unusable options", () => {
    expect(() => new PostgresStore({})).toThrow(expect.objectContaining({ code: "FENCE_BAD_OPTIONS" }));
    expect(() => new PostgresStore({ pool: sandbox.pool, table: "fence; DROP" })).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_IDENTIFIER" }),
    );
  });
});
