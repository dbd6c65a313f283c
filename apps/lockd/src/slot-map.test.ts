import { openCoordinationStore } from "@lock/coordinator";
import { SlotMap } from "@lock/protocol";
import { SLOT_MAP_DOCUMENT } from "@lock/server";
import type { LockdCluster } from "@lock/testkit";
import { describe, expect, it } from "vitest";
import { slotClusters } from "./slot-clusters.test.support.js";

/**
 * Several clusters over one key space, with real lockd processes and a real etcd
 * (docs/protocol.md, "Key slots"): `--slot-map` seeds the store, the store's map is in force, and
 * a node redirects another cluster's keys with `S`.
 */
const harness = slotClusters();
const clients = harness.lines;

const MAP = {
  clusters: { east: ["127.0.0.1:17001"], west: ["127.0.0.1:17101", "127.0.0.1:17102"] },
  ranges: [
    { from: 0, to: 8191, cluster: "east" },
    { from: 8192, to: 16383, cluster: "west" },
  ],
};

const startEast = (url: string, map: object): Promise<LockdCluster> => harness.start(url, "east", [], map);

describe("lockd --slot-map (several clusters over one key space)", () => {
  it("seeds the store with its file, serves its own slots, redirects the others', and follows the store's changes", async () => {
    const url = harness.coordinatorUrl();
    const east = await startEast(url, MAP);
    const c = await clients.connect(east.nodes[0]!.port);
    // "bar" is slot 5061 (east's), "foo" slot 12182 (west's).
    await expect.poll(() => c.request("A bar 30 0 r1"), { timeout: 10_000 }).toMatch(/^A bar \d+ r1$/);
    const keyspace = await c.request("K");
    const version = BigInt(keyspace.split(" ")[1]!);
    expect(version).toBeGreaterThan(0n);
    expect(keyspace).toBe(
      `K ${version} east=127.0.0.1:17001 west=127.0.0.1:17101,127.0.0.1:17102 0-8191:east 8192-16383:west`,
    );
    expect(await c.request("A foo 30 0 r2")).toBe(`S A foo 12182 ${version} west 127.0.0.1:17101 r2`);

    const store = openCoordinationStore(url);
    try {
      // West's active (the holder of its ownership lease) is named once east has read the lease.
      const lease = await store.acquireLease("west", "127.0.0.1:17102 0a1b2c3d", 30_000);
      expect(lease.held).toBe(true);
      await expect
        .poll(() => c.request("A foo 30 0 r2"), { timeout: 10_000 })
        .toBe(`S A foo 12182 ${version} west 127.0.0.1:17102 r2`);

      // An operator gives every slot to west: the node follows the store's new version.
      const everyone = SlotMap.fromDocument(
        1n,
        JSON.stringify({ ...MAP, ranges: [{ from: 0, to: 16383, cluster: "west" }] }),
      );
      const next = await store.writeDocument(SLOT_MAP_DOCUMENT, everyone.toDocument(), version);
      expect(next).toBeGreaterThan(version);
      await expect
        .poll(() => c.request("Y baz 30"), { timeout: 10_000 })
        .toMatch(/^S Y baz \d+ \d+ west 127\.0\.0\.1:17102$/);
      expect(await c.request("K")).toBe(
        `K ${next} east=127.0.0.1:17001 west=127.0.0.1:17101,127.0.0.1:17102 0-16383:west`,
      );
    } finally {
      await store.close();
    }
  });

  it("a node started with another file follows the map already in the store", async () => {
    const url = harness.coordinatorUrl();
    const store = openCoordinationStore(url);
    try {
      const first = SlotMap.fromDocument(1n, JSON.stringify(MAP));
      expect(await store.writeDocument(SLOT_MAP_DOCUMENT, first.toDocument(), 0n)).toBeDefined();
    } finally {
      await store.close();
    }
    const east = await startEast(url, { ...MAP, ranges: [{ from: 0, to: 16383, cluster: "east" }] });
    const c = await clients.connect(east.nodes[0]!.port);
    await expect
      .poll(() => c.request("A foo 30 0 r1"), { timeout: 10_000 })
      .toMatch(/^S A foo 12182 \d+ west /);
  });

  it("refuses a map file that breaks a rule, or does not name this cluster, before it starts", async () => {
    const url = harness.coordinatorUrl();
    await expect(startEast(url, { ...MAP, ranges: [{ from: 0, to: 100, cluster: "east" }] })).rejects.toThrow(
      /SLOT_MAP_INVALID: slots 101-16383 belong to no cluster/,
    );
    await expect(
      startEast(url, {
        clusters: { west: ["127.0.0.1:1"] },
        ranges: [{ from: 0, to: 16383, cluster: "west" }],
      }),
    ).rejects.toThrow(/does not name this cluster/);
  });
});
