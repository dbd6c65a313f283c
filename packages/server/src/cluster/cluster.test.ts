import { tokenEpoch } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { connectScripted, SimWorld } from "./sim/world.js";

/**
 * The Cluster (promotion, replication, handoff, demotion, resync) through in-memory links on a
 * manual clock: real LockNode, Replicator, Cluster and PeerSession per node, no sockets, no sleeps.
 */
async function startedCluster(nodes = 3) {
  const world = new SimWorld({ seed: 7, nodes });
  for (const node of world.nodes) node.start();
  await world.runFor(2_000, () => world.node(0).serving);
  expect(world.node(0).serving).toBe(true);
  // Every standby has the active's snapshot.
  await world.runFor(500);
  return world;
}

const token = (reply: string | undefined) => BigInt(reply!.split(" ")[2]!);

describe("Cluster over in-memory links", () => {
  it("the highest-priority node becomes the active; the others follow it", async () => {
    const world = await startedCluster();
    expect(world.nodes.map((node) => node.lock?.role)).toEqual(["active", "standby", "standby"]);
    expect(world.nodes.map((node) => node.lock?.activeAddress)).toEqual(Array(3).fill("n0:7420"));
  });

  it("a standby applies the active's stream: grants, extensions and releases", async () => {
    const world = await startedCluster();
    const client = await connectScripted(world, "c", "n0:7420");
    const granted = await client.request("A jobs 5000 0 r1");
    expect(granted).toMatch(/^A jobs \d+ r1$/);
    await world.runFor(50);
    expect(world.node(1).table()).toEqual(new Map([["jobs", token(granted)]]));
    expect(world.node(2).table()).toEqual(world.node(0).table());
    expect(await client.request(`R jobs ${token(granted)}`)).toBe("R jobs 1");
    await world.runFor(50);
    expect(world.node(1).table().size).toBe(0);
  });

  it("a standby redirects clients to the active", async () => {
    const world = await startedCluster();
    const client = await connectScripted(world, "c", "n1:7420");
    expect(await client.request("A jobs 5000 0 r1")).toBe("M A jobs n0:7420 r1");
  });

  it("kill -9 of the active: the next node promotes above its epoch, and a replicated holder can release", async () => {
    const world = await startedCluster();
    const client = await connectScripted(world, "c", "n0:7420");
    const granted = token(await client.request("A jobs 30000 0 r1"));
    await world.runFor(50);
    const oldEpoch = world.node(0).lock!.epoch;
    world.node(0).kill();
    await world.runFor(3_000, () => world.node(1).serving);
    expect(world.node(1).lock?.role).toBe("active");
    expect(world.node(1).lock!.epoch).toBeGreaterThan(oldEpoch);
    const other = await connectScripted(world, "c2", "n1:7420");
    // The holder proves ownership with its request id on a new connection to the new active.
    expect(await other.request(`R jobs ${granted} r1`)).toBe("R jobs 1");
    const next = token(await other.request("A jobs 1000 0 r2"));
    expect(tokenEpoch(next)).toBeGreaterThan(tokenEpoch(granted));
  });

  it("a graceful stop hands the role and the whole table to the next node", async () => {
    const world = await startedCluster();
    const client = await connectScripted(world, "c", "n0:7420");
    const granted = token(await client.request("A jobs 30000 0 r1"));
    world.node(0).stop();
    expect(await world.runFor(1_000, () => world.node(1).serving && !world.node(0).up)).toBe(true);
    expect(world.node(1).lock?.role).toBe("active");
    expect(world.node(1).table().get("jobs")).toBe(granted);
  });

  it("after a partition heals, the lower-priority active steps down and the winner moves above its epoch", async () => {
    const world = await startedCluster();
    world.partition([0]);
    await world.runFor(3_000, () => world.node(1).serving);
    expect(world.servingCount).toBe(2);
    const rivalEpoch = world.node(1).lock!.epoch;
    world.network.healAll();
    await world.runFor(3_000, () => world.node(1).lock?.role === "standby" && world.node(0).serving);
    expect(world.nodes.map((node) => node.lock?.role)).toEqual(["active", "standby", "standby"]);
    expect(world.node(0).lock!.epoch).toBeGreaterThan(rivalEpoch);
  });

  it("a standby ignores a rival's snapshot delivered after a partition heals, and matches the active", async () => {
    // n1 is cut off and promotes; its links to n2 stay open, so its snapshot (with a grant) waits
    // in TCP buffers and arrives at n2 once the partition heals, while n0 is n2's active.
    const world = await startedCluster();
    world.partition([1]);
    await world.runFor(3_000, () => world.node(1).serving);
    const rival = await connectScripted(world, "c", "n1:7420");
    expect(await rival.request("A jobs 30000 0 r1")).toMatch(/^A jobs /);
    world.network.healAll();
    await world.runFor(2_000);
    expect(world.nodes.map((node) => node.lock?.role)).toEqual(["active", "standby", "standby"]);
    expect(world.node(2).table()).toEqual(world.node(0).table());
    expect(world.node(1).table()).toEqual(world.node(0).table());
  });

  it("a one-way cut from the active to a standby makes no rival active (no epoch war, no outage)", async () => {
    const world = await startedCluster();
    const epoch = world.node(0).lock!.epoch;
    let rivals = 0;
    world.network.cut("n0:7420", "n1:7420");
    // n1 no longer hears n0, but n2 does and says so in its heartbeats.
    await world.runUntil(world.now + 10_000, undefined, () => {
      if (world.servingCount > 1) rivals += 1;
    });
    expect(rivals).toBe(0);
    expect(world.nodes.map((node) => node.lock?.role)).toEqual(["active", "standby", "standby"]);
    expect(world.node(0).serving).toBe(true);
    expect(world.node(0).lock!.epoch).toBe(epoch);
    // n1 redirects its clients to the active it cannot hear but n2 vouches for.
    const client = await connectScripted(world, "c", "n1:7420");
    expect(await client.request("A jobs 5000 0 r1")).toBe("M A jobs n0:7420 r1");
  });

  it("an active told of a rival's raised epoch by its `!P` grants above it at once", async () => {
    // n2 is cut off and promotes. After the heal n0 moves above n2's epoch and announces it with
    // `!P` on the stream it still has to n2 (its connection survived the partition), a heartbeat
    // before its next one would.
    const world = await startedCluster();
    world.partition([2]);
    await world.runFor(3_000, () => world.node(2).serving);
    const client = await connectScripted(world, "c", "n2:7420");
    const before = world.node(2).lock!.epoch;
    world.network.healAll();
    await world.runFor(2_000, () => world.node(2).toldEpoch > before);
    const told = world.node(2).toldEpoch;
    const reply = await client.request("A jobs 5000 0 r1");
    if (reply?.startsWith("A ")) expect(tokenEpoch(token(reply))).toBeGreaterThan(told);
    else expect(reply).toMatch(/^(M A jobs n0:7420 r1|E A jobs NO_ACTIVE )/);
  });
});
