import { acquireMany, LockdCluster } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * The active dies while the highest-priority live standby has no copy of its table: a node that
 * restarted and has not loaded the active's snapshot yet (at millions of holders that takes tens of
 * seconds). It used to promote with its empty table, and every holder was lost although a
 * lower-priority standby had them all. Heartbeats now say which standbys are synced, and the synced
 * one promotes (docs/consistency.md, "Failover").
 *
 * Node 0's key limit is below the table's size, so it refuses every snapshot and stays unsynced for
 * as long as the test needs: the window is held open instead of raced.
 */
const LOCKS = 200;
const ID_PREFIX = "holder-";

describe("an unsynced higher-priority standby when the active dies", () => {
  let cluster: LockdCluster | undefined;
  afterEach(async () => {
    await cluster?.dispose();
    cluster = undefined;
  });

  it("the synced standby promotes, with every holder; the unsynced one follows it", async () => {
    cluster = await LockdCluster.start({
      nodes: 3,
      // A peer timeout of 1 s rides out a loaded CI machine (no false promotion to spoil the roles).
      args: ["--heartbeat-interval", "0.1", "--peer-timeout", "1"],
      nodeEnv: (index): Record<string, string> => (index === 0 ? { LOCKD_MAX_KEYS: String(LOCKS / 2) } : {}),
    });
    const [zero, one, two] = [cluster.nodes[0]!, cluster.nodes[1]!, cluster.nodes[2]!];
    await cluster.settled();
    // Node 1 takes over from node 0 and fills the table; node 2 follows it.
    let since = one.logs.length;
    await zero.kill("SIGKILL");
    await one.waitForServing({ since, timeoutMs: 20_000 });
    const holder = await cluster.connect(1);
    await acquireMany(holder, { prefix: "held:", count: LOCKS, leaseSeconds: 600, idPrefix: ID_PREFIX });
    while (Number((await cluster.info(2)).keys) !== LOCKS) await new Promise((r) => setTimeout(r, 50));

    // Node 0 comes back: it refuses node 1's snapshot (more holders than its key limit), again and
    // again, and says in its heartbeats that it is not synced; node 2 hears it.
    const zeroSince = zero.logs.length;
    since = two.logs.length;
    await cluster.restart(0);
    await zero.waitForLog((e) => typeof e.reason === "string" && e.reason.includes("key limit"), {
      since: zeroSince,
      timeoutMs: 20_000,
    });
    await two.waitForLog((e) => e.msg === "peer live" && e.peer === cluster!.advertised(0), {
      since,
      timeoutMs: 20_000,
    });

    since = two.logs.length;
    const zeroBefore = zero.logs.length;
    await one.kill("SIGKILL");
    // Whichever serves first: node 2 (synced) must, not node 0 (no table).
    const serving = (node: typeof zero, index: number, from: number) =>
      node.waitForServing({ since: from, timeoutMs: 20_000 }).then(
        () => index,
        () => undefined,
      );
    expect(await Promise.race([serving(two, 2, since), serving(zero, 0, zeroBefore)])).toBe(2);
    expect(Number((await cluster.info(2)).keys)).toBe(LOCKS);
    expect((await cluster.info(0)).role).toBe("standby");
    // No promotion of node 0 meanwhile (it would have dropped node 2's table by demoting it).
    expect(zero.logs.slice(zeroSince).filter((e) => e.msg === "role changed")).toEqual([]);
    // A holder of node 1's days releases on the new active with its request id.
    const owner = await cluster.connect(2);
    const last = LOCKS - 1;
    const id = `${ID_PREFIX}${last.toString(36)}`;
    const reply = await owner.request(`A held:${last} 600 0 ${id}`);
    const token = /^A held:\d+ (\d+)/.exec(reply)?.[1];
    expect(token, reply).toBeDefined();
    expect(await owner.request(`R held:${last} ${token} ${id}`)).toBe(`R held:${last} 1`);
  }, 120_000);
});
