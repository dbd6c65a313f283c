/**
 * The real components the recipe's tests run on: a lockd process, pg-boss in a schema of its own and
 * the application's tables (the fence table, a log of job events) in another, both with random names
 * on the shared PostgreSQL and dropped on close. Workers are pg-boss instances of their own, each with
 * its own lock client, as separate worker processes would have.
 */
import { randomBytes } from "node:crypto";
import { LockClient } from "@lock/client";
import {
  createFenceTable,
  type PostgresFenceTx,
  type PostgresStore,
  postgresStore,
} from "@lock/fence/postgres";
import { LockdProcess } from "@lock/testkit";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { afterEach } from "vitest";
import type { TenantPermit } from "../tenant-limit.js";
import type { JobEvent } from "./job-events.js";

export const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export interface RecipeWorld {
  readonly lockd: LockdProcess;
  /** The application's pool: the fence store's and the event log's. */
  readonly pool: pg.Pool;
  readonly store: PostgresStore;
  /** pg-boss's schema, to read its job states. */
  readonly bossSchema: string;
  /** A started pg-boss instance (a worker's), stopped on close. */
  startBoss(): Promise<PgBoss>;
  /** A lock client on the lockd, closed on close. */
  lockClient(): LockClient;
  /** Logs that `jobId` passed `kind` holding `permit`, in the fenced transaction `tx`. */
  logEvent(tx: PostgresFenceTx, jobId: string, permit: TenantPermit, kind: JobEvent["kind"]): Promise<void>;
  /** Every logged event, in the order Postgres numbered them. */
  events(): Promise<JobEvent[]>;
  /** pg-boss's count of jobs per state for `queue`, e.g. { completed: 60 }. */
  jobStates(queue: string): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export async function recipeWorld(): Promise<RecipeWorld> {
  const name = `tenant_limit_${randomBytes(6).toString("hex")}`;
  const appSchema = `${name}_app`;
  const bossSchema = `${name}_boss`;
  const lockd = await LockdProcess.start();
  // The application's tables are found through search_path, as an application's would be: its code
  // and the fence's defaults name no schema.
  const pool = new pg.Pool({ connectionString: PG_URL, max: 8, options: `-c search_path=${appSchema}` });
  const bosses: PgBoss[] = [];
  const clients: LockClient[] = [];
  await pool.query(`CREATE SCHEMA "${appSchema}"`);
  await createFenceTable(pool);
  // seq is taken inside each fenced transaction, so it orders the events as the jobs passed them.
  await pool.query(`CREATE TABLE job_events (
    seq bigserial PRIMARY KEY, job_id text NOT NULL, key text NOT NULL, slot int NOT NULL,
    token numeric(20, 0) NOT NULL, kind text NOT NULL CHECK (kind IN ('start', 'end')))`);
  return {
    lockd,
    pool,
    store: postgresStore({ pool }),
    bossSchema,
    async startBoss() {
      // A small pool each (4 workers share the database with other test runs); LISTEN/NOTIFY wakes a
      // worker when a job is sent instead of at its next poll.
      const boss = new PgBoss({
        connectionString: PG_URL,
        schema: bossSchema,
        max: 4,
        schedule: false,
        useListenNotify: true,
        // Job spies: a test awaits a job's state instead of polling for it.
        __test__enableSpies: true,
      });
      // pg-boss emits its errors; an unhandled `error` event would crash the test process.
      boss.on("error", (error) => console.error("pg-boss:", error));
      bosses.push(boss);
      return boss.start();
    },
    lockClient() {
      const client = new LockClient({ servers: [lockd.address] });
      clients.push(client);
      return client;
    },
    async logEvent(tx, jobId, permit, kind) {
      await tx.query(`INSERT INTO job_events (job_id, key, slot, token, kind) VALUES ($1, $2, $3, $4, $5)`, [
        jobId,
        permit.lock.key,
        permit.slot,
        permit.lock.token.toString(),
        kind,
      ]);
    },
    async events() {
      const { rows } = await pool.query<{
        seq: string;
        job_id: string;
        key: string;
        slot: number;
        token: string;
        kind: JobEvent["kind"];
      }>(`SELECT seq, job_id, key, slot, token::text, kind FROM job_events ORDER BY seq`);
      return rows.map((row) => ({
        seq: Number(row.seq),
        jobId: row.job_id,
        key: row.key,
        slot: row.slot,
        token: BigInt(row.token),
        kind: row.kind,
      }));
    },
    async jobStates(queue) {
      const { rows } = await pool.query<{ state: string; count: number }>(
        `SELECT state, count(*)::int AS count FROM "${bossSchema}".job WHERE name = $1 GROUP BY state`,
        [queue],
      );
      return Object.fromEntries(rows.map((row) => [row.state, row.count]));
    },
    async close() {
      try {
        await Promise.all(bosses.map((boss) => boss.stop({ graceful: false })));
        await Promise.all(clients.map((client) => client.close()));
        await pool.query(`DROP SCHEMA IF EXISTS "${appSchema}" CASCADE`);
        await pool.query(`DROP SCHEMA IF EXISTS "${bossSchema}" CASCADE`);
      } finally {
        await pool.end();
        await lockd.dispose();
      }
    },
  };
}

/** Registers an afterEach that closes the test's world; returns the function that makes it. */
export function worldPerTest(): () => Promise<RecipeWorld> {
  let current: RecipeWorld | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async () => {
    current = await recipeWorld();
    return current;
  };
}
