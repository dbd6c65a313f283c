/**
 * A job that stalls past its permit's lease (a GC pause, a frozen VM; here: a worker without
 * autoExtend that waits out its lease) loses its slot to the next job of its tenant, and its late
 * write is refused by the fence, while the job that took the slot writes. Real lockd, PostgreSQL and
 * pg-boss; every step waits for an event (a job started, a lease ran out, a write landed).
 */
import type { Lock } from "@lock/client";
import { StaleTokenError } from "@lock/fence";
import { expect, it } from "vitest";
import { perTenant, type TenantJob, type TenantPermit } from "./tenant-limit.js";
import { worldPerTest } from "./testing/world.js";

/** holder: keeps slot 0 throughout; stalled: takes slot 1 and outlives its lease; successor: takes slot 1 next. */
type Role = "holder" | "stalled" | "successor";
interface RoleJob extends TenantJob {
  readonly role: Role;
}

/** A promise with its resolve function, for one event. */
function event<T = void>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });

const newWorld = worldPerTest();

it("refuses the late write of a job that stalled past its lease; the job that took its slot writes", async () => {
  const world = await newWorld();
  const { store } = world;
  const boss = await world.startBoss();
  // Two queues share one tenant limit; the second one's worker does not extend its leases.
  await boss.createQueue("reports", { retryLimit: 0, notify: true });
  await boss.createQueue("reports-unextended", { retryLimit: 0, notify: true });
  const started = { holder: event<Lock>(), stalled: event<Lock>(), successor: event<Lock>() };
  const successorEnded = event();
  const holderMayEnd = event();
  const lateWrite = event<unknown>();
  const limit = { client: world.lockClient(), store, permits: 2 };
  const logStart = async (job: { id: string; data: RoleJob }, permit: TenantPermit) => {
    await permit.fenced((tx) => world.logEvent(tx, job.id, permit, "start"));
    started[job.data.role].resolve(permit.lock);
  };

  await boss.work<RoleJob>(
    "reports",
    { localConcurrency: 2 },
    perTenant<RoleJob>({ ...limit, leaseMs: 10_000 }, async (job, permit) => {
      await logStart(job, permit);
      if (job.data.role === "holder") await holderMayEnd.promise;
      await permit.fenced((tx) => world.logEvent(tx, job.id, permit, "end"));
      if (job.data.role === "successor") successorEnded.resolve();
    }),
  );
  await boss.work<RoleJob>(
    "reports-unextended",
    perTenant<RoleJob>({ ...limit, leaseMs: 1_000, autoExtend: false }, async (job, permit) => {
      await logStart(job, permit);
      // Stalled: it does nothing until its lease is gone and the next job of its slot has written.
      await aborted(permit.signal);
      await started.successor.promise;
      try {
        await permit.fenced((tx) => world.logEvent(tx, job.id, permit, "end"));
      } catch (error) {
        lateWrite.resolve(error);
        throw error;
      }
      lateWrite.resolve(undefined);
    }),
  );

  // One after the other, so that the slots are known: the holder gets 0, the stalled job 1.
  await boss.send("reports", { tenant: "acme", role: "holder" });
  const holder = await started.holder.promise;
  await boss.send("reports-unextended", { tenant: "acme", role: "stalled" });
  const stalled = await started.stalled.promise;
  // It waits for a permit until the stalled job's lease runs out, then gets the freed slot.
  await boss.send("reports", { tenant: "acme", role: "successor" });
  const successor = await started.successor.promise;
  expect([holder.slot, stalled.slot, successor.slot]).toEqual([0, 1, 1]);
  expect(successor.token).toBeGreaterThan(stalled.token);

  const refused = await lateWrite.promise;
  expect(refused).toBeInstanceOf(StaleTokenError);
  expect(refused).toMatchObject({ code: "FENCE_STALE_TOKEN", currentToken: successor.token });
  expect(stalled.state).toBe("lost");

  // The holder's permit is older than the successor's, but on another slot: it still writes.
  await successorEnded.promise;
  holderMayEnd.resolve();
  await boss.stop({ graceful: true });
  expect(await world.jobStates("reports")).toEqual({ completed: 2 });
  expect(await world.jobStates("reports-unextended")).toEqual({ failed: 1 });
  const log = (await world.events()).map(({ slot, token, kind }) => [slot, token, kind]);
  expect(log).toEqual([
    [0, holder.token, "start"],
    [1, stalled.token, "start"],
    [1, successor.token, "start"],
    [1, successor.token, "end"],
    [0, holder.token, "end"],
  ]);
});
