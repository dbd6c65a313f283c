import { describe, expect, it } from "vitest";
import { ManualClock } from "../engine/clock.js";
import { Membership, type PeerState } from "./membership.js";

const PEERS = ["a:1", "b:1", "c:1"];
const timing = { heartbeatMs: 100, peerTimeoutMs: 500 };

function membership(self: string) {
  const clock = new ManualClock(0);
  return { clock, m: new Membership(PEERS, self, timing, clock) };
}

const never = () => false;
const always = () => true;

describe("Membership: who is active", () => {
  it("finds itself in the peers list and refuses a list without it or with duplicates", () => {
    expect(membership("b:1").m.self).toBe(1);
    expect(() => membership("z:1")).toThrow(/not in the peers list/);
    expect(() => new Membership(["a:1", "a:1"], "a:1", timing, new ManualClock())).toThrow(/duplicates/);
  });

  it("a standby waits one peer timeout after start before promoting", () => {
    const { clock, m } = membership("a:1");
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "none",
    });
    clock.advance(500);
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "promote",
    });
  });

  it("the highest-priority live node promotes; lower ones wait for it", () => {
    const { clock, m } = membership("b:1");
    clock.advance(600);
    m.heard("a:1", "standby", 1n, undefined);
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "none",
    });
    // a:1 goes silent for longer than the timeout: b:1 is now the highest-priority live node.
    clock.advance(501);
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "promote",
    });
  });

  it("a higher-priority standby follows a live lower-priority active instead of promoting", () => {
    const { clock, m } = membership("a:1");
    clock.advance(600);
    m.heard("b:1", "active", 3n, "b:1");
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "none",
    });
  });

  it("an active hands off to a live, synced higher-priority standby", () => {
    const { m } = membership("b:1");
    m.heard("a:1", "standby", 1n, "b:1");
    expect(m.decide({ role: "active", epoch: 4n, highestKnown: 4n, busy: false }, never)).toEqual({
      action: "none",
    });
    const decision = m.decide({ role: "active", epoch: 4n, highestKnown: 4n, busy: false }, always);
    expect(decision.action).toBe("handoff");
    expect((decision as { to: PeerState }).to.address).toBe("a:1");
    expect(m.decide({ role: "active", epoch: 4n, highestKnown: 4n, busy: true }, always)).toEqual({
      action: "none",
    });
  });

  it("two actives: the lower-priority one demotes, the higher one moves above any later epoch it knows of", () => {
    const high = membership("a:1").m;
    const low = membership("b:1").m;
    low.heard("a:1", "active", 2n, "a:1");
    expect(low.decide({ role: "active", epoch: 3n, highestKnown: 3n, busy: false }, never)).toMatchObject({
      action: "demote",
    });
    high.heard("b:1", "active", 3n, "b:1");
    // The rival's epoch reached this node's EpochKeeper (the Cluster learns every heartbeat's).
    expect(high.decide({ role: "active", epoch: 2n, highestKnown: 3n, busy: false }, never)).toEqual({
      action: "raise-epoch",
      above: 3n,
    });
    expect(high.decide({ role: "active", epoch: 4n, highestKnown: 4n, busy: false }, never)).toEqual({
      action: "none",
    });
  });

  it("is informed once every peer has been heard since start", () => {
    const { m } = membership("a:1");
    expect(m.heardEveryPeer()).toBe(false);
    m.heard("b:1", "standby", 1n, undefined);
    expect(m.heardEveryPeer()).toBe(false);
    m.heard("c:1", "standby", 1n, undefined);
    expect(m.heardEveryPeer()).toBe(true);
    expect(new Membership(["a:1"], "a:1", timing, new ManualClock()).heardEveryPeer()).toBe(true);
  });

  it("a peer is live for exactly the peer timeout after its last heartbeat", () => {
    const { clock, m } = membership("a:1");
    const heard = m.heard("b:1", "standby", 1n, undefined)!;
    expect(heard.previousRole).toBeUndefined();
    const b = heard.peer;
    expect(m.heard("b:1", "active", 2n, "b:1")?.previousRole).toBe("standby");
    clock.advance(500);
    expect(m.isLive(b)).toBe(true);
    clock.advance(1);
    expect(m.isLive(b)).toBe(false);
    expect(m.heard("a:1", "active", 1n, undefined)).toBeUndefined();
    expect(m.heard("unknown:1", "active", 1n, undefined)).toBeUndefined();
  });

  it("a standby that resumes after a stall listens for one peer timeout before it may promote", () => {
    const { clock, m } = membership("b:1");
    clock.advance(600);
    m.heard("a:1", "active", 1n, "a:1");
    // Stopped for 2 s: a:1 looks silent, but only because b:1 was not listening.
    clock.advance(2_000);
    m.resumedAfterStall();
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "none",
    });
    // The heartbeats that waited in its socket arrive: the active is alive, nothing to do.
    m.heard("a:1", "active", 1n, "a:1");
    clock.advance(500);
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "none",
    });
    // Once a:1 has been silent for a whole timeout while b:1 listens, b:1 promotes.
    clock.advance(1);
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "promote",
    });
  });

  it("reports each peer's liveness once per change, and no loss while listening after a stall", () => {
    const { clock, m } = membership("a:1");
    expect(m.livenessChanges()).toEqual([]);
    m.heard("b:1", "standby", 1n, undefined);
    expect(m.livenessChanges().map((peer) => peer.address)).toEqual(["b:1"]);
    expect(m.livenessChanges()).toEqual([]);
    clock.advance(2_000);
    m.resumedAfterStall();
    // Silent only because a:1 did not listen: not reported lost yet.
    expect(m.livenessChanges()).toEqual([]);
    clock.advance(500);
    expect(m.livenessChanges().map((peer) => peer.address)).toEqual(["b:1"]);
    expect(m.isLive(m.peerByAddress("b:1")!)).toBe(false);
  });

  it("a higher-priority active vouched for by a live peer keeps a standby from promoting and demotes an active", () => {
    const { clock, m } = membership("b:1");
    clock.advance(600);
    // b:1 cannot hear a:1, but c:1 hears it and names it as its active.
    m.heard("c:1", "standby", 1n, "a:1");
    expect(m.vouchedActive()?.address).toBe("a:1");
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "none",
    });
    const demote = m.decide({ role: "active", epoch: 1n, highestKnown: 1n, busy: false }, never);
    expect(demote).toMatchObject({ action: "demote", to: { address: "a:1" } });
    // Once c:1 no longer names it (it lost a:1 too), b:1 may promote.
    m.heard("c:1", "standby", 1n, undefined);
    expect(m.decide({ role: "standby", epoch: 1n, highestKnown: 1n, busy: false }, never)).toEqual({
      action: "promote",
    });
  });

  it("hearsay that a node which handed off to this one is still active does not demote it (handoff race)", () => {
    const { clock, m } = membership("b:1");
    clock.advance(600);
    m.heard("a:1", "active", 1n, "a:1");
    m.heard("c:1", "standby", 1n, "a:1");
    // a:1 hands off to b:1 and stops; c:1 has not heard of it and still names a:1 for a while.
    m.steppedDown(m.peerByAddress("a:1")!);
    clock.advance(450);
    m.heard("c:1", "standby", 1n, "a:1");
    clock.advance(100);
    // b:1 no longer hears a:1 (its last heartbeat is older than the timeout); c:1's view is older still.
    expect(m.isLive(m.peerByAddress("a:1")!)).toBe(false);
    expect(m.vouchedActive()).toBeUndefined();
    expect(m.decide({ role: "active", epoch: 2n, highestKnown: 2n, busy: false }, never)).toEqual({
      action: "none",
    });
    // Long after the handoff, a node still vouched for is one that became active again: b:1 defers.
    clock.advance(1_000);
    m.heard("c:1", "standby", 3n, "a:1");
    expect(m.decide({ role: "active", epoch: 2n, highestKnown: 3n, busy: false }, never)).toMatchObject({
      action: "demote",
      to: { address: "a:1" },
    });
    // Heard directly as the active, it is one at once.
    const fresh = membership("b:1");
    fresh.m.steppedDown(fresh.m.peerByAddress("a:1")!);
    fresh.m.heard("a:1", "active", 5n, "a:1");
    expect(fresh.m.decide({ role: "active", epoch: 2n, highestKnown: 5n, busy: false }, never)).toMatchObject(
      {
        action: "demote",
      },
    );
  });

  it("a starting node whose link reaches a peer it has not heard yet listens one more peer timeout for it", () => {
    const { clock, m } = membership("a:1");
    const standby = { role: "standby" as const, epoch: 1n, highestKnown: 1n, busy: false };
    // a:1 restarts; its link to b:1 (the active) connects late in the listening period, and b:1's own
    // link back to a:1 (which carries b:1's heartbeats) is not up yet.
    clock.advance(400);
    m.reachable(m.peerByAddress("b:1")!);
    clock.advance(200);
    expect(m.decide(standby, never)).toEqual({ action: "none" });
    m.heard("b:1", "active", 2n, "b:1");
    expect(m.decide(standby, never)).toEqual({ action: "none" });
    // Once per peer: a link that keeps reconnecting to a silent peer does not hold a promotion forever.
    const { clock: later, m: alone } = membership("a:1");
    later.advance(400);
    alone.reachable(alone.peerByAddress("b:1")!);
    later.advance(500);
    alone.reachable(alone.peerByAddress("b:1")!);
    expect(alone.decide(standby, never)).toEqual({ action: "promote" });
  });
});
