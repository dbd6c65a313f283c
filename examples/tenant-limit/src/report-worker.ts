import type { LockClient } from "@lock/client";
import { postgresStore } from "@lock/fence/postgres";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { perTenant, type TenantJob } from "./tenant-limit.js";

export interface ReportJob extends TenantJob {
  readonly month: string; // "2026-04"
}

/**
 * This process's worker for the "reports" queue: up to 8 jobs at once here, and at most 5 of any one
 * tenant at once across every worker process. Resolves with pg-boss's worker id.
 */
export function workReports(boss: PgBoss, client: LockClient, pool: pg.Pool): Promise<string> {
  const limit = { client, store: postgresStore({ pool }), permits: 5, leaseMs: 30_000 };
  const run = perTenant<ReportJob>(limit, async (job, permit) => {
    const { tenant, month } = job.data;
    // The slow part reads only: no transaction, no fence.
    const { rows } = await pool.query<{ total: string }>(
      "SELECT coalesce(sum(amount), 0)::text AS total FROM invoices WHERE tenant = $1 AND month = $2",
      [tenant, month],
    );
    permit.signal.throwIfAborted(); // the permit was lost, or pg-boss gave up on the job
    // The write, fenced on the permit's slot: refused if this job stalled past its lease and the job
    // that took over its slot has written since.
    await permit.fenced((tx) =>
      tx.query(
        `INSERT INTO reports (tenant, month, total) VALUES ($1, $2, $3)
         ON CONFLICT (tenant, month) DO UPDATE SET total = excluded.total`,
        [tenant, month, rows[0]!.total],
      ),
    );
  });
  return boss.work<ReportJob>("reports", { localConcurrency: 8 }, run);
}
