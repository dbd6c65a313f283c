import { randomUUID } from "node:crypto";
import { EtcdCluster } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeCoordinationContract, takeEpochOnceBack } from "../contract.test.support.js";
import { EtcdCoordinationStore } from "./store.js";

let single: EtcdCluster;
beforeAll(async () => {
  single = await EtcdCluster.start();
});
afterAll(async () => {
  await single?.dispose();
});

const prefix = `/test-${randomUUID().slice(0, 8)}/`;
describeCoordinationContract("etcd", {
  open: () => new EtcdCoordinationStore({ endpoints: single.endpoints, prefix }),
  ttlMs: 1000,
  ttlGrainMs: 1000,
});

describe("etcd: a 3-member cluster", () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await EtcdCluster.start({ members: 3 });
  });
  afterAll(async () => {
    await cluster?.dispose();
  });

  it("keeps taking epochs and renewing the lease after its leader is killed", async () => {
    // The leader first: the store talks to it until it dies, then must move on.
    const leader = await cluster.leader();
    const endpoints = [
      leader.endpoint,
      ...cluster.endpoints.filter((endpoint) => endpoint !== leader.endpoint),
    ];
    const store = new EtcdCoordinationStore({ endpoints, prefix: "/leader-kill/" });
    try {
      const before = await store.takeEpoch(0n);
      const outcome = await store.acquireLease("c", "A", 10_000);
      if (!outcome.held) throw new Error("no lease");
      await cluster.kill(leader);
      // During the election (about one election timeout) a call may fail; then every call works.
      const after = await takeEpochOnceBack(store, 10_000);
      expect(after).toBeGreaterThan(before);
      expect(await store.renewLease(outcome.lease)).toEqual({ held: true, lease: outcome.lease });
      expect((await cluster.leader()).name).not.toBe(leader.name);
    } finally {
      await store.close();
    }
  });
});
