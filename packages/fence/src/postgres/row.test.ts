import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareBigints } from "../contract/contract.js";
import { outcomeOf, runKleppmannScenario, simulatedGrants } from "../contract/kleppmann.js";
import { BOUNDARY_TOKENS, shuffled } from "../contract/tokens.js";
import { StaleTokenError } from "../errors.js";
import { type PgSandbox, pgSandbox, selectTokens } from "../testing/sandbox.js";
import { fenceColumnSql, fenceRow } from "./index.js";

describe("fenceRow(): a fence column on the protected row", () => {
  let sandbox: PgSandbox;
  let orders: string;
  let nextId = 1;
  const newOrder = async (token: bigint | null = null) => {
    const id = nextId++;
    await sandbox.pool.query(`INSERT INTO ${orders} (id, status, fence_token) VALUES ($1, 'new', $2)`, [
      id,
      token?.toString() ?? null,
    ]);
    return id;
  };
  const readOrder = async (id: number) => {
    const { rows } = await sandbox.pool.query(
      `SELECT status, fence_token::text AS token FROM ${orders} WHERE id = $1`,
      [id],
    );
    return rows[0] as { status: string; token: string | null };
  };

  /** The tokens of the row's applied updates, in order (recorded by a trigger). */
  const history = (id: number) =>
    selectTokens(
      sandbox.pool,
      `SELECT token::text AS token FROM ${sandbox.table("order_history")} WHERE id = $1 ORDER BY seq`,
      [id],
    );

  beforeAll(async () => {
    sandbox = await pgSandbox(5);
    orders = sandbox.table("orders");
    await sandbox.pool.query(`CREATE TABLE ${orders} (id int PRIMARY KEY, status text NOT NULL)`);
    await sandbox.pool.query(fenceColumnSql(orders));
    // Records every applied update in order, to check the applied sequence under concurrency.
    const history = sandbox.table("order_history");
    await sandbox.pool.query(`CREATE TABLE ${history} (seq bigserial, id int, token numeric(20, 0))`);
    await sandbox.pool.query(`
      CREATE FUNCTION ${sandbox.table("record")}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${history} (id, token) VALUES (NEW.id, NEW.fence_token); RETURN NEW; END $$;
      CREATE TRIGGER record AFTER UPDATE ON ${orders} FOR EACH ROW EXECUTE FUNCTION ${sandbox.table("record")}();`);
  });
  afterAll(() => sandbox?.close());

  it("writes and records the token when it is not lower, including the same token again", async () => {
    const id = await newOrder();
    expect(
      await fenceRow(sandbox.pool, { table: orders, key: { id }, set: { status: "paid" }, token: 5n }),
    ).toBe(1);
    expect(
      await fenceRow(sandbox.pool, { table: orders, key: { id }, set: { status: "shipped" }, token: "5" }),
    ).toBe(1);
    expect(await readOrder(id)).toEqual({ status: "shipped", token: "5" });
  });

  it("refuses a stale token with the row's token, writing nothing", async () => {
    const id = await newOrder(9n);
    const attempt = fenceRow(sandbox.pool, {
      table: orders,
      key: { id },
      set: { status: "late" },
      token: 8n,
    });
    await expect(attempt).rejects.toBeInstanceOf(StaleTokenError);
    await expect(attempt).rejects.toMatchObject({
      presentedToken: 8n,
      currentToken: 9n,
      resource: `${orders}(id=${id})`,
    });
    expect(await readOrder(id)).toEqual({ status: "new", token: "9" });
  });

  it("tells a missing row apart from a stale token", async () => {
    await expect(
      fenceRow(sandbox.pool, { table: orders, key: { id: -1 }, set: { status: "x" }, token: 1n }),
    ).rejects.toMatchObject({ code: "FENCE_ROW_MISSING" });
  });

  it("compares the column numerically across the u64 boundaries", async () => {
    for (const first of BOUNDARY_TOKENS) {
      for (const second of BOUNDARY_TOKENS) {
        const id = await newOrder(first);
        const attempt = fenceRow(sandbox.pool, { table: orders, key: { id }, set: {}, token: second });
        if (second >= first) await expect(attempt).resolves.toBe(1);
        else await expect(attempt).rejects.toMatchObject({ code: "FENCE_STALE_TOKEN", currentToken: first });
      }
    }
  });

  it("refuses options that would update the wrong rows or the token column", async () => {
    const bad = [
      { table: orders, key: {}, set: { status: "x" }, token: 1n },
      { table: orders, key: { id: null }, set: { status: "x" }, token: 1n },
      { table: orders, key: { id: 1 }, set: { fence_token: "9" }, token: 1n },
    ];
    for (const options of bad) {
      await expect(fenceRow(sandbox.pool, options)).rejects.toMatchObject({ code: "FENCE_BAD_OPTIONS" });
    }
    await expect(
      fenceRow(sandbox.pool, { table: orders, key: { "id; --": 1 }, set: {}, token: 1n }),
    ).rejects.toMatchObject({ code: "FENCE_BAD_IDENTIFIER" });
    await expect(
      fenceRow(sandbox.pool, { table: orders, key: { id: 1 }, set: {}, token: 1 as never }),
    ).rejects.toMatchObject({
      code: "FENCE_BAD_TOKEN",
    });
  });

  it("refuses client 1's late update after client 2's (Kleppmann)", async () => {
    const id = await newOrder();
    await runKleppmannScenario({
      getToken: simulatedGrants(2n ** 64n - 2n),
      write: (token) =>
        outcomeOf(
          fenceRow(sandbox.pool, { table: orders, key: { id }, set: { status: `by ${token}` }, token }),
        ),
      applied: () => history(id),
    });
  });

  it("never applies a lower token after a higher one under parallel updates", async () => {
    const id = await newOrder();
    const tokens = shuffled(Array.from({ length: 24 }, (_, i) => 2n ** 63n + BigInt(i)));
    await Promise.all(
      tokens.map((token) =>
        fenceRow(sandbox.pool, { table: orders, key: { id }, set: { status: `${token}` }, token }).catch(
          (error) => {
            if (!(error instanceof StaleTokenError)) throw error;
          },
        ),
      ),
    );
    const applied = await history(id);
    expect(applied).toEqual([...applied].sort(compareBigints));
    expect((await readOrder(id)).token).toBe((2n ** 63n + 23n).toString());
  });
});
