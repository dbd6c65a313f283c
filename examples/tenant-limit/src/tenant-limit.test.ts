/**
 * The recipe on real components: a lockd process, PostgreSQL, and four pg-boss workers (instances of
 * their own, each with its own lock client, as four worker processes would be) whose loops together
 * take more jobs at once than a tenant may run.
 */
import { expect, it } from "vitest";
import { perTenant, type TenantJob, tenantKey } from "./tenant-limit.js";
import { mostAtOnce, slotViolations } from "./testing/job-events.js";
import { TenantTracker } from "./testing/tenant-tracker.js";
import { worldPerTest } from "./testing/world.js";

const TENANTS = ["acme", "globex", "initech"];
const JOBS_PER_TENANT = 20;
const PERMITS = 2;
const WORKERS = 4;
/** Loops per worker: above PERMITS, so one worker alone could run more of a tenant's jobs than allowed. */
const LOOPS_PER_WORKER = 3;
const QUEUE = "reports";

const newWorld = worldPerTest();

it(`runs at most ${PERMITS} jobs of a tenant at once across ${WORKERS} workers, and every job`, async () => {
  const world = await newWorld();
  const { store } = world;
  const jobs = JOBS_PER_TENANT * TENANTS.length;
  const tracker = new TenantTracker({ permits: PERMITS, loops: WORKERS * LOOPS_PER_WORKER, jobs });
  const first = await world.startBoss();
  await first.createQueue(QUEUE, { retryLimit: 0 });
  // Queued before any worker starts, so every loop takes a job at its first fetch.
  const sent = Array.from({ length: jobs }, (_, i) => ({ data: { tenant: TENANTS[i % TENANTS.length]! } }));
  await first.insert(QUEUE, sent);
  const bosses = [
    first,
    ...(await Promise.all(Array.from({ length: WORKERS - 1 }, () => world.startBoss()))),
  ];

  for (const boss of bosses) {
    const limit = { client: world.lockClient(), store, permits: PERMITS, leaseMs: 10_000 };
    const handler = perTenant<TenantJob>(limit, async (job, permit) => {
      const { tenant } = job.data;
      await permit.fenced((tx) => world.logEvent(tx, job.id, permit, "start"));
      tracker.started(tenant);
      await tracker.gate;
      await permit.fenced((tx) => world.logEvent(tx, job.id, permit, "end"));
      tracker.finished(tenant);
    });
    await boss.work<TenantJob>(
      QUEUE,
      { localConcurrency: LOOPS_PER_WORKER, pollingIntervalSeconds: 0.5 },
      async (batch) => {
        const { tenant } = batch[0]!.data;
        tracker.taken(tenant);
        try {
          await handler(batch);
        } catch (error) {
          tracker.fail(error);
          throw error;
        } finally {
          tracker.left(tenant);
        }
      },
    );
  }
  await tracker.done;
  // A graceful stop waits for the workers to mark their last jobs completed.
  await Promise.all(bosses.map((boss) => boss.stop({ graceful: true })));

  // The limit bit: 12 loops held jobs of 3 tenants, so some tenant had more than it could run.
  const atGate = [...tracker.atGate!.values()];
  expect(atGate.some(({ taken }) => taken > PERMITS)).toBe(true);
  for (const { taken, running } of atGate) expect(running).toBe(Math.min(taken, PERMITS));

  expect(await world.jobStates(QUEUE)).toEqual({ completed: jobs });
  const events = await world.events();
  expect(events).toHaveLength(2 * jobs);
  const most = mostAtOnce(events);
  for (const tenant of TENANTS) expect(most.get(tenantKey(tenant))).toBeLessThanOrEqual(PERMITS);
  // The saturated tenants ran exactly PERMITS at once, as the log shows too.
  for (const [tenant, { taken }] of tracker.atGate!) {
    if (taken >= PERMITS) expect(most.get(tenantKey(tenant))).toBe(PERMITS);
  }
  expect(new Set(events.map(({ slot }) => slot))).toEqual(new Set([0, 1]));
  expect(slotViolations(events)).toEqual([]);
  // Every job had a grant of its own.
  expect(new Set(events.map(({ token }) => token)).size).toBe(jobs);
});
