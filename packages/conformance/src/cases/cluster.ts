import { type ConformanceCase, LEASE_MS } from "../case.js";
import {
  check,
  expectExtended,
  expectGranted,
  expectGrantedAfter,
  expectReleased,
  nodeCounts,
  nodeInfo,
} from "../checks.js";
import { DeadNode } from "../wire-tools.js";

const tokenText = (_key: string, value: unknown) => (typeof value === "bigint" ? value.toString() : value);

// Clusters: a failover and its retries fit in it easily.
const WAIT_MS = 20_000;

/**
 * Three-node clusters (testkit's LockdCluster: 50 ms heartbeats, 300 ms peer timeout, every node
 * advertised through a proxy): redirects, kill -9 of the active, standbys pointing at a dead address.
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
      const granted = expectGrantedAfter(
        await waiting,
        blocking,
        "the acquire that waited on the dead active",
      );
      expectReleased(await client.release(held.lock), true, "release of the kept lock on the new active");
      const after = await client.acquire(ctx.key("after"), LEASE_MS, WAIT_MS);
      const fresh = expectGrantedAfter(after, granted, "an acquire after the failover");
      for (const lock of [granted, fresh]) expectReleased(await client.release(lock.lock), true, "release");
    },
  },
  {
    name: "standby-redirects-to-dead-active",
    rule: "a standby that redirects to an active whose address is dead is not a failed try: the client asks again within the wait, until a standby promotes and grants",
    section: "#redirects-and-what-a-standby-answers",
    async run(ctx) {
      const cluster = await ctx.cluster();
      // The active's advertised address goes dead for clients (it accepts, reads a line and resets),
      // while the peer links already open keep node 0 alive and active for the cluster: the
      // standbys keep redirecting there until node 0 is killed below.
      const dead = await DeadNode.start();
      ctx.defer(() => dead.close());
      cluster.proxies[0]!.retarget(dead.port);
      const client = await ctx.client([cluster.advertised(1), cluster.advertised(2)]);
      const key = ctx.key("k");
      let settled = false;
      const acquiring = client.acquire(key, LEASE_MS, WAIT_MS);
      const ended = () => {
        settled = true;
      };
      acquiring.then(ended, ended);
      // More than the client's registered connections (two given, one learned from the redirect):
      // a client that counted these as failed tries would have given up by now.
      const visits = 4;
      await ctx.until(`the client went to the dead address ${visits} times, or gave up`, () => {
        return settled || dead.clientConnections.length >= visits;
      });
      if (settled) {
        const outcome = JSON.stringify(await acquiring, tokenText);
        check(false, `the acquire ended while the standbys still pointed at the dead address: ${outcome}`);
      }
      await cluster.nodes[0]!.kill("SIGKILL");
      const lock = expectGranted(await acquiring, "the acquire, once a standby took over");
      check((await nodeInfo(cluster.nodes[1]!.port)).role === "active", "node 1 did not take over");
      expectReleased(await client.release(lock.lock), true, "release on the new active");
    },
  },
];
