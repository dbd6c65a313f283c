import { LockdCluster, LockdProcess } from "@lock/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { InvalidArgumentError, LockClient, LockServerError } from "./index.js";
import { eventually } from "./integration.test.support.js";

/**
 * Bundles (`acquireAll`) against real lockd processes: two clients taking the same two keys in
 * opposite orders never deadlock, and a bundle survives kill -9 of the active and releases as one
 * on the new active.
 */
describe("LockClient.acquireAll with one lockd", () => {
  let lockd: LockdProcess;
  let first: LockClient;
  let second: LockClient;

  beforeAll(async () => {
    lockd = await LockdProcess.start();
    first = new LockClient({ servers: [lockd.address] });
    second = new LockClient({ servers: [lockd.address] });
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await lockd?.dispose();
  });

  it("A,B against B,A from two clients 1,000 times: no deadlock, never both at once", async () => {
    let holding = 0;
    let overlaps = 0;
    let lastToken = 0n;
    const cycle = async (client: LockClient, keys: string[]) => {
      // A deadlock would leave both waiting: the bounded wait turns it into a LockTimeoutError.
      const lock = await client.acquireAll(keys, { leaseMs: 30_000, waitMs: 10_000 });
      holding += 1;
      if (holding > 1) overlaps += 1;
      expect(lock.token).toBeGreaterThan(lastToken);
      lastToken = lock.token;
      await new Promise((resolve) => setImmediate(resolve));
      holding -= 1;
      expect(await lock.release()).toBe(true);
    };
    for (let i = 0; i < 1000; i++)
      await Promise.all([cycle(first, ["acct:a", "acct:b"]), cycle(second, ["acct:b", "acct:a"])]);
    expect(overlaps).toBe(0);
  });

  it("holds every key under one token, sorted, and releases them as one", async () => {
    const lock = await first.acquireAll(["k:2", "k:1", "k:2"], { leaseMs: 30_000 });
    expect(lock.keys).toEqual(["k:1", "k:2"]);
    expect(lock.key).toBe("k:1");
    expect(await second.tryAcquire("k:2", { leaseMs: 1000 })).toBeNull();
    expect(await lock.extend()).toBeUndefined();
    expect(await lock.release()).toBe(true);
    const single = await second.tryAcquire("k:2", { leaseMs: 1000 });
    expect(single?.token).toBeGreaterThan(lock.token);
    await single?.release();
  });

  it("refuses bad keys before sending, and a key held shared with KIND_MISMATCH", async () => {
    await expect(first.acquireAll([], { leaseMs: 1000 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(first.acquireAll(["a b"], { leaseMs: 1000 })).rejects.toBeInstanceOf(InvalidArgumentError);
    const reader = await first.acquire("k:shared", { leaseMs: 30_000, mode: "shared" });
    const refused = first.acquireAll(["k:shared", "k:other"], { leaseMs: 1000 });
    await expect(refused).rejects.toMatchObject({ serverCode: "KIND_MISMATCH" });
    await expect(refused).rejects.toBeInstanceOf(LockServerError);
    await reader.release();
  });
});

describe("LockClient.acquireAll with a lockd cluster", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** A cluster of 3 and a client holding a bundle of three keys, replicated to both standbys. */
  async function holdBundle() {
    const cluster = await LockdCluster.start({ nodes: 3 });
    cleanup.push(() => cluster.dispose());
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    const client = new LockClient({ servers: cluster.proxies.map((proxy) => proxy.address) });
    cleanup.push(() => client.close());
    const lock = await client.acquireAll(["{t}:a", "{t}:b", "{t}:c"], { leaseMs: 60_000 });
    for (const standby of [1, 2])
      await eventually(async () => Number((await cluster.info(standby)).keys) === 3);
    return { cluster, client, lock };
  }

  it("keeps a bundle through kill -9 of the active, and releases it as one there", async () => {
    const { cluster, client, lock } = await holdBundle();
    const promoted = cluster.nodes[1]!.waitForRole("active");
    await cluster.nodes[0]!.kill("SIGKILL");
    await promoted;
    // The new active holds the three keys it was replicated, and one release frees them all.
    expect(Number((await cluster.info(1)).keys)).toBe(3);
    expect(await lock.release()).toBe(true);
    expect(Number((await cluster.info(1)).keys)).toBe(0);
    // Released as one: every key is free on the new active, with tokens above the bundle's.
    for (const key of lock.keys) {
      const single = await client.tryAcquire(key, { leaseMs: 1000 });
      expect(single?.token).toBeGreaterThan(lock.token);
      await single?.release();
    }
  });

  it("keeps a bundle through a graceful handoff, and releases it as one on the successor", async () => {
    const { cluster, lock } = await holdBundle();
    const promoted = Promise.race([
      cluster.nodes[1]!.waitForRole("active").then(() => 1),
      cluster.nodes[2]!.waitForRole("active").then(() => 2),
    ]);
    await cluster.nodes[0]!.kill("SIGTERM");
    const index = await promoted;
    expect(Number((await cluster.info(index)).keys)).toBe(3);
    expect(await lock.release()).toBe(true);
    expect(Number((await cluster.info(index)).keys)).toBe(0);
  });
});
