import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Backlog, type BacklogFrame } from "./backlog.js";

interface Holder {
  token: bigint;
  deadline: number;
  id: string | undefined;
}

/** A standby's table, applying frames exactly as the cluster does (`Cluster.onPeerFrame`). */
function applyFrame(table: Map<string, Holder>, frame: BacklogFrame, now: number): void {
  switch (frame.peer) {
    case "G":
      table.set(frame.key, { token: frame.token, deadline: now + frame.leaseMs, id: frame.id });
      return;
    case "F":
      if (table.get(frame.key)?.token === frame.token) table.delete(frame.key);
      return;
    case "X":
      table.set(frame.key, {
        token: frame.token,
        deadline: now + frame.leaseMs,
        id: table.get(frame.key)?.id,
      });
      return;
  }
}

describe("Backlog", () => {
  it("folds a key's changes into its final state, stamped with the latest sequence number", () => {
    const backlog = new Backlog();
    backlog.grant(1, "a", 10n, 5_000, "r1");
    backlog.free(2, "a", 10n);
    backlog.grant(3, "a", 11n, 6_000, "r2");
    backlog.extend(4, "b", 7n, 9_000);
    backlog.free(5, "c", 8n);
    expect(backlog.size).toBe(3);
    expect(backlog.drain(1_000)).toEqual([
      { peer: "G", seq: 5, key: "a", token: 11n, leaseMs: 5_000, id: "r2" },
      { peer: "X", seq: 5, key: "b", token: 7n, leaseMs: 8_000 },
      { peer: "F", seq: 5, key: "c", token: 8n },
    ]);
    expect(backlog.size).toBe(0);
  });

  it("frees the token the standby holds, not the last one granted in between", () => {
    const backlog = new Backlog();
    backlog.free(1, "k", 1n); // the standby holds 1
    backlog.grant(2, "k", 2n, 100, undefined);
    backlog.free(3, "k", 2n);
    expect(backlog.drain(0)).toEqual([{ peer: "F", seq: 3, key: "k", token: 1n }]);
  });

  it("sends a lease as what remains of it when drained, never below zero", () => {
    const backlog = new Backlog();
    backlog.grant(1, "k", 1n, 1_000, undefined);
    backlog.grant(2, "j", 2n, 1_000, undefined);
    backlog.extend(3, "j", 2n, 4_000.4);
    expect(backlog.drain(2_000)).toEqual([
      { peer: "G", seq: 3, key: "k", token: 1n, leaseMs: 0 },
      { peer: "G", seq: 3, key: "j", token: 2n, leaseMs: 2_001 },
    ]);
  });

  /**
   * Model check: random valid histories of grants, frees and extensions. The standby applies the
   * first part live, frame by frame; the rest goes through the backlog; after the drain its table
   * equals the active's, holder for holder (tokens, ids, and deadlines as of the drain).
   */
  it("leaves a standby with exactly the active's table, whatever happened while it was behind", () => {
    const keys = ["a", "b", "c", "d"];
    const step = fc.record({
      kind: fc.constantFrom("grant", "free", "extend"),
      key: fc.constantFrom(...keys),
      leaseMs: fc.integer({ min: 0, max: 10_000 }),
      id: fc.option(fc.constantFrom("r1", "r2"), { nil: undefined }),
      advanceMs: fc.integer({ min: 0, max: 50 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.nat(60), (steps, liveCount) => {
        const active = new Map<string, Holder>();
        const standby = new Map<string, Holder>();
        const backlog = new Backlog();
        let now = 0;
        let seq = 0;
        let token = 0n;
        steps.forEach((s, index) => {
          now += s.advanceMs;
          const held = active.get(s.key);
          let frame: BacklogFrame;
          if (s.kind === "grant" && !held) {
            token += 1n;
            active.set(s.key, { token, deadline: now + s.leaseMs, id: s.id });
            frame = {
              peer: "G",
              seq: ++seq,
              key: s.key,
              token,
              leaseMs: s.leaseMs,
              ...(s.id ? { id: s.id } : {}),
            };
          } else if (s.kind === "extend" && held) {
            held.deadline = now + s.leaseMs;
            frame = { peer: "X", seq: ++seq, key: s.key, token: held.token, leaseMs: s.leaseMs };
          } else if (held) {
            active.delete(s.key);
            frame = { peer: "F", seq: ++seq, key: s.key, token: held.token };
          } else {
            return;
          }
          if (index < liveCount) applyFrame(standby, frame, now);
          else backlog.add(frame, now);
        });
        const drained = backlog.drain(now);
        expect(drained.length).toBeLessThanOrEqual(keys.length);
        for (const frame of drained) {
          expect(frame.seq).toBe(seq);
          applyFrame(standby, frame, now);
        }
        // A lease already past its end (the engine expires it on its next tick) is due at once on both.
        for (const table of [active, standby])
          for (const holder of table.values()) holder.deadline = Math.max(holder.deadline, now);
        expect(standby).toEqual(active);
      }),
      { numRuns: 500 },
    );
  });
});
