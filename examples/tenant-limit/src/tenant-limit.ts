/**
 * At most N jobs per tenant at once, across every pg-boss worker, each job's writes fenced by its
 * permit's slot. Before a job runs, its worker takes one of the N permits of the lockd semaphore
 * `tenant:<id>`, and gives it back when the job settles. lockd queues a tenant's waiting jobs in FIFO
 * order and gives each permit the lowest free slot, 0 to N-1. The job fences its writes on its slot's
 * resource, so a job that stalls past its lease (GC pause, frozen VM) cannot write once the job that
 * took over its slot has written.
 */
import type { Lock, LockClient } from "@lock/client";
import { fence, slotResource } from "@lock/fence";
import type { PostgresFenceTx, PostgresStore } from "@lock/fence/postgres";
import type { Job } from "pg-boss";

/** A job's data names the tenant it counts against: part of a lockd key, so no space. */
export interface TenantJob {
  readonly tenant: string;
}

export interface TenantLimitOptions {
  readonly client: LockClient;
  /** The fence's store, `postgresStore({ pool })`: the highest token each slot has written. */
  readonly store: PostgresStore;
  /** N. Every worker must ask for the same N: lockd refuses another with LIMIT_MISMATCH. */
  readonly permits: number;
  /** The permit's lease. With autoExtend the client renews it while the job runs. */
  readonly leaseMs: number;
  /** Renew the lease while the job runs (default true). */
  readonly autoExtend?: boolean;
  /**
   * How long a job waits for a permit (default 0: until it gets one). When it runs out the job
   * fails, and pg-boss retries it later (the queue's retryLimit and retryDelay).
   */
  readonly waitMs?: number;
}

/** What a job gets while it holds its permit. */
export interface TenantPermit {
  readonly lock: Lock;
  /** The permit's slot, 0 to N-1. No other live permit of the tenant has it. */
  readonly slot: number;
  /**
   * Aborts when the permit is lost (its lease ran out) or pg-boss gave up on the job (it expired, or
   * the worker is stopping). Pass it to the work, so the work stops too.
   */
  readonly signal: AbortSignal;
  /**
   * Runs `write` in one transaction if no later holder of this slot has written, and throws
   * StaleTokenError (nothing written) if one has.
   */
  fenced<T>(write: (tx: PostgresFenceTx) => Promise<T>): Promise<T>;
}

export type TenantJobRun<T extends TenantJob> = (job: Job<T>, permit: TenantPermit) => Promise<void>;

/** The semaphore a tenant's jobs share. */
export function tenantKey(tenant: string): string {
  return `tenant:${tenant}`;
}

/**
 * A pg-boss work handler that runs each job while it holds a permit of its tenant:
 * `boss.work(queue, options, perTenant(limit, run))`. The permit is released when `run` settles,
 * whether it returns or throws; a throw fails the job as usual.
 */
export function perTenant<T extends TenantJob>(
  options: TenantLimitOptions,
  run: TenantJobRun<T>,
): (jobs: Job<T>[]) => Promise<void> {
  return async (jobs) => {
    // A batch (batchSize > 1) takes one permit per job, one job after the other.
    for (const job of jobs) await runWithPermit(options, job, run);
  };
}

async function runWithPermit<T extends TenantJob>(
  { client, store, permits, leaseMs, autoExtend = true, waitMs = 0 }: TenantLimitOptions,
  job: Job<T>,
  run: TenantJobRun<T>,
): Promise<void> {
  const key = tenantKey(job.data.tenant);
  // job.signal withdraws the wait from lockd's queue if pg-boss gives up on the job meanwhile.
  const limit = { leaseMs, permits, autoExtend, waitMs, signal: job.signal };
  await client.withLock(key, limit, async (lock) => {
    if (lock.slot === undefined) throw new Error(`${key}: a permit without a slot`);
    // The slot, not the key: permits of one tenant are live together and their tokens interleave.
    const resource = slotResource(key, lock.slot);
    await run(job, {
      lock,
      slot: lock.slot,
      signal: AbortSignal.any([lock.signal, job.signal]),
      fenced: (write) => fence(store, resource, lock, write),
    });
  });
}
