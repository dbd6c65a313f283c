/**
 * The recipe on real components: a lockd process, PostgreSQL (a schema of its own, dropped after),
 * and two lock clients, as two processes of the application would have.
 */
import { randomBytes } from "node:crypto";
import { LockClient } from "@lock/client";
import { StaleTokenError } from "@lock/fence";
import { createFenceTable } from "@lock/fence/postgres";
import { LockdProcess } from "@lock/testkit";
import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { type Transfer, transfer, writeTransfer } from "./transfer.js";

const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A schema of its own on the shared database, with the fence table and the accounts. */
async function database(balances: Record<string, number>): Promise<pg.Pool> {
  const schema = `account_transfer_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  await admin.query(`CREATE SCHEMA "${schema}"`);
  cleanup.push(async () => {
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    await admin.end();
  });
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4, options: `-c search_path=${schema}` });
  cleanup.push(() => pool.end());
  await createFenceTable(pool);
  await pool.query("CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL)");
  for (const [id, balance] of Object.entries(balances)) {
    await pool.query("INSERT INTO accounts VALUES ($1, $2)", [id, balance]);
  }
  return pool;
}

async function balances(pool: pg.Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ id: string; balance: string }>(
    "SELECT id, balance::text FROM accounts",
  );
  return Object.fromEntries(rows.map((row) => [row.id, Number(row.balance)]));
}

async function lockd(): Promise<{ clientA: LockClient; clientB: LockClient }> {
  const server = await LockdProcess.start();
  cleanup.push(() => server.dispose());
  const clientA = new LockClient({ servers: [server.address] });
  const clientB = new LockClient({ servers: [server.address] });
  cleanup.push(
    () => clientA.close(),
    () => clientB.close(),
  );
  return { clientA, clientB };
}

it("transfers A→B and B→A at once from two clients never deadlock, and every one is applied", async () => {
  const pool = await database({ alice: 1_000, bob: 1_000 });
  const { clientA, clientB } = await lockd();
  // A deadlock would show as LockTimeoutError here, before the test times out (20 s).
  const options = { pool, leaseMs: 10_000, waitMs: 10_000 };
  const rounds = 150;
  const runs: Promise<void>[] = [];
  for (let i = 0; i < rounds; i++) {
    runs.push(transfer({ ...options, client: clientA }, { from: "alice", to: "bob", amount: 3 }));
    runs.push(transfer({ ...options, client: clientB }, { from: "bob", to: "alice", amount: 2 }));
  }
  await Promise.all(runs);
  // Every transfer applied exactly once, none lost to a race: the total is conserved.
  expect(await balances(pool)).toEqual({
    alice: 1_000 - rounds * 3 + rounds * 2,
    bob: 1_000 + rounds * 3 - rounds * 2,
  });
});

it("a transfer that stalled past its lease is refused whole once a later transfer wrote one of its accounts", async () => {
  const pool = await database({ alice: 100, bob: 100, carol: 100 });
  const { clientA, clientB } = await lockd();
  const stale: Transfer = { from: "alice", to: "bob", amount: 10 };

  // A takes alice and bob, then stalls (a GC pause, a frozen VM) before writing, past its lease.
  const staleLock = await clientA.acquireAll(["{acct}:alice", "{acct}:bob"], { leaseMs: 300 });
  // B's transfer of bob's money to carol waits for bob, and is granted when A's lease runs out.
  const live = await clientB.acquireAll(["{acct}:bob", "{acct}:carol"], { leaseMs: 10_000 });
  expect(live.token).toBeGreaterThan(staleLock.token);
  await writeTransfer(pool, live.token, { from: "bob", to: "carol", amount: 50 });
  await live.release();

  // A wakes and writes with its old token. alice's guard passes (nobody later wrote alice) and her
  // debit runs, but bob's guard refuses: the transaction rolls back, alice's debit with it.
  await expect(writeTransfer(pool, staleLock.token, stale)).rejects.toBeInstanceOf(StaleTokenError);
  expect(await balances(pool)).toEqual({ alice: 100, bob: 50, carol: 150 });
  expect(staleLock.held).toBe(false);
});

it("refuses a transfer from an account to itself, before touching the database", async () => {
  const pool = await database({ alice: 100 });
  await expect(writeTransfer(pool, 1n, { from: "alice", to: "alice", amount: 5 })).rejects.toBeInstanceOf(
    RangeError,
  );
  expect(await balances(pool)).toEqual({ alice: 100 });
});
