import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import { describe, expect, it } from "vitest";
import { MemoryEpochStore } from "./epoch/epoch-store.js";
import { DEFAULT_SERVER_LIMITS } from "./limits.js";
import { LockNode } from "./node.js";

describe("LockNode: a promoted standby's replicated leases", () => {
  it("all run out once it is active, though it schedules them a chunk per turn", () => {
    const clock = new ManualClock(1_000);
    const timers = new TimerQueue(clock, { host: "manual" });
    const node = new LockNode({
      dataDir: undefined,
      limits: DEFAULT_SERVER_LIMITS,
      advertise: "127.0.0.1:7000",
      clock,
      timers,
      startAs: "standby",
      epochStore: new MemoryEpochStore(),
      wallNow: () => 1_800_000_000_000,
    });
    // More than one turn's chunk, replicated while a standby with 100 ms leases (deferred).
    const count = 20_000;
    for (let i = 0; i < count; i++) node.holderTable.installHolder(`k${i}`, BigInt(i + 1), 100, undefined);
    clock.advance(200);
    timers.runDue();
    expect(node.keyCount).toBe(count);
    node.setRole("active", node.advertise);
    node.takeEpoch(true);
    // The promoting turn scheduled a chunk; the next turns (timers due now) the rest: none is left
    // behind unscheduled, so every lease, long over, is reclaimed.
    timers.runDue();
    expect(node.keyCount).toBe(0);
    node.close();
  });
});
