import { describe, expect, it } from "vitest";
import { connectScripted, SimWorld } from "./sim/world.js";

/**
 * A restarted standby of the highest priority loads the active's snapshot, a slice per turn (at
 * millions of holders, seconds), and the active dies meanwhile: the standby must not promote with
 * the half of the table it has loaded, nor may the other standby, which holds all of it, promote
 * over it. It promotes once its load is done, with every holder. On the simulator's manual clock:
 * eight holders per 100 ms, so a load of 240 outlasts the peer timeout and, with a coordinator,
 * the dead active's ownership lease.
 */
const KEYS = 240;

describe("a standby whose active dies while it loads a snapshot", () => {
  it.each([
    ["heartbeats", false],
    ["a coordinator", true],
  ])("promotes (with %s) only once the whole table is loaded", async (_, coordinated) => {
    const world = new SimWorld({ seed: 3, nodes: 3, coordinated, loadPauseMs: 100 });
    for (const node of world.nodes) node.start();
    expect(await world.runFor(5_000, () => world.node(0).serving)).toBe(true);
    const client = await connectScripted(world, "c", "n0:7420");
    for (let i = 0; i < KEYS; i++) expect(await client.request(`A k${i} 60000 0 r${i}`)).toMatch(/^A /);
    const synced = () => world.node(1).table().size === KEYS && world.node(2).table().size === KEYS;
    expect(await world.runFor(10_000, synced)).toBe(true);

    world.node(1).kill();
    world.node(1).start();
    expect(await world.runFor(5_000, () => world.node(1).cluster?.loadingSnapshot === true)).toBe(true);
    world.node(0).kill();
    const promotedAt = world.now;
    let loadedAt: number | undefined;
    const serving = await world.runFor(20_000, () => {
      if (loadedAt === undefined && world.node(1).cluster?.loadingSnapshot === false) loadedAt = world.now;
      return world.servingCount > 0;
    });
    expect(serving).toBe(true);
    // The load outlasted the active's death by more than the peer timeout: the promotion waited.
    expect(loadedAt! - promotedAt).toBeGreaterThan(500);
    expect(world.node(1).serving).toBe(true);
    expect(world.node(1).table().size).toBe(KEYS);
    expect(world.node(2).lock?.role).toBe("standby");
  });
});
