/** The follower on a real lockd: one client watches while two others campaign, lead and resign. */
import { LockClient } from "@lock/client";
import { LockdProcess } from "@lock/testkit";
import { afterEach, expect, it } from "vitest";
import { describeLeadership, leadershipChanges } from "./follow.js";

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

it("a follower sees no leader, A's term, then B's higher term when A resigns and B is elected", async () => {
  const lockd = await LockdProcess.start();
  cleanup.push(() => lockd.dispose());
  const newClient = () => {
    const client = new LockClient({ servers: [lockd.address] });
    cleanup.push(() => client.close());
    return client;
  };
  const [follower, clientA, clientB] = [newClient(), newClient(), newClient()];
  const stop = new AbortController();
  cleanup.push(() => stop.abort());
  const key = "leader:reports";
  const changes = leadershipChanges(follower, key, stop.signal);

  expect((await changes.next()).value).toBeUndefined();
  const leaderA = await clientA.elect(key, { leaseMs: 10_000 });
  expect((await changes.next()).value).toBe(leaderA.term);

  const electingB = clientB.elect(key, { leaseMs: 10_000 });
  await leaderA.resign();
  const leaderB = await electingB;
  expect(leaderB.term).toBeGreaterThan(leaderA.term);
  // lockd hands the key from A straight to B, waiting; a follower may also be shown the moment between.
  let next = (await changes.next()).value;
  if (next === undefined) next = (await changes.next()).value;
  expect(next).toBe(leaderB.term);
  expect(describeLeadership(key, next)).toBe(`leader:reports: led in term ${leaderB.term}`);

  await leaderB.resign();
  expect((await changes.next()).value).toBeUndefined();
  stop.abort();
  expect((await changes.next()).done).toBe(true);
});
