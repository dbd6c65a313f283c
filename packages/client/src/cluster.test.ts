import { LockdCluster } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { LockClient } from "./index.js";
import { allConnected, eventually, nextEvent } from "./integration.test.support.js";

/**
 * The client against a real three-node cluster (LockdCluster: 50 ms heartbeats, 300 ms peer
 * timeout): redirects from standbys, and an active killed with kill -9 while the client holds a lock
 * and waits for another.
 */
describe("LockClient with a lockd cluster", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start(): Promise<{ cluster: LockdCluster; client: LockClient; holder: LockClient }> {
    const cluster = await LockdCluster.start({ nodes: 3 });
    cleanup.push(() => cluster.dispose());
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    const servers = cluster.proxies.map((proxy) => proxy.address);
    const client = new LockClient({ servers });
    const holder = new LockClient({ servers });
    cleanup.push(
      () => client.close(),
      () => holder.close(),
    );
    return { cluster, client, holder };
  }

  it("serves every request through the active, whichever node it is sent to", async () => {
    const { cluster, client } = await start();
    await allConnected(client);
    const locks = await Promise.all(
      Array.from({ length: 9 }, (_, i) => client.acquire(`cl:spread:${i}`, { leaseMs: 30_000 })),
    );
    expect(Number((await cluster.info(0)).keys)).toBe(9);
    const standbys = client.connections.filter((connection) => connection.standby);
    expect(standbys.map((connection) => connection.address).sort()).toEqual(
      [cluster.advertised(1), cluster.advertised(2)].sort(),
    );
    for (const lock of locks) expect(await lock.release()).toBe(true);
  });

  it("rides out kill -9 of the active: a held lock stays releasable, a waiting acquire is granted", async () => {
    const { cluster, client, holder } = await start();
    const held = await client.acquire("cl:held", { leaseMs: 30_000 });
    const blocking = await holder.acquire("cl:wanted", { leaseMs: 30_000 });
    const waiting = client.acquire("cl:wanted", { leaseMs: 30_000, waitMs: 20_000 });
    // Both holders replicated to the standbys before the active dies.
    await eventually(async () => Number((await cluster.info(1)).keys) === 2);
    await eventually(async () => Number((await cluster.info(0)).waiters) === 1);
    const promoted = cluster.nodes[1]!.waitForRole("active");
    const retried = nextEvent(client, "retry");
    await cluster.nodes[0]!.kill("SIGKILL");
    await retried;
    await promoted;
    // The new active knows the replicated holder: releasing it hands the key to the re-queued waiter.
    expect(await blocking.release()).toBe(true);
    const granted = await waiting;
    expect(granted.token).toBeGreaterThan(blocking.token);
    expect(await held.release()).toBe(true);
    const after = await client.acquire("cl:after", { leaseMs: 30_000, waitMs: 5_000 });
    expect(after.token).toBeGreaterThan(granted.token);
    await after.release();
    await granted.release();
  });

  it("follows a graceful handoff: a waiting acquire moves to the successor", async () => {
    const { cluster, client, holder } = await start();
    const blocking = await holder.acquire("cl:handoff", { leaseMs: 30_000 });
    const waiting = client.acquire("cl:handoff", { leaseMs: 30_000, waitMs: 20_000 });
    // A handoff needs a synced standby: one that has the holder. Without one (a cluster that just
    // started and has not synced yet) the active stops like a single node and its last grants may be
    // lost with it, which is failover, not what this test is about.
    await eventually(async () => Number((await cluster.info(1)).keys) === 1);
    await eventually(async () => Number((await cluster.info(0)).waiters) === 1);
    // The stopping active redirects its queued acquires to the successor (or, failing that, closes
    // their connections): either way the acquire moves.
    const moved = Promise.race([
      nextEvent(
        client,
        "redirect",
        (event) => event.key === "cl:handoff" && event.to === cluster.advertised(1),
      ),
      nextEvent(client, "retry", (event) => event.key === "cl:handoff"),
    ]);
    const promoted = cluster.nodes[1]!.waitForRole("active");
    await cluster.nodes[0]!.stop();
    await moved;
    await promoted;
    expect(await blocking.release()).toBe(true);
    const granted = await waiting;
    expect(granted.token).toBeGreaterThan(blocking.token);
    expect(await granted.release()).toBe(true);
  });
  it("given only a standby's address, ends up on the active", async () => {
    const { cluster } = await start();
    await cluster.nodes[2]!.waitForFollowing(cluster.advertised(0), { since: 0 });
    const client = new LockClient({ servers: [cluster.advertised(2)] });
    cleanup.push(() => client.close());
    const lock = await client.acquire("cl:via-standby", { leaseMs: 30_000, waitMs: 5_000 });
    expect(Number((await cluster.info(0)).keys)).toBe(1);
    expect(await lock.release()).toBe(true);
  });

  it("SIGTERM of the active under load: no client operation fails", async () => {
    const { cluster, client } = await start();
    let stopLoops = false;
    let completed = 0;
    const failures: unknown[] = [];
    const loop = async (worker: number) => {
      while (!stopLoops) {
        try {
          const lock = await client.acquire(`cl:load:${worker % 4}`, { leaseMs: 10_000, waitMs: 10_000 });
          await lock.release();
          completed += 1;
        } catch (error) {
          failures.push(error);
          return;
        }
      }
    };
    const loops = Array.from({ length: 8 }, (_, worker) => loop(worker));
    await eventually(async () => completed > 200);
    const promoted = cluster.nodes[1]!.waitForRole("active");
    const exited = cluster.nodes[0]!.stop();
    await promoted;
    expect(await exited).toEqual({ code: 0, signal: null });
    const atHandoff = completed;
    // Keep going on the new active for a while, then stop the workers.
    await eventually(async () => completed > atHandoff + 200);
    stopLoops = true;
    await Promise.all(loops);
    expect(failures).toEqual([]);
  });
});
