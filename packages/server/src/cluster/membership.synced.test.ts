import { describe, expect, it } from "vitest";
import { ManualClock } from "../engine/clock.js";
import { Membership, type SelfState } from "./membership.js";

/**
 * Which standby promotes when the active dies while another standby has no copy of its table: a
 * restarted node still receiving (or loading) its snapshot. Heartbeats say which standbys are
 * synced (`!B … <synced>`); a synced standby promotes over one that is not, whatever their priority,
 * or every holder the synced one has would be lost (docs/consistency.md, "Failover").
 */
const PEERS = ["a:1", "b:1", "c:1"];
const timing = { heartbeatMs: 100, peerTimeoutMs: 500 };
const never = () => false;

function started(self: string) {
  const clock = new ManualClock(0);
  const m = new Membership(PEERS, self, timing, clock);
  clock.advance(1_000);
  return { clock, m };
}

function standby(syncedSince: number | undefined): SelfState {
  return { role: "standby", epoch: 1n, highestKnown: 2n, busy: false, syncedSince };
}

describe("Membership: a synced standby promotes over one that is not", () => {
  it("a synced standby promotes although a higher-priority standby is live, when that one says it is not synced", () => {
    const { m } = started("c:1");
    m.heard("a:1", "standby", 0n, undefined, false);
    expect(m.decide(standby(0), never)).toEqual({ action: "promote" });
  });

  it("an unsynced standby does not promote while a synced one is live, whatever its priority", () => {
    const { m } = started("a:1");
    m.heard("c:1", "standby", 1n, undefined, true);
    expect(m.decide(standby(undefined), never)).toEqual({ action: "none" });
    // Once no synced standby is live, the highest-priority node promotes, synced or not.
    const { m: alone } = started("a:1");
    alone.heard("c:1", "standby", 1n, undefined, false);
    expect(alone.decide(standby(undefined), never)).toEqual({ action: "promote" });
  });

  it("an unsynced higher-priority standby still keeps an unsynced lower one from promoting", () => {
    const { m } = started("c:1");
    m.heard("a:1", "standby", 0n, undefined, false);
    expect(m.decide(standby(undefined), never)).toEqual({ action: "none" });
  });

  it("a peer that does not say (lockd 0.1.0, or only joined) is counted as synced: the priority rule as before", () => {
    const { m } = started("c:1");
    m.heard("a:1", "standby", 0n, undefined);
    expect(m.decide(standby(0), never)).toEqual({ action: "none" });
    // Nor does an unsynced node defer to a peer that says nothing.
    const { m: high } = started("a:1");
    high.heard("c:1", "standby", 1n, undefined);
    expect(high.decide(standby(undefined), never)).toEqual({ action: "promote" });
  });

  it("a standby synced less than a peer timeout ago waits for a synced lower one to have heard it", () => {
    const { clock, m } = started("a:1");
    m.heard("c:1", "standby", 1n, undefined, true);
    const since = clock.now() - 200;
    expect(m.decide(standby(since), never)).toEqual({ action: "none" });
    clock.advance(300);
    m.heard("c:1", "standby", 1n, undefined, true);
    expect(m.decide(standby(since), never)).toEqual({ action: "promote" });
  });

  it("the lower synced standby waits for a higher one that says it is synced", () => {
    const { m } = started("c:1");
    m.heard("a:1", "standby", 1n, undefined, true);
    expect(m.decide(standby(0), never)).toEqual({ action: "none" });
  });

  it("a live active still comes first: no synced standby promotes beside it", () => {
    const { m } = started("c:1");
    m.heard("a:1", "standby", 0n, "b:1", false);
    m.heard("b:1", "active", 2n, "b:1", undefined);
    expect(m.decide(standby(0), never)).toEqual({ action: "none" });
  });
});
