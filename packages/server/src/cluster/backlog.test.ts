import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Backlog, type Change, type FoldedFrame } from "./backlog.js";

interface Holder {
  token: bigint;
  deadline: number;
  id: string | undefined;
}

/** A standby's table, applying frames as the cluster does (`Cluster.onPeerFrame`). */
function apply(table: Map<string, Holder>, frame: Change | FoldedFrame, now: number): void {
  switch (frame.peer) {
    case "G":
      table.set(frame.key, { token: frame.token, deadline: now + frame.leaseMs, id: frame.id });
      return;
    case "F":
      table.delete(frame.key);
      return;
    case "X":
      // The live `!X` frame carries no id: the standby keeps the holder's.
      table.set(frame.key, {
        token: frame.token,
        deadline: now + frame.leaseMs,
        id: table.get(frame.key)?.id,
      });
      return;
  }
}

describe("Backlog", () => {
  it("keeps each key's final state, stamped with the latest sequence number", () => {
    const backlog = new Backlog();
    backlog.record({ peer: "G", seq: 1, key: "a", token: 10n, leaseMs: 5_000, id: "r1" }, 5_000);
    backlog.record({ peer: "F", seq: 2, key: "a", token: 10n }, 0);
    backlog.record({ peer: "G", seq: 3, key: "a", token: 11n, leaseMs: 5_000, id: "r2" }, 6_000);
    backlog.record({ peer: "X", seq: 4, key: "b", token: 7n, leaseMs: 9_000, id: undefined }, 9_000);
    backlog.record({ peer: "F", seq: 5, key: "c", token: 8n }, 0);
    expect(backlog.size).toBe(3);
    expect(backlog.changedSince(0, 2_000)).toEqual([
      { peer: "G", seq: 5, key: "a", token: 11n, leaseMs: 4_000, id: "r2" },
      { peer: "G", seq: 5, key: "b", token: 7n, leaseMs: 7_000 },
      { peer: "F", seq: 5, key: "c", token: 8n },
    ]);
    // Only what changed after a standby's last send.
    expect(backlog.changedSince(4, 2_000)).toEqual([{ peer: "F", seq: 5, key: "c", token: 8n }]);
  });

  it("folds a bundle's keys (grants in a row with one token) into a row, however its keys' entries are ordered", () => {
    const backlog = new Backlog();
    backlog.record({ peer: "G", seq: 1, key: "b", token: 10n, leaseMs: 5_000, id: "r1" }, 5_000);
    backlog.record({ peer: "G", seq: 2, key: "z", token: 11n, leaseMs: 5_000, id: "r2" }, 5_000);
    backlog.record({ peer: "F", seq: 3, key: "b", token: 10n }, 0);
    // The bundle t12 of a and b: b's entry is older than z's, a's newer.
    backlog.record({ peer: "G", seq: 4, key: "a", token: 12n, leaseMs: 5_000, id: "t" }, 5_000);
    backlog.record({ peer: "G", seq: 5, key: "b", token: 12n, leaseMs: 5_000, id: "t" }, 5_000);
    expect(backlog.changedSince(0, 0).map((frame) => `${frame.key}:${frame.token}`)).toEqual([
      "z:11",
      "b:12",
      "a:12",
    ]);
  });

  it("sends nothing for a lock taken and freed since the standby's last send, except a stamp", () => {
    const backlog = new Backlog();
    backlog.record({ peer: "G", seq: 1, key: "a", token: 1n, leaseMs: 1_000, id: undefined }, 1_000);
    backlog.record({ peer: "F", seq: 2, key: "a", token: 1n }, 0);
    backlog.record({ peer: "G", seq: 3, key: "b", token: 2n, leaseMs: 1_000, id: undefined }, 1_000);
    backlog.record({ peer: "F", seq: 4, key: "b", token: 2n }, 0);
    backlog.record({ peer: "G", seq: 5, key: "c", token: 3n, leaseMs: 1_000, id: undefined }, 1_000);
    // Neither `a` nor `b` was ever held as far as a standby sent nothing since 0 knows.
    expect(backlog.changedSince(0, 0)).toEqual([{ peer: "G", seq: 5, key: "c", token: 3n, leaseMs: 1_000 }]);
    // One that was sent the grant of `a` (seq 1) must hear that it was freed.
    expect(backlog.changedSince(1, 0).map((frame) => frame.key)).toEqual(["a", "c"]);
    // With only such keys changed, one of their frees still carries the sequence number to acknowledge.
    const quiet = new Backlog();
    quiet.record({ peer: "G", seq: 7, key: "x", token: 9n, leaseMs: 1_000, id: undefined }, 1_000);
    quiet.record({ peer: "F", seq: 8, key: "x", token: 9n }, 0);
    expect(quiet.changedSince(6, 0)).toEqual([{ peer: "F", seq: 8, key: "x", token: 9n }]);
  });

  it("sends a lease as what remains of it, never below zero", () => {
    const backlog = new Backlog();
    backlog.record({ peer: "G", seq: 1, key: "k", token: 1n, leaseMs: 1_000, id: undefined }, 1_000);
    backlog.record({ peer: "X", seq: 2, key: "j", token: 2n, leaseMs: 4_000.4, id: "r" }, 4_000.4);
    expect(backlog.changedSince(0, 2_000)).toEqual([
      { peer: "G", seq: 2, key: "k", token: 1n, leaseMs: 0 },
      { peer: "G", seq: 2, key: "j", token: 2n, leaseMs: 2_001, id: "r" },
    ]);
  });

  it("forgets what every standby was sent, and reuses the entries", () => {
    const backlog = new Backlog();
    backlog.record({ peer: "G", seq: 1, key: "a", token: 1n, leaseMs: 1_000, id: "r" }, 1_000);
    backlog.record({ peer: "G", seq: 2, key: "b", token: 2n, leaseMs: 1_000, id: undefined }, 1_000);
    backlog.prune(1);
    expect(backlog.size).toBe(1);
    backlog.record({ peer: "F", seq: 3, key: "c", token: 3n }, 0);
    expect(backlog.changedSince(0, 0).map((frame) => frame.key)).toEqual(["b", "c"]);
    backlog.clear();
    expect(backlog.size).toBe(0);
  });

  /**
   * Model check: random valid histories of grants, frees and extensions, and two standbys that
   * fell behind at different points. Each applies its live part frame by frame, then the state of
   * every key changed since; both end with exactly the active's table (tokens, ids, and lease ends).
   */
  it("leaves every standby with exactly the active's table, wherever it fell behind", () => {
    const keys = ["a", "b", "c", "d"];
    const step = fc.record({
      kind: fc.constantFrom("grant", "free", "extend"),
      key: fc.constantFrom(...keys),
      leaseMs: fc.integer({ min: 0, max: 10_000 }),
      id: fc.option(fc.constantFrom("r1", "r2"), { nil: undefined }),
      advanceMs: fc.integer({ min: 0, max: 50 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.nat(60), fc.nat(60), (steps, cutA, cutB) => {
        const active = new Map<string, Holder>();
        const history: Array<{ change: Change; at: number }> = [];
        let now = 0;
        let token = 0n;
        for (const s of steps) {
          now += s.advanceMs;
          const held = active.get(s.key);
          const seq = history.length + 1;
          let change: Change;
          if (s.kind === "grant" && !held) {
            token += 1n;
            active.set(s.key, { token, deadline: now + s.leaseMs, id: s.id });
            change = { peer: "G", seq, key: s.key, token, leaseMs: s.leaseMs, ...(s.id ? { id: s.id } : {}) };
          } else if (s.kind === "extend" && held) {
            held.deadline = now + s.leaseMs;
            change = { peer: "X", seq, key: s.key, token: held.token, leaseMs: s.leaseMs, id: held.id };
          } else if (held) {
            active.delete(s.key);
            change = { peer: "F", seq, key: s.key, token: held.token };
          } else {
            continue;
          }
          history.push({ change, at: now });
        }
        const cuts = [Math.min(cutA, history.length), Math.min(cutB, history.length)];
        const backlog = new Backlog();
        // Recording starts when the first standby falls behind.
        for (const { change, at } of history.slice(Math.min(...cuts)))
          backlog.record(change, change.peer === "F" ? 0 : at + change.leaseMs);
        normalise(active, now);
        for (const cut of cuts) {
          const standby = new Map<string, Holder>();
          for (const { change, at } of history.slice(0, cut)) apply(standby, change, at);
          const frames = backlog.changedSince(cut, now);
          expect(frames.length).toBeLessThanOrEqual(keys.length);
          for (const frame of frames) apply(standby, frame, now);
          expect(normalise(standby, now)).toEqual(active);
        }
      }),
      { numRuns: 500 },
    );
  });
});

/** A lease already past its end (the engine expires it on its next tick) is due at once either way. */
function normalise(table: Map<string, Holder>, now: number): Map<string, Holder> {
  for (const holder of table.values()) holder.deadline = Math.max(holder.deadline, now);
  return table;
}
