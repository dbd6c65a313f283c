import { LockdCluster } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { LockClient } from "./index.js";
import { eventually } from "./integration.test.support.js";

/**
 * Graceful handoffs under load (issue: a handoff lost releases). 20 loops of acquire → release on
 * distinct keys through one client that knows every node; the active is stopped with SIGTERM and
 * restarted, over and over, so the role is handed off between nodes 0 and 1 twenty times (stop
 * hands off 0 → 1, the restarted node 0 takes the role back once synced). Every release must
 * resolve true and no operation may fail: the successor has every holder after a handoff.
 */
describe("graceful handoffs under load", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it("20 handoffs: no failed operation, no release resolving false", { timeout: 120_000 }, async () => {
    // A peer timeout well above the harness's 300 ms: on a loaded CI machine a stall would otherwise
    // be taken for a dead active (a failover, which may lose the latest grants by design).
    const cluster = await LockdCluster.start({
      nodes: 3,
      args: ["--heartbeat-interval", "0.1", "--peer-timeout", "1"],
    });
    cleanup.push(() => cluster.dispose());
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    const client = new LockClient({ servers: cluster.proxies.map((proxy) => proxy.address) });
    cleanup.push(() => client.close());

    let handoffs = 0;
    let stopLoops = false;
    let completed = 0;
    const failures: string[] = [];
    const loop = async (worker: number) => {
      for (let i = 0; !stopLoops; i++) {
        const key = `ho:${worker}:${i}`;
        try {
          const lock = await client.acquire(key, { leaseMs: 10_000, waitMs: 10_000 });
          if (!(await lock.release()))
            failures.push(
              `release of ${key} (token ${lock.token}) resolved false during handoff ${handoffs}`,
            );
          completed += 1;
        } catch (error) {
          failures.push(`${key}: ${String(error)}`);
          if (stopLoops) return;
        }
      }
    };
    const loops = Array.from({ length: 20 }, (_, worker) => loop(worker));
    // However the test ends, the loops stop before the client closes (cleanup runs in reverse).
    cleanup.push(async () => {
      stopLoops = true;
      await Promise.all(loops);
    });

    const handOff = async (from: number, to: number) => {
      const before = completed;
      await eventually(async () => completed > before + 300, 30_000);
      const since = cluster.nodes[to]!.logs.length;
      const promoted = cluster.nodes[to]!.waitForRole("active", { since, timeoutMs: 30_000 });
      const serving = cluster.nodes[to]!.waitForServing({ since, timeoutMs: 30_000 });
      if (from === 0) {
        // Node 1 (next in priority) takes over from the stopping node 0.
        expect(await cluster.nodes[0]!.stop()).toEqual({ code: 0, signal: null });
      } else {
        // The restarted node 0 syncs, then node 1 hands the role back to it.
        await cluster.nodes[0]!.restart();
      }
      expect((await promoted).reason).toBe("handoff");
      await serving;
      handoffs += 1;
    };
    for (let round = 0; round < 10; round++) {
      await handOff(0, 1);
      await handOff(1, 0);
    }
    const atEnd = completed;
    await eventually(async () => completed > atEnd + 300, 30_000);
    stopLoops = true;
    await Promise.all(loops);
    expect(handoffs).toBe(20);
    // On failure, the role changes say which handoff went wrong.
    if (failures.length > 0)
      for (const [i, node] of cluster.nodes.entries())
        for (const entry of node.logs)
          if (entry.msg === "role changed") console.log(`node ${i}`, entry.time, entry.role, entry.reason);
    expect(failures).toEqual([]);
  });
});
