import { type ConformanceCase, LEASE_MS, WAIT_MS } from "../case.js";
import {
  expectExtended,
  expectFailure,
  expectGranted,
  expectGrantedAfter,
  expectReleased,
  nodeCounts,
} from "../checks.js";

/** The verbs on one node, one rule each: grant, extend, release, a wait that runs out, try-acquire, FIFO. */
export const basicCases: readonly ConformanceCase[] = [
  {
    name: "grant-extend-release",
    rule: "an acquire of a free key is granted with a token; extend and release with it succeed; the next grant's token is greater",
    section: "#release-and-extend",
    async run(ctx) {
      const lockd = await ctx.single();
      const client = await ctx.client([lockd.address]);
      const key = ctx.key("k");
      const first = expectGranted(await client.acquire(key, LEASE_MS, WAIT_MS), "acquire of a free key");
      expectExtended(await client.extend(first.lock, LEASE_MS), "extend of the held lock");
      expectReleased(await client.release(first.lock), true, "release of the held lock");
      const second = expectGrantedAfter(
        await client.acquire(key, LEASE_MS, WAIT_MS),
        first,
        "acquire after the release",
      );
      expectReleased(await client.release(second.lock), true, "release of the second lock");
    },
  },
  {
    name: "wait-timeout",
    rule: "an acquire whose wait runs out reports a timeout, and nothing stays queued or granted for it",
    section: "#acquiring-ids-waits-and-retries",
    async run(ctx) {
      const lockd = await ctx.single();
      const [holder, waiter] = await Promise.all([ctx.client([lockd.address]), ctx.client([lockd.address])]);
      const key = ctx.key("k");
      const held = expectGranted(await holder.acquire(key, LEASE_MS, WAIT_MS), "the holder's acquire");
      expectFailure(
        await waiter.acquire(key, LEASE_MS, 200),
        "timeout",
        "an acquire of a held key with a 200 ms wait",
      );
      await ctx.until("the timed-out acquire is off the server's queue", async () => {
        return (await nodeCounts(lockd.port)).waiters === 0;
      });
      expectReleased(await holder.release(held.lock), true, "the holder's release");
    },
  },
  {
    name: "try-acquire-busy",
    rule: "a try-acquire of a held key reports busy at once; once the key is free it is granted",
    section: "#acquiring-ids-waits-and-retries",
    async run(ctx) {
      const lockd = await ctx.single();
      const [holder, trier] = await Promise.all([ctx.client([lockd.address]), ctx.client([lockd.address])]);
      const key = ctx.key("k");
      const held = expectGranted(await holder.acquire(key, LEASE_MS, WAIT_MS), "the holder's acquire");
      expectFailure(await trier.tryAcquire(key, LEASE_MS), "busy", "a try-acquire of a held key");
      expectReleased(await holder.release(held.lock), true, "the holder's release");
      const taken = expectGrantedAfter(
        await trier.tryAcquire(key, LEASE_MS),
        held,
        "a try-acquire of the freed key",
      );
      expectReleased(await trier.release(taken.lock), true, "release of the try-acquired lock");
    },
  },
  {
    name: "fifo-handoff",
    rule: "waiters are granted in the order their acquires arrived, each with a greater token, between two client instances",
    section: "#acquiring-ids-waits-and-retries",
    async run(ctx) {
      const lockd = await ctx.single();
      const [first, second] = await Promise.all([ctx.client([lockd.address]), ctx.client([lockd.address])]);
      const key = ctx.key("k");
      const queued = async (waiters: number) =>
        ctx.until(`${waiters} acquire(s) queued for ${key}`, async () => {
          return (await nodeCounts(lockd.port)).waiters === waiters;
        });
      const held = expectGranted(await first.acquire(key, LEASE_MS, WAIT_MS), "the first holder's acquire");
      const secondWaits = second.acquire(key, LEASE_MS, WAIT_MS);
      await queued(1);
      // The first instance queues again, behind the second: a new call, a new request id.
      const firstWaitsAgain = first.acquire(key, LEASE_MS, WAIT_MS);
      await queued(2);
      expectReleased(await first.release(held.lock), true, "the first holder's release");
      const handedOn = expectGrantedAfter(await secondWaits, held, "the first waiter (instance 2)");
      expectReleased(await second.release(handedOn.lock), true, "instance 2's release");
      const last = expectGrantedAfter(
        await firstWaitsAgain,
        handedOn,
        "the second waiter (instance 1 again)",
      );
      expectReleased(await first.release(last.lock), true, "instance 1's final release");
    },
  },
];
