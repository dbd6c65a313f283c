import { LockClient } from "@lock/client";
import { LOCKD_MAIN, LockdCluster } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientLoad } from "./client-load.js";
import { buildRelease, previousRelease, type Release } from "./previous-release.js";
import { untilReady } from "./readiness.js";

/**
 * A rolling upgrade (docs/operations.md, "Upgrade"): a 3-node cluster of the previous release's
 * build is upgraded to this tree's build one node at a time, standbys first, each stopped with
 * SIGTERM (the active hands its role off) and started from the new build with the same flags and
 * data directory, each ready (`/readyz`) before the next, while a real @lock/client runs acquire →
 * release loops on shared keys. Not one operation may fail, no release may resolve false, and every
 * key's tokens must only increase, across the whole run. The previous release is built once, from
 * its commit, into a cache outside the repository (previous-release.ts).
 */
let release: Release;
let oldMain: string;

beforeAll(() => {
  release = previousRelease();
  oldMain = buildRelease(release);
});

describe("rolling upgrade from the previous release", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it("previous → this build, one node at a time, under load: 0 failed operations, tokens increasing", async () => {
    // A peer timeout well above the harness's: a stall on a loaded machine must not look like a dead
    // active (a failover, which may lose the latest grants by design, is not what is tested here).
    const cluster = await LockdCluster.start({
      nodes: 3,
      main: oldMain,
      args: ["--heartbeat-interval", "0.1", "--peer-timeout", "1", "--admin", "127.0.0.1:0"],
    });
    cleanup.push(() => cluster.dispose());
    const [first] = cluster.nodes;
    await first!.waitForServing({ since: 0, timeoutMs: 30_000 });
    await Promise.all(cluster.nodes.map((node) => untilReady(node)));
    const client = new LockClient({ servers: cluster.proxies.map((proxy) => proxy.address) });
    cleanup.push(() => client.close());
    const load = new ClientLoad(client, { keys: ["up:a", "up:b", "up:c", "up:d"], workers: 12 });
    cleanup.push(() => load.stop());
    await load.progress(200);

    // Standbys first (lowest priority first), then the active: its SIGTERM hands the role to node 1
    // (upgraded already), and node 0, upgraded, takes it back once in sync.
    for (const i of [2, 1, 0]) {
      const node = cluster.nodes[i]!;
      const successor = cluster.nodes[1]!;
      const since = successor.logs.length;
      expect(await node.stop()).toEqual({ code: 0, signal: null });
      if (i === 0) {
        expect((await successor.waitForRole("active", { since, timeoutMs: 30_000 })).reason).toBe("handoff");
        await load.progress(200);
      }
      const restarted = node.logs.length;
      await cluster.restart(i, { main: LOCKD_MAIN });
      if (i === 0) {
        const back = await node.waitForRole("active", { since: restarted, timeoutMs: 30_000 });
        expect(back.reason).toBe("handoff");
        await node.waitForServing({ since: restarted, timeoutMs: 30_000 });
      }
      await untilReady(node);
      await load.progress(200);
    }
    await Promise.all(cluster.nodes.map((node) => untilReady(node)));
    await load.progress(200);
    await load.stop();

    // The upgraded nodes said hello with their protocol version first; lockd 0.1.0 refused it as
    // malformed (its codec predates the field), and they said it again without.
    expect(
      cluster.nodes[0]!.logs.some(
        (entry) => entry.msg === "peer rejected" && /malformed peer frame/.test(String(entry.reason)),
      ),
    ).toBe(true);
    expect(load.failures).toEqual([]);
    expect(load.unorderedTokens()).toEqual([]);
    expect(load.completed).toBeGreaterThanOrEqual(1_400);
    console.log(
      `upgrade ${release.version} (${release.commit.slice(0, 7)}) → this build: ${load.completed} acquire/release cycles, 0 failed`,
    );
  });
});
