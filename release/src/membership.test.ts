import { LockClient } from "@lock/client";
import { FaultProxy, LockdProcess, TEST_PEER_TOKEN } from "@lock/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { ClientLoad } from "./client-load.js";
import { untilReady } from "./readiness.js";

/**
 * Membership changes by rolling restarts (docs/operations.md, "Adding and removing a node"): a node
 * is added to a 2-node cluster, then removed again, each by restarting the nodes one at a time with
 * the new --peers, while a real @lock/client runs acquire → release loops on shared keys. No
 * operation may fail, no holder may be lost (a release resolving false), tokens only increase.
 * Each node is advertised through a proxy, as in LockdCluster, so its address is known before it
 * starts.
 */
describe("adding and removing a node by rolling restarts", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it("2 → 3 → 2 nodes under load: 0 failed operations, no lost holder, tokens increasing", async () => {
    const proxies = await Promise.all([0, 1, 2].map(() => FaultProxy.start(1)));
    cleanup.push(async () => {
      await Promise.all(proxies.map((proxy) => proxy.close()));
    });
    /** Node i's flags with the cluster `members` (indexes, in priority order). */
    const flags = (i: number, members: readonly number[]) => [
      "--peers",
      members.map((member) => proxies[member]!.address).join(","),
      "--advertise",
      proxies[i]!.address,
      "--heartbeat-interval",
      "0.1",
      "--peer-timeout",
      "1",
      "--admin",
      "127.0.0.1:0",
    ];
    const nodes: LockdProcess[] = [];
    const start = async (i: number, members: readonly number[]) => {
      const node = await LockdProcess.start({
        args: flags(i, members),
        env: { LOCKD_PEER_TOKEN: TEST_PEER_TOKEN },
      });
      cleanup.push(() => node.dispose());
      nodes[i] = node;
      proxies[i]!.retarget(node.port);
    };
    /** Restarts node i with the new members: a standby rejoins; the active hands off and takes back. */
    const restartWith = async (i: number, members: readonly number[], active: boolean) => {
      const node = nodes[i]!;
      const successor = nodes[1]!;
      const since = successor.logs.length;
      expect(await node.stop()).toEqual({ code: 0, signal: null });
      if (active) {
        expect((await successor.waitForRole("active", { since, timeoutMs: 30_000 })).reason).toBe("handoff");
        await load.progress(200);
      }
      const restarted = node.logs.length;
      await node.restart({ args: flags(i, members) });
      proxies[i]!.retarget(node.port);
      if (active) await node.waitForServing({ since: restarted, timeoutMs: 30_000 });
      await untilReady(node);
      await load.progress(200);
    };

    await Promise.all([start(0, [0, 1]), start(1, [0, 1])]);
    await nodes[0]!.waitForServing({ since: 0, timeoutMs: 30_000 });
    await untilReady(nodes[1]!);
    // The client is given every address the cluster will have; one with no node behind it is skipped.
    const client = new LockClient({ servers: proxies.map((proxy) => proxy.address) });
    cleanup.push(() => client.close());
    const load = new ClientLoad(client, { keys: ["member:a", "member:b", "member:c"], workers: 9 });
    cleanup.push(() => load.stop());
    await load.progress(200);

    // Add node 2: the running nodes learn of it first (a peer that is down is harmless), lowest
    // priority first, then it starts and syncs as a standby.
    await restartWith(1, [0, 1, 2], false);
    await restartWith(0, [0, 1, 2], true);
    await start(2, [0, 1, 2]);
    await untilReady(nodes[2]!);
    await load.progress(200);
    const status = (await (await fetch(`http://127.0.0.1:${nodes[0]!.adminPort}/status`)).json()) as {
      cluster: { peers: Array<{ live: boolean }> };
    };
    expect(status.cluster.peers.map((peer) => peer.live)).toEqual([true, true, true]);

    // Remove node 2: it stops first (a standby; an active would hand off), then the others forget it.
    expect(await nodes[2]!.stop()).toEqual({ code: 0, signal: null });
    await load.progress(200);
    await restartWith(1, [0, 1], false);
    await restartWith(0, [0, 1], true);
    await load.stop();

    expect(load.failures).toEqual([]);
    expect(load.unorderedTokens()).toEqual([]);
    console.log(`membership 2 → 3 → 2: ${load.completed} acquire/release cycles, 0 failed`);
  });
});
