import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockClient } from "@lock/client";
import { openCoordinationStore } from "@lock/coordinator";
import { keySlot, SlotMap } from "@lock/protocol";
import { SLOT_MAP_DOCUMENT } from "@lock/server";
import { EtcdCluster, LineClients, LockdCluster } from "@lock/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

/**
 * `@lock/client` over two clusters that share one key space (docs/protocol.md, "Key slots"): real
 * lockd processes, a real etcd holding the slot map. The client is given only east's address; it
 * learns the map from the first `S` and sends every key to the cluster of its slot.
 */
let etcd: EtcdCluster;
const cleanup: Array<() => Promise<void> | void> = [];
const lines = new LineClients();

beforeAll(async () => {
  etcd = await EtcdCluster.start({ members: 1 });
}, 30_000);

afterEach(async () => {
  lines.closeAll();
  for (const step of cleanup.splice(0).reverse()) await step();
});

afterAll(async () => {
  await etcd?.dispose();
});

/** Starts a one-node cluster named `name` under the store's slot map (seeded with a placeholder). */
async function startCluster(url: string, name: string): Promise<LockdCluster> {
  const dir = mkdtempSync(join(tmpdir(), "lockd-routing-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "slots.json");
  const placeholder = {
    clusters: { [name]: ["127.0.0.1:1"] },
    ranges: [{ from: 0, to: 16383, cluster: name }],
  };
  writeFileSync(file, JSON.stringify(placeholder));
  const cluster = await LockdCluster.start({
    nodes: 1,
    args: ["--coordinator", url, "--cluster-name", name, "--coordinator-lease", "1", "--slot-map", file],
  });
  cleanup.push(() => cluster.dispose());
  await cluster.settled();
  return cluster;
}

describe("@lock/client routes keys to the cluster of their slot", () => {
  it("acquires and releases keys of both clusters through one client that knows one of them", async () => {
    const url = `etcd://${etcd.endpoints.join(",")}/lock-test-${randomBytes(4).toString("hex")}/`;
    const east = await startCluster(url, "east");
    const west = await startCluster(url, "west");
    // The real map, now that both clusters' addresses are known: half each.
    const map = SlotMap.of(
      1n,
      new Map([
        ["east", [east.proxies[0]!.address]],
        ["west", [west.proxies[0]!.address]],
      ]),
      [
        { from: 0, to: 8191, cluster: "east" },
        { from: 8192, to: 16383, cluster: "west" },
      ],
    );
    const store = openCoordinationStore(url);
    try {
      const current = await store.readDocument(SLOT_MAP_DOCUMENT);
      expect(await store.writeDocument(SLOT_MAP_DOCUMENT, map.toDocument(), current!.version)).toBeDefined();
    } finally {
      await store.close();
    }
    const westProbe = await lines.connect(west.nodes[0]!.port);
    const eastProbe = await lines.connect(east.nodes[0]!.port);
    // Both nodes follow the new map: each redirects the other's keys.
    await expect
      .poll(() => eastProbe.request("Y foo 1"), { timeout: 10_000 })
      .toMatch(/^S Y foo 12182 \d+ west /);
    await expect
      .poll(() => westProbe.request("Y bar 1"), { timeout: 10_000 })
      .toMatch(/^S Y bar 5061 \d+ east /);

    const client = new LockClient({ servers: [east.proxies[0]!.address] });
    cleanup.push(() => client.close());
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
