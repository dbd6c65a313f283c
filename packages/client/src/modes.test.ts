import { LockdCluster, LockdProcess } from "@lock/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { InvalidArgumentError, type Lock, LockClient, LockServerError, LockTimeoutError } from "./index.js";
import { eventually, serverCounts } from "./integration.test.support.js";

/**
 * Lock modes against real lockd processes: shared holders overlap, an exclusive holder is alone, a
 * writer queued behind readers is not overtaken by later readers, a semaphore never has more
 * holders than permits, mismatched kinds and limits are refused with their codes, an expired lease
 * hands the key to the next compatible waiters, and every kind of holder survives kill -9 of the
 * active and a graceful handoff and releases on the new active.
 */
describe("LockClient lock modes with one lockd", () => {
  let lockd: LockdProcess;
  let client: LockClient;
  const lease = { leaseMs: 30_000 };

  beforeAll(async () => {
    lockd = await LockdProcess.start();
    client = new LockClient({ servers: [lockd.address] });
  });
  afterAll(async () => {
    await client?.close();
    await lockd?.dispose();
  });

  it("lets readers overlap, keeps a writer alone, and lets no later reader overtake a queued writer", async () => {
    const key = "modes:rw";
    const r1 = await client.acquire(key, { ...lease, mode: "shared" });
    const r2 = await client.acquire(key, { ...lease, mode: "shared" });
    expect([r1.mode, r2.mode, r1.slot]).toEqual(["shared", "shared", undefined]);
    expect(r2.token).toBeGreaterThan(r1.token);
    const order: string[] = [];
    const writer = client.acquire(key, lease).then((lock) => {
      order.push("writer");
      return lock;
    });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    const lateReader = client.acquire(key, { ...lease, mode: "shared" }).then((lock) => {
      order.push("reader");
      return lock;
    });
    await eventually(async () => (await serverCounts(lockd)).waiters === 2);
    expect(await client.tryAcquire(key, { ...lease, mode: "shared" })).toBeNull();
    expect(await r1.release()).toBe(true);
    expect(order).toEqual([]);
    expect(await r2.release()).toBe(true);
    const w = await writer;
    expect(w.mode).toBe("exclusive");
    expect(order).toEqual(["writer"]);
    expect(await w.release()).toBe(true);
    const reader = await lateReader;
    expect(order).toEqual(["writer", "reader"]);
    expect(reader.token).toBeGreaterThan(w.token);
    await reader.release();
  });

  it("never lets a 5-permit semaphore have a 6th holder, and gives each permit its own slot", async () => {
    const key = "modes:sem";
    const held = await Promise.all(
      Array.from({ length: 5 }, () => client.acquire(key, { ...lease, permits: 5 })),
    );
    expect(held.map((lock) => lock.slot).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(held.every((lock) => lock.mode === "permit" && lock.permits === 5)).toBe(true);
    expect(await client.tryAcquire(key, { ...lease, permits: 5 })).toBeNull();
    await expect(client.acquire(key, { ...lease, permits: 5, waitMs: 200 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    const sixth = client.acquire(key, { ...lease, permits: 5, waitMs: 10_000 });
    await held[2]!.release();
    const next = await sixth;
    expect(next.slot).toBe(held[2]!.slot);
    for (const lock of [...held.filter((_, i) => i !== 2), next]) expect(await lock.release()).toBe(true);
  });

  it("refuses a mismatched kind or limit with its code, and a bad option before sending", async () => {
    const key = "modes:mismatch";
    const permit = await client.acquire(key, { ...lease, permits: 2 });
    const limit = client.acquire(key, { ...lease, permits: 3 });
    await expect(limit).rejects.toBeInstanceOf(LockServerError);
    await expect(limit).rejects.toMatchObject({
      serverCode: "LIMIT_MISMATCH",
      message: expect.stringContaining("limit=2"),
    });
    await expect(client.acquire(key, lease)).rejects.toMatchObject({ serverCode: "KIND_MISMATCH" });
    await expect(client.tryAcquire(key, { ...lease, mode: "shared" })).rejects.toMatchObject({
      serverCode: "KIND_MISMATCH",
    });
    await permit.release();
    await expect(client.acquire(key, { ...lease, permits: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(client.acquire(key, { ...lease, permits: 2, mode: "shared" })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it("hands the key to the next compatible waiters when a lease runs out", async () => {
    const key = "modes:expiry";
    const writer = await client.acquire(key, { leaseMs: 300 });
    const readers = Promise.all(
      [1, 2, 3].map(() => client.acquire(key, { ...lease, mode: "shared", waitMs: 10_000 })),
    );
    const granted = await readers;
    expect(granted.every((lock) => lock.token > writer.token)).toBe(true);
    expect(await writer.release()).toBe(false);
    for (const lock of granted) expect(await lock.release()).toBe(true);
  });
});

describe("LockClient against lockd --semaphores", () => {
  it("takes the number of permits from the server's pattern, and refuses any other", async () => {
    await using lockd = await LockdProcess.start({ args: ["--semaphores", "tenant:*=2"] });
    const client = new LockClient({ servers: [lockd.address] });
    try {
      const lease = { leaseMs: 30_000 };
      await expect(client.acquire("tenant:7", { ...lease, permits: 3 })).rejects.toMatchObject({
        serverCode: "LIMIT_MISMATCH",
        message: expect.stringContaining("limit=2"),
      });
      await expect(client.acquire("tenant:7", lease)).rejects.toMatchObject({ serverCode: "KIND_MISMATCH" });
      const permit = await client.acquire("tenant:7", { ...lease, permits: 2 });
      expect(permit.slot).toBe(0);
      const other = await client.acquire("elsewhere", lease);
      expect(other.mode).toBe("exclusive");
      await permit.release();
      await other.release();
    } finally {
      await client.close();
    }
  });
});

describe("LockClient lock modes with a lockd cluster", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start() {
    const cluster = await LockdCluster.start({ nodes: 3 });
    cleanup.push(() => cluster.dispose());
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    const client = new LockClient({ servers: cluster.proxies.map((proxy) => proxy.address) });
    cleanup.push(() => client.close());
    return { cluster, client };
  }

  /** A reader pair, two permits and an exclusive lock, replicated to standby `standby`. */
  async function holdEveryKind(cluster: LockdCluster, client: LockClient, standby: number): Promise<Lock[]> {
    const lease = { leaseMs: 60_000 };
    const locks = [
      await client.acquire("modes:c:rw", { ...lease, mode: "shared" }),
      await client.acquire("modes:c:rw", { ...lease, mode: "shared" }),
      await client.acquire("modes:c:sem", { ...lease, permits: 3 }),
      await client.acquire("modes:c:sem", { ...lease, permits: 3 }),
      await client.acquire("modes:c:x", lease),
    ];
    await eventually(async () => Number((await cluster.info(standby)).keys) === 3);
    return locks;
  }

  /** On the new active: the kinds and slots held on, and every holder releases there. */
  async function checkSurvived(client: LockClient, locks: Lock[]): Promise<void> {
    // The semaphore kept its limit and its taken slots: a third permit gets the free slot 2.
    const third = await client.acquire("modes:c:sem", { leaseMs: 60_000, permits: 3, waitMs: 10_000 });
    expect(third.slot).toBe(2);
    expect(await client.tryAcquire("modes:c:sem", { leaseMs: 60_000, permits: 3 })).toBeNull();
    await expect(client.acquire("modes:c:rw", { leaseMs: 60_000, waitMs: 300 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    for (const lock of [...locks, third]) expect(await lock.release()).toBe(true);
  }

  it("keeps shared holders and permits through kill -9 of the active", async () => {
    const { cluster, client } = await start();
    const locks = await holdEveryKind(cluster, client, 1);
    const promoted = cluster.nodes[1]!.waitForRole("active");
    await cluster.nodes[0]!.kill("SIGKILL");
    await promoted;
    await checkSurvived(client, locks);
  });

  it("keeps shared holders and permits through a graceful handoff", async () => {
    const { cluster, client } = await start();
    const locks = await holdEveryKind(cluster, client, 1);
    const promoted = Promise.race([
      cluster.nodes[1]!.waitForRole("active"),
      cluster.nodes[2]!.waitForRole("active"),
    ]);
    await cluster.nodes[0]!.kill("SIGTERM");
    await promoted;
    await checkSurvived(client, locks);
  });
});
