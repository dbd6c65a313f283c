import { LockdCluster } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type HolderState, LockClient } from "./index.js";
import { eventually } from "./integration.test.support.js";

/**
 * `client.observe()` against a real three-node cluster (LockdCluster: 50 ms heartbeats, 300 ms peer
 * timeout): a watcher follows the key across a graceful handoff (SIGTERM) and a kill -9 failover, and
 * then sees the new active's states.
 */
describe("LockClient.observe with a lockd cluster", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start() {
    const cluster = await LockdCluster.start({ nodes: 3 });
    cleanup.push(() => cluster.dispose());
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    const servers = cluster.proxies.map((proxy) => proxy.address);
    const watcher = new LockClient({ servers });
    const holder = new LockClient({ servers });
    cleanup.push(
      () => watcher.close(),
      () => holder.close(),
    );
    return { cluster, watcher, holder };
  }

  const brief = (state: HolderState | undefined) =>
    state === undefined ? "ended" : state.held ? `held ${state.token}` : "free";

  it.each([
    ["a graceful handoff (SIGTERM)", "SIGTERM"],
    ["a kill -9 failover", "SIGKILL"],
  ] as const)("follows the key across %s", { timeout: 60_000 }, async (_, signal) => {
    const { cluster, watcher, holder } = await start();
    const key = `ow:${signal}`;
    const states = watcher.observe(key);
    const next = async () => brief((await states.next()).value);
    expect(await next()).toBe("free");
    const first = await holder.acquire(key, { leaseMs: 30_000 });
    expect(await next()).toBe(`held ${first.token}`);
    // Replicated to the standbys before the active goes.
    await eventually(async () => Number((await cluster.info(1)).keys) === 1);
    const promoted = cluster.nodes[1]!.waitForRole("active");
    if (signal === "SIGTERM") await cluster.nodes[0]!.stop();
    else await cluster.nodes[0]!.kill("SIGKILL");
    await promoted;
    // The new active has the same holder, which the watcher is not told twice; its changes from
    // there on come from the new active.
    expect(await first.release()).toBe(true);
    expect(await next()).toBe("free");
    const second = await holder.acquire(key, { leaseMs: 30_000 });
    expect(second.token).toBeGreaterThan(first.token);
    expect(await next()).toBe(`held ${second.token}`);
    await second.release();
  });
});
