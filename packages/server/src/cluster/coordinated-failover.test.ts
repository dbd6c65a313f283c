import { describe, expect, it } from "vitest";
import { SIM_CLUSTER } from "./sim/sim-store.js";
import { SimWorld } from "./sim/world.js";

/**
 * A coordinated cluster's failover after kill -9, on the simulator's manual clock: the successor
 * can take the lease only once the store lets it expire, a lease after the dead active's last
 * renewal; from then it must not wait for its next heartbeat tick to ask again.
 */
describe("coordinated failover after kill -9", () => {
  it("the successor serves within a fifth of a heartbeat (plus store calls) of the lease's expiry, whatever the phase", async () => {
    const lateByPhase: number[] = [];
    // The standbys' heartbeat ticks at ten phases of the active's lease renewals.
    for (let phase = 0; phase < 10; phase++) {
      const world = new SimWorld({ seed: 11, nodes: 3, coordinated: true });
      world.node(0).start();
      await world.runFor(phase * 10);
      world.node(1).start();
      world.node(2).start();
      await world.runFor(3_000, () => world.node(0).serving);
      await world.runFor(1_000);
      const lease = world.store!.state.readLease(SIM_CLUSTER);
      expect(lease?.holder).toMatch(/^n0:7420 /);
      const expiresAt = world.now + lease!.remainingMs;
      world.node(0).kill();
      expect(await world.runFor(4_000, () => world.servingCount === 1)).toBe(true);
      expect(world.now).toBeGreaterThanOrEqual(expiresAt);
      lateByPhase.push(world.now - expiresAt);
    }
    // A retry every 20 ms, then an acquire and the epochs: two store calls of at most 5 ms each way.
    expect(Math.max(...lateByPhase)).toBeLessThanOrEqual(20 + 2 * 10);
  });
});
