import { describe, expect, it } from "vitest";
import { MemoryCoordinationStore } from "../coordination/memory-store.js";
import { ManualClock } from "../engine/clock.js";
import { ACTIVE_FRESH_MS, ClusterActives } from "./cluster-actives.js";

/** A store that counts lease reads. */
function countingStore(clock: ManualClock) {
  const store = new MemoryCoordinationStore(clock);
  let reads = 0;
  const readLease = store.readLease.bind(store);
  store.readLease = (cluster) => {
    reads += 1;
    return readLease(cluster);
  };
  return { store, reads: () => reads };
}

const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("ClusterActives", () => {
  it("names another cluster's lease holder, read on demand at most once per interval", async () => {
    const clock = new ManualClock();
    const { store, reads } = countingStore(clock);
    const actives = new ClusterActives(store, clock);
    await store.acquireLease("west", "10.0.1.2:7420 5f3a9c2e", 5_000);
    // The first redirect knows nothing yet and starts the read; the next ones use its answer.
    expect(actives.activeOf("west")).toBeUndefined();
    await settled();
    expect(actives.activeOf("west")).toBe("10.0.1.2:7420");
    expect(actives.activeOf("west")).toBe("10.0.1.2:7420");
    expect(reads()).toBe(1);
    // A new holder is seen after the interval.
    clock.advance(6_000);
    await store.acquireLease("west", "10.0.1.3:7420 77aa01b2", 5_000);
    expect(actives.activeOf("west")).toBe("10.0.1.2:7420");
    await settled();
    expect(actives.activeOf("west")).toBe("10.0.1.3:7420");
    expect(reads()).toBe(2);
    // Nobody holds it: no active to name (the S reply names one of the cluster's addresses).
    clock.advance(ACTIVE_FRESH_MS + 6_000);
    actives.activeOf("west");
    await settled();
    expect(actives.activeOf("west")).toBeUndefined();
  });

  it("keeps the last answer when the store cannot be read, and asks again after the interval", async () => {
    const clock = new ManualClock();
    const { store, reads } = countingStore(clock);
    await store.acquireLease("west", "10.0.1.2:7420 5f3a9c2e", 60_000);
    const actives = new ClusterActives(store, clock);
    actives.activeOf("west");
    await settled();
    const working = store.readLease;
    store.readLease = () => Promise.reject(new Error("store down"));
    clock.advance(ACTIVE_FRESH_MS);
    expect(actives.activeOf("west")).toBe("10.0.1.2:7420");
    await settled();
    expect(actives.activeOf("west")).toBe("10.0.1.2:7420");
    store.readLease = working;
    clock.advance(ACTIVE_FRESH_MS);
    actives.activeOf("west");
    await settled();
    expect(reads()).toBe(2);
  });
});
