import { LockdCluster } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { LockClient, type LockClientOptions, LockLostError, LockTimeoutError } from "./index.js";
import { allConnected, eventually } from "./integration.test.support.js";

/**
 * Availability against a real three-node cluster (LockdCluster: 50 ms heartbeats, 300 ms peer
 * timeout): an active that stops answering without closing anything (SIGSTOP), and the return of the
 * top-priority node after a failover. Both assert on who granted (the token's epoch carries the
 * node id, which LockdCluster sets to the node's index), never on durations.
 */
describe("LockClient availability", () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** The node id in a token: `epoch × 2^24 + sequence`, `epoch = round × 256 + node id`. */
  const grantedBy = (token: bigint): number => Number((token >> 24n) & 0xffn);

  async function start(options: Partial<LockClientOptions> = {}) {
    const cluster = await LockdCluster.start({ nodes: 3 });
    cleanup.push(() => cluster.dispose());
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await cluster.nodes[1]!.waitForFollowing(cluster.advertised(0), { since: 0 });
    await cluster.nodes[2]!.waitForFollowing(cluster.advertised(0), { since: 0 });
    const servers = cluster.proxies.map((proxy) => proxy.address);
    const newClient = async () => {
      const client = new LockClient({ servers, ...options });
      cleanup.push(() => client.close());
      await allConnected(client);
      // Until every standby has redirected once, the client cannot tell the active from them.
      for (let i = 0; client.connections.filter((c) => c.standby).length < 2; i++) {
        const lock = await client.acquire(`av:learn:${i}`, { leaseMs: 5_000, waitMs: 5_000 });
        await lock.release();
      }
      return client;
    };
    return { cluster, newClient };
  }

  describe("a stalled active (SIGSTOP)", () => {
    it("an acquire issued during the stall is granted by the promoted standby before the old active resumes", async () => {
      const { cluster, newClient } = await start();
      const client = await newClient();
      const since = cluster.nodes[1]!.logs.length;
      cluster.nodes[0]!.pause();
      cleanup.push(() => cluster.nodes[0]!.resume());
      const lock = await client.acquire("av:stall:new", { leaseMs: 30_000, waitMs: 8_000 });
      expect(grantedBy(lock.token)).toBe(1);
      // Still stopped: the grant did not wait for it.
      await cluster.nodes[1]!.waitForServing({ since });
      expect(await lock.release()).toBe(true);
    });

    it("an acquire queued on the active before the stall moves, with its id, to the promoted standby", async () => {
      const { cluster, newClient } = await start();
      const client = await newClient();
      const holder = await newClient();
      const held = await holder.acquire("av:stall:queued", { leaseMs: 30_000 });
      const waiting = client.acquire("av:stall:queued", { leaseMs: 30_000, waitMs: 8_000 });
      await eventually(async () => Number((await cluster.info(0)).waiters) === 1);
      // The holder reached the standby before the stall: the promoted node knows it.
      await eventually(async () => Number((await cluster.info(1)).keys) === 1);
      cluster.nodes[0]!.pause();
      cleanup.push(() => cluster.nodes[0]!.resume());
      // The release moves to the new active too; it hands the key to the moved waiter (or frees it
      // for the waiter to take), all while the old active is stopped.
      expect(await held.release()).toBe(true);
      const lock = await waiting;
      expect(grantedBy(lock.token)).toBe(1);
      expect(lock.token).toBeGreaterThan(held.token);
      await lock.release();
    });
  });

  describe("the return of the top-priority node", () => {
    it("the first acquire after it took the role back goes to it at once, not after the reconnect interval", async () => {
      // Far beyond this test's patience: only the redirect can bring the connection back in time.
      const { cluster, newClient } = await start({ reconnectIntervalMs: 600_000 });
      const client = await newClient();
      const promoted = cluster.nodes[1]!.logs.length;
      await cluster.nodes[0]!.kill("SIGKILL");
      await cluster.nodes[1]!.waitForServing({ since: promoted });
      const during = await client.acquire("av:return:during", { leaseMs: 30_000, waitMs: 8_000 });
      expect(grantedBy(during.token)).toBe(1);
      expect(await during.release()).toBe(true);

      const returned = cluster.nodes[0]!.logs.length;
      const followed = cluster.nodes[1]!.logs.length;
      await cluster.restart(0);
      await cluster.nodes[0]!.waitForServing({ since: returned });
      await cluster.nodes[1]!.waitForFollowing(cluster.advertised(0), { since: followed });
      const after = await client.acquire("av:return:after", { leaseMs: 30_000, waitMs: 8_000 });
      expect(grantedBy(after.token)).toBe(0);
      expect(await after.release()).toBe(true);
    });
  });

  describe("a client cut off from the active but reaching the standbys", () => {
    it("is redirected to an active it cannot reach: no grant, LockTimeoutError when the wait runs out, and its old lock is lost to a higher token", async () => {
      const { cluster, newClient } = await start();
      const client = await newClient();
      const held = await client.acquire("av:cut:held", { leaseMs: 1_000 });
      // Clients' connections through node 0's proxy are reset at their first request; the peers'
      // links still pass, so node 0 stays the active and the standbys keep redirecting to it.
      cluster.proxies[0]!.cut("clients");
      cleanup.push(() => cluster.heal());
      // Its lease runs on the active; no node it reaches can confirm an extension before it ends.
      const extending = held.extend().catch((error: unknown) => error);
      const waited = await client
        .acquire("av:cut:new", { leaseMs: 30_000, waitMs: 1_500 })
        .catch((error: unknown) => error);
      expect(waited).toBeInstanceOf(LockTimeoutError);
      expect(await extending).toBeInstanceOf(LockLostError);
      const info = await cluster.info(0);
      expect(info).toMatchObject({ role: "active", waiters: "0" });
      // A client that does reach the active gets the key once the lease ran out, with a higher
      // token: what a fenced resource needs to refuse the cut-off holder's late writes.
      using direct = await cluster.connect(0);
      const reply = await direct.request("A av:cut:held 30 5 other");
      expect(reply).toMatch(/^A av:cut:held \d+ other$/);
      expect(BigInt(reply.split(" ")[2]!)).toBeGreaterThan(held.token);
    });
  });
});
