/**
 * The recipe on real components: a lockd process, PostgreSQL, and two candidates with lock clients of
 * their own. Candidate A reaches lockd through a FaultProxy, so the test can cut it off (as a long GC
 * pause or a partition would) while its work goes on believing it leads.
 */
import { randomBytes } from "node:crypto";
import { LockClient } from "@lock/client";
import { StaleTokenError } from "@lock/fence";
import { createFenceTable, type PostgresFenceTx, postgresStore } from "@lock/fence/postgres";
import { FaultProxy, LockdProcess } from "@lock/testkit";
import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { leaderLoop, type Term } from "./leader.js";

const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A schema of its own on the shared database, with the fence table and the leader's writes. */
async function database(): Promise<pg.Pool> {
  const schema = `leader_election_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  await admin.query(`CREATE SCHEMA "${schema}"`);
  cleanup.push(async () => {
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    await admin.end();
  });
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4, options: `-c search_path=${schema}` });
  cleanup.push(() => pool.end());
  await createFenceTable(pool);
  await pool.query(
    `CREATE TABLE writes (seq bigserial PRIMARY KEY, node text NOT NULL, term numeric(20, 0) NOT NULL)`,
  );
  return pool;
}

function write(tx: PostgresFenceTx, node: string, term: Term): Promise<unknown> {
  return tx.query("INSERT INTO writes (node, term) VALUES ($1, $2)", [node, term.term.toString()]);
}

/** A promise and its resolve function (the ES2023 lib this repository compiles against has no Promise.withResolvers). */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

it("a deposed leader's late write is refused once the next leader, with a higher term, has written", async () => {
  const pool = await database();
  const store = postgresStore({ pool });
  const lockd = await LockdProcess.start();
  cleanup.push(() => lockd.dispose());
  const proxy = await FaultProxy.start(lockd.port);
  cleanup.push(() => proxy.close());
  const clientA = new LockClient({ servers: [proxy.address] });
  const clientB = new LockClient({ servers: [lockd.address] });
  cleanup.push(
    () => clientA.close(),
    () => clientB.close(),
  );
  const stop = new AbortController();
  cleanup.push(() => stop.abort());
  const options = { store, key: "leader:reports", leaseMs: 1_000, signal: stop.signal };

  const aWrote = deferred<Term>();
  const aWakes = deferred();
  const aLate = deferred<unknown>();
  const loopA = leaderLoop({ ...options, client: clientA }, async (term) => {
    await term.fenced((tx) => write(tx, "a", term));
    aWrote.resolve(term);
    // Paused (a long GC, a frozen VM): it does not look at term.signal while it is.
    await aWakes.promise;
    try {
      await term.fenced((tx) => write(tx, "a-late", term));
      aLate.resolve("written");
    } catch (error) {
      aLate.resolve(error);
      throw error;
    }
  });
  const aTerm = await aWrote.promise;

  const bWrote = deferred<Term>();
  const loopB = leaderLoop({ ...options, client: clientB }, async (term) => {
    await term.fenced((tx) => write(tx, "b", term));
    bWrote.resolve(term);
    await new Promise((resolve) => term.signal.addEventListener("abort", resolve, { once: true }));
  });

  // A is cut off from lockd: its lease runs out there, and B (campaigning meanwhile) is elected.
  proxy.cut();
  const bTerm = await bWrote.promise;
  expect(bTerm.term).toBeGreaterThan(aTerm.term);

  // A wakes up still believing it leads, and writes: PostgreSQL refuses the old term.
  aWakes.resolve();
  expect(await aLate.promise).toBeInstanceOf(StaleTokenError);
  const { rows } = await pool.query<{ node: string; term: string }>(
    "SELECT node, term::text FROM writes ORDER BY seq",
  );
  expect(rows).toEqual([
    { node: "a", term: aTerm.term.toString() },
    { node: "b", term: bTerm.term.toString() },
  ]);

  // Stopping: B resigns, A (campaigning again, still cut off) gives up its campaign.
  stop.abort();
  proxy.heal();
  await Promise.all([loopA, loopB]);
});
