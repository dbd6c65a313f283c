import { describe, expect, it } from "vitest";
import { connectScripted, SimWorld } from "./sim/world.js";

/**
 * A restarted standby of the highest priority loads the active's snapshot, a slice per turn (at
 * millions of holders, seconds), and the active dies meanwhile. The restarted standby must not
 * promote with the part of the table it has loaded; its heartbeats say it is not synced, so the
 * other standby, which holds the whole table, promotes at once instead of waiting for the load
 * (docs/consistency.md, "Failover"). Once the restarted one has the new active's snapshot, the
 * priority rule hands the role back to it, with every holder. On the simulator's manual clock: eight
 * holders per 100 ms, so a load of 240 outlasts the peer timeout and, with a coordinator, the dead
 * active's ownership lease.
 */
const KEYS = 240;

describe("a standby whose active dies while another standby loads a snapshot", () => {
  it.each([
    ["heartbeats", false],
    ["a coordinator", true],
  ])(
    "promotes (with %s) with every holder, and the loading one never with a part",
    async (_, coordinated) => {
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
      // Whoever serves first is the synced standby, with every holder, while the other still loads.
      expect(await world.runFor(20_000, () => world.servingCount > 0)).toBe(true);
      expect(world.node(2).serving).toBe(true);
      expect(world.node(2).table().size).toBe(KEYS);
      expect(world.node(1).serving).toBe(false);
      // Then the higher-priority node gets the new active's snapshot and the role back, whole.
      expect(await world.runFor(30_000, () => world.node(1).serving)).toBe(true);
      expect(world.node(1).table().size).toBe(KEYS);
      expect(world.node(2).lock?.role).toBe("standby");
    },
  );
});
