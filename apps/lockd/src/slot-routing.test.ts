import { LockClient } from "@lock/client";
import { keySlot } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { slotClusters } from "./slot-clusters.test.support.js";

/**
 * `@lock/client` over two clusters that share one key space (docs/protocol.md, "Key slots"): real
 * lockd processes, a real etcd holding the slot map. The client is given only east's address; it
 * learns the map from the first `S` and sends every key to the cluster of its slot.
 */
const harness = slotClusters();

describe("@lock/client routes keys to the cluster of their slot", () => {
  it("acquires and releases keys of both clusters through one client that knows one of them", async () => {
    const { east, eastProbe, westProbe } = await harness.halves();
    const client = new LockClient({ servers: [east.proxies[0]!.address] });
    harness.defer(() => client.close());
    const redirects: string[] = [];
    client.on("redirect", ({ to, key }) => redirects.push(`${key}->${to}`));
    const keys = Array.from({ length: 40 }, (_, i) => `job:${i}`);
    const locks = await Promise.all(
      keys.map((key) => client.acquire(key, { leaseMs: 30_000, waitMs: 5_000 })),
    );
    // Each lock is held where its slot says: the owner refuses a try, and the other cluster redirects.
    for (const lock of locks) {
      const owner = keySlot(lock.key) < 8192 ? eastProbe : westProbe;
      expect(await owner.request(`Y ${lock.key} 1`)).toBe(`N ${lock.key}`);
    }
    expect(locks.some((lock) => keySlot(lock.key) >= 8192)).toBe(true);
    expect(client.slotOf("foo")).toBe(12182);
    // The first batch went out before any S came back: west's keys were redirected, once each.
    // With the map in hand, a second batch goes straight to each key's cluster.
    const westKeys = locks.filter((lock) => keySlot(lock.key) >= 8192).length;
    expect(redirects.length).toBe(westKeys);
    const second = await Promise.all(
      keys.map((key) => client.acquire(`${key}:again`, { leaseMs: 30_000, waitMs: 5_000 })),
    );
    expect(redirects.length).toBe(westKeys);
    locks.push(...second);
    const more = await client.acquire("{tenant:1}:late", { leaseMs: 30_000, waitMs: 5_000 });
    expect(await Promise.all([...locks, more].map((lock) => lock.release()))).toEqual(Array(81).fill(true));
    for (const key of keys)
      expect(await (keySlot(key) < 8192 ? eastProbe : westProbe).request(`Y ${key} 1`)).toMatch(/^Y /);
  });
});
