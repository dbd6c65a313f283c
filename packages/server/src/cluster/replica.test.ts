import type { SnapshotHolderFrame } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import type { Snapshot } from "./peer/peer-session.js";
import { SnapshotHolders } from "./peer/snapshot-holders.js";
import { Replica } from "./replica.js";
import { standbyTable } from "./replica.test.data.js";
import type { LoadPacing } from "./snapshot-load.js";

/** A standby's table, its node's timers on a manual clock, and a replica of it. */
function standby(pacing?: LoadPacing) {
  const node = standbyTable();
  return { ...node, replica: new Replica(node.table, node.timers, pacing) };
}

type Table = ReturnType<typeof standby>["table"];

const held = (table: Table) => [...table.holders()].map(({ key, token, id }) => [key, token, id ?? null]);

/** A snapshot's holders as a PeerSession collects them from its `!h` frames. */
function holdersOf(...frames: Array<Omit<SnapshotHolderFrame, "peer">>): SnapshotHolders {
  const holders = new SnapshotHolders();
  for (const frame of frames) holders.push({ peer: "h", ...frame });
  return holders;
}

/** A snapshot of `count` exclusive holders `k0`, `k1`… with tokens 100, 101… */
function snapshotOf(count: number, seq = 0): Snapshot {
  const frames = Array.from({ length: count }, (_, i) => ({
    key: `k${i}`,
    token: 100n + BigInt(i),
    remainingMs: 60_000,
  }));
  return { epoch: 1n, seq, holders: holdersOf(...frames) };
}

/** Two holders a turn, a millisecond apart: a load's turns can be told apart on the manual clock. */
const SLOW: LoadPacing = { perTurn: 2, turnMs: Number.POSITIVE_INFINITY, pauseMs: 1 };

describe("Replica", () => {
  it("a snapshot replaces the table and names the source once loaded; only the source's changes apply", () => {
    const { table, replica, turn } = standby();
    table.installHolder("stale", 5n, 1_000, undefined);
    expect(replica.apply("a:1", { peer: "G", seq: 1, key: "x", token: 9n, leaseMs: 100 })).toBe(false);
    let loaded = 0;
    replica.load(
      "a:1",
      { epoch: 1n, seq: 3, holders: holdersOf({ key: "k", token: 7n, remainingMs: 500, id: "r1" }) },
      () => loaded++,
    );
    expect(replica.source).toBeUndefined();
    expect(replica.loadingFrom).toBe("a:1");
    turn(0);
    expect(loaded).toBe(1);
    expect(replica.source).toBe("a:1");
    expect(replica.loadingFrom).toBeUndefined();
    expect(held(table)).toEqual([["k", 7n, "r1"]]);
    expect(replica.apply("b:1", { peer: "F", seq: 4, key: "k", token: 7n })).toBe(false);
    expect(held(table)).toEqual([["k", 7n, "r1"]]);
    // An extension keeps the holder's id, which its owner may release with after a failover.
    expect(replica.apply("a:1", { peer: "X", seq: 4, key: "k", token: 7n, leaseMs: 900 })).toBe(true);
    expect(held(table)).toEqual([["k", 7n, "r1"]]);
    expect(table.holder("k")?.remainingMs).toBe(900);
    replica.apply("a:1", { peer: "G", seq: 5, key: "j", token: 8n, leaseMs: 100, id: "r2" });
    replica.apply("a:1", { peer: "F", seq: 6, key: "k", token: 7n });
    expect(held(table)).toEqual([["j", 8n, "r2"]]);
    replica.detach();
    expect(replica.source).toBeUndefined();
    expect(replica.apply("a:1", { peer: "F", seq: 7, key: "j", token: 8n })).toBe(false);
  });

  it("counts the grants it applied from its source's stream: not a snapshot's holders, extensions or frees", () => {
    const { replica, turn } = standby();
    replica.apply("b:1", { peer: "G", seq: 1, key: "x", token: 9n, leaseMs: 100 });
    replica.load("a:1", snapshotOf(1), () => {});
    turn(0);
    replica.apply("a:1", { peer: "G", seq: 1, key: "j", token: 8n, leaseMs: 100 });
    replica.apply("a:1", { peer: "X", seq: 2, key: "j", token: 8n, leaseMs: 900 });
    replica.apply("a:1", { peer: "F", seq: 3, key: "j", token: 8n });
    replica.apply("a:1", { peer: "G", seq: 4, key: "j", token: 10n, leaseMs: 100 });
    replica.apply("b:1", { peer: "G", seq: 5, key: "y", token: 11n, leaseMs: 100 });
    expect(replica.grantsApplied).toBe(2);
  });

  it("loads a snapshot a slice per turn, never more than its pacing allows", () => {
    const { table, replica, turn } = standby(SLOW);
    const snapshot = snapshotOf(9);
    let loaded = false;
    replica.load("a:1", snapshot, () => {
      loaded = true;
    });
    // Nothing in the turn the snapshot completed in: its read stays short.
    expect(table.keyCount).toBe(0);
    const counts: number[] = [];
    // The first turn finds the table empty already (its clearing step), then two holders a turn.
    for (let i = 0; i < 10 && !loaded; i++) {
      turn();
      counts.push(table.keyCount);
    }
    expect(counts).toEqual([0, 2, 4, 6, 8, 9]);
    expect(loaded).toBe(true);
    expect(replica.source).toBe("a:1");
  });

  it("clears the table it replaces a slice per turn too", () => {
    const { table, replica, turn } = standby(SLOW);
    for (let i = 0; i < 5; i++) table.installHolder(`old${i}`, 50n + BigInt(i), 1_000, undefined);
    replica.load("a:1", snapshotOf(2), () => {});
    const counts: number[] = [];
    for (let i = 0; i < 6; i++) {
      turn();
      counts.push(table.keyCount);
    }
    // Two keys a turn go; the turn that finds none left starts on the snapshot's holders.
    expect(counts).toEqual([3, 1, 0, 2, 2, 2]);
    expect(held(table)).toEqual([
      ["k0", 100n, null],
      ["k1", 101n, null],
    ]);
    expect(table.maxHeldToken()).toBe(101n);
  });

  it("applies its source's changes that arrive during a load after every holder of the snapshot, in order", () => {
    const { table, replica, turn } = standby(SLOW);
    const loadedAt: number[] = [];
    replica.load("a:1", snapshotOf(6), () => loadedAt.push(table.keyCount));
    turn();
    turn();
    // k4 and k5 are not installed yet: a free and a new grant of k5 must come after its holder.
    expect(table.holder("k5")).toBeUndefined();
    expect(replica.apply("a:1", { peer: "F", seq: 1, key: "k5", token: 105n })).toBe(true);
    expect(replica.apply("a:1", { peer: "G", seq: 2, key: "k5", token: 200n, leaseMs: 100, id: "r9" })).toBe(
      true,
    );
    // k0 is installed: its free waits all the same (nothing overtakes the snapshot).
    expect(replica.apply("a:1", { peer: "F", seq: 3, key: "k0", token: 100n })).toBe(true);
    // Another node's stream is not the load's.
    expect(replica.apply("b:1", { peer: "F", seq: 4, key: "k1", token: 101n })).toBe(false);
    expect(table.holder("k0")?.token).toBe(100n);
    expect(replica.source).toBeUndefined();
    for (let i = 0; i < 10 && loadedAt.length === 0; i++) turn();
    expect(loadedAt).toEqual([5]);
    expect(held(table)).toEqual([
      ["k1", 101n, null],
      ["k2", 102n, null],
      ["k3", 103n, null],
      ["k4", 104n, null],
      ["k5", 200n, "r9"],
    ]);
  });

  it("a lease counts from when the snapshot (or a change) arrived, however long the load took", () => {
    const { table, replica, turn } = standby(SLOW);
    replica.load("a:1", snapshotOf(4), () => {});
    turn();
    replica.apply("a:1", { peer: "G", seq: 1, key: "late", token: 300n, leaseMs: 1_000 });
    for (let i = 0; i < 5; i++) turn(10);
    expect(replica.source).toBe("a:1");
    // The snapshot completed at 0 and the grant came at 1; both were installed later, and it is now 51.
    expect(table.holder("k3")?.remainingMs).toBe(60_000 - 51);
    expect(table.holder("late")?.remainingMs).toBe(1_000 - 50);
  });

  it("a second snapshot during a load stops the first where it is: only the second's holders and changes remain", () => {
    const { table, replica, turn } = standby(SLOW);
    const loaded: string[] = [];
    replica.load("a:1", snapshotOf(6), () => loaded.push("first"));
    turn();
    turn();
    replica.apply("a:1", { peer: "G", seq: 1, key: "from-first", token: 400n, leaseMs: 100 });
    const second: Snapshot = {
      epoch: 2n,
      seq: 5,
      holders: holdersOf({ key: "z", token: 500n, remainingMs: 1_000 }),
    };
    replica.load("b:1", second, () => loaded.push("second"));
    expect(replica.loadingFrom).toBe("b:1");
    expect(replica.apply("a:1", { peer: "G", seq: 2, key: "late-first", token: 401n, leaseMs: 100 })).toBe(
      false,
    );
    replica.apply("b:1", { peer: "G", seq: 6, key: "y", token: 501n, leaseMs: 100 });
    for (let i = 0; i < 10; i++) turn();
    expect(loaded).toEqual(["second"]);
    expect(replica.source).toBe("b:1");
    expect(held(table)).toEqual([
      ["z", 500n, null],
      ["y", 501n, null],
    ]);
  });

  it("detached during a load (the node became the active), it installs nothing more and follows no one", () => {
    const { table, timers, replica, turn } = standby(SLOW);
    let loaded = false;
    replica.load("a:1", snapshotOf(6), () => {
      loaded = true;
    });
    turn();
    turn();
    replica.detach();
    const count = table.keyCount;
    for (let i = 0; i < 5; i++) turn();
    expect(table.keyCount).toBe(count);
    expect(timers.size).toBe(0);
    expect(loaded).toBe(false);
    expect(replica.source).toBeUndefined();
    expect(replica.loadingFrom).toBeUndefined();
    expect(replica.apply("a:1", { peer: "G", seq: 1, key: "x", token: 9n, leaseMs: 100 })).toBe(false);
  });
});
