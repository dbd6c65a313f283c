import { describe, expect, it } from "vitest";
import { ManualClock } from "../engine/clock.js";
import { Membership } from "./membership.js";
import { StallGuard } from "./stall-guard.js";

const PEERS = ["a:1", "b:1", "c:1"];
const timing = { heartbeatMs: 100, peerTimeoutMs: 500 };
const standby = { role: "standby", epoch: 1n, highestKnown: 1n, busy: false } as const;
const never = () => false;

/** b:1, a standby that follows the active a:1 and hears c:1, its heartbeat ticks driven by hand. */
function standbyB() {
  const clock = new ManualClock(0);
  const membership = new Membership(PEERS, "b:1", timing, clock);
  const guard = new StallGuard(membership);
  const tick = () => {
    const gap = guard.check(clock.now());
    guard.ticked(clock.now());
    return { gap, decision: membership.decide(standby, never) };
  };
  const hearBoth = () => {
    membership.heard("a:1", "active", 1n, "a:1");
    membership.heard("c:1", "standby", 1n, "a:1");
  };
  // Past the startup listening period, ticking on time and hearing both peers between ticks.
  for (let i = 0; i < 7; i++) {
    clock.advance(90);
    hearBoth();
    clock.advance(10);
    tick();
  }
  return { clock, membership, tick, hearBoth };
}

describe("StallGuard: a standby's own pause is not its peers' silence", () => {
  it("a standby that did not run for just under the peer timeout does not promote over unread heartbeats", () => {
    const { clock, tick, hearBoth } = standbyB();
    // The last heartbeats were read 10 ms before the last tick; then b:1 ran nothing for 495 ms (a
    // GC, a loaded machine): a:1's and c:1's heartbeats wait unread in its sockets meanwhile.
    clock.advance(495);
    // Its next tick comes first (timers run before the sockets are read): both peers look silent
    // for 505 ms, over the timeout, though it is not long enough a gap for a stall (500 ms).
    const late = tick();
    expect(late.gap).toBeUndefined();
    expect(late.decision).toEqual({ action: "none" });
    // The waiting heartbeats are read: the active is alive, and on-time ticks go on as before.
    clock.advance(1);
    hearBoth();
    clock.advance(99);
    expect(tick().decision).toEqual({ action: "none" });
  });

  it("a standby that ran late still promotes once the active has been silent while it listened", () => {
    const { clock, tick } = standbyB();
    // a:1 and c:1 die; b:1 stalls 450 ms before its next tick, then ticks on time.
    clock.advance(450);
    expect(tick().decision).toEqual({ action: "none" });
    clock.advance(100);
    expect(tick().decision).toEqual({ action: "promote" });
  });

  it("an active's view is not held back by a late tick: it does not step down for a dead peer", () => {
    const { clock, membership, tick } = standbyB();
    clock.advance(495);
    tick();
    // As an active, b:1 judges a:1 (silent for 505 ms) dead, as before: stepping down for it on the
    // previous tick's view would drop every holder b:1 has.
    const active = { role: "active", epoch: 2n, highestKnown: 2n, busy: false } as const;
    expect(membership.decide(active, never)).toEqual({ action: "none" });
  });
});
