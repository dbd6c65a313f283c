import type { ConformanceCase } from "../case.js";
import { check, expectExtended, expectGranted, expectReleased, nodeCounts, nodeInfo } from "../checks.js";
import { DeadNode } from "../wire-tools.js";

const LEASE_MS = 30_000;
const WAIT_MS = 20_000;

/**
 * Three-node clusters (testkit's LockdCluster: 50 ms heartbeats, 300 ms peer timeout, every node
 * advertised through a proxy): redirects, kill -9 of the active, a standby pointing at a dead active.
 */
export const clusterCases: readonly ConformanceCase[] = [
  {
    name: "redirect-from-standby",
    rule: "a client given only a standby's address follows its `M` to the active (an address it was not given) and acquires, extends and releases there",
    section: "#redirects-and-what-a-standby-answers",
    async run(ctx) {
      const cluster = await ctx.cluster();
      const client = await ctx.client([cluster.advertised(2)]);
      const key = ctx.key("k");
      const lock = expectGranted(await client.acquire(key, LEASE_MS, WAIT_MS), "acquire through a standby");
      check((await nodeCounts(cluster.nodes[0]!.port)).keys === 1, "the active does not hold the key");
      expectExtended(await client.extend(lock.lock, LEASE_MS), "extend through a standby");
      const tried = expectGranted(
        await client.tryAcquire(ctx.key("y"), LEASE_MS),
        "try-acquire through a standby",
      );
      expectReleased(await client.release(tried.lock), true, "release of the try-acquired lock");
      expectReleased(await client.release(lock.lock), true, "release through a standby");
      check((await nodeCounts(cluster.nodes[0]!.port)).keys === 0, "the active still holds a key");
    },
  },
  {
    name: "failover-kill9",
    rule: "after kill -9 of the active, a replicated lock is released and extended on the new active (with the acquire's id), a waiting acquire is re-sent and granted there, and new acquires succeed",
    section: "#failover",
    async run(ctx) {
      const cluster = await ctx.cluster();
      const servers = [0, 1, 2].map((i) => cluster.advertised(i));
      const [client, other] = await Promise.all([ctx.client(servers), ctx.client(servers)]);
      const held = expectGranted(
        await client.acquire(ctx.key("held"), LEASE_MS, WAIT_MS),
        "acquire of a lock to keep",
      );
      const wanted = ctx.key("wanted");
      const blocking = expectGranted(
        await other.acquire(wanted, LEASE_MS, WAIT_MS),
        "the other instance's acquire",
      );
      const waiting = client.acquire(wanted, LEASE_MS, WAIT_MS);
      await ctx.until("both grants are replicated and the acquire is queued on the active", async () => {
        const [active, first, second] = await Promise.all(cluster.nodes.map((node) => nodeCounts(node.port)));
        return active!.waiters === 1 && first!.keys === 2 && second!.keys === 2;
      });
      await cluster.nodes[0]!.kill("SIGKILL");
      expectExtended(
        await client.extend(held.lock, LEASE_MS),
        "extend of the replicated lock after the failover",
      );
      expectReleased(
        await other.release(blocking.lock),
        true,
        "release of the replicated lock after the failover",
      );
      const granted = expectGranted(await waiting, "the acquire that waited on the dead active");
      check(granted.token > blocking.token, "the new active's token is not above the dead active's");
      expectReleased(await client.release(held.lock), true, "release of the kept lock on the new active");
      const fresh = expectGranted(
        await client.acquire(ctx.key("after"), LEASE_MS, WAIT_MS),
        "acquire after failover",
      );
      check(fresh.token > granted.token, "tokens went backwards after the failover");
      for (const lock of [granted, fresh]) expectReleased(await client.release(lock.lock), true, "release");
    },
  },
  {
    name: "standby-redirects-to-dead-active",
    rule: "a standby that still redirects to an active that died is not a failed try: the client asks again within the wait until a standby promotes, then acquires there",
    section: "#redirects-and-what-a-standby-answers",
    async run(ctx) {
      // A 2 s peer timeout: the standbys keep redirecting to the dead active for that long.
      const cluster = await ctx.cluster(["--peer-timeout", "2"]);
      const client = await ctx.client([cluster.advertised(1), cluster.advertised(2)]);
      const warm = expectGranted(
        await client.acquire(ctx.key("warm"), LEASE_MS, WAIT_MS),
        "acquire via redirect",
      );
      expectReleased(await client.release(warm.lock), true, "release via redirect");
      const dead = await DeadNode.start();
      ctx.defer(() => dead.close());
      await cluster.nodes[0]!.kill("SIGKILL");
      // The dead active's advertised address now accepts and resets.
      cluster.proxies[0]!.retarget(dead.port);
      const key = ctx.key("k");
      const lock = expectGranted(
        await client.acquire(key, LEASE_MS, WAIT_MS),
        "acquire while the standbys point at the dead active",
      );
      // It was given only the standbys' addresses: it went there because a redirect named it.
      check(
        dead.clientConnections.length > 0,
        "the client never went to the dead active's address (did a standby promote before the acquire?)",
      );
      check((await nodeInfo(cluster.nodes[1]!.port)).role === "active", "node 1 did not take over");
      expectReleased(await client.release(lock.lock), true, "release on the new active");
    },
  },
];
