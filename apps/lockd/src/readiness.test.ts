import { describe, expect, it } from "vitest";
import { type PeerView, readiness } from "./readiness.js";

const self: PeerView = { address: "b:1", self: true, role: "standby", live: true, linkConnected: null };
const active: PeerView = { address: "a:1", self: false, role: "active", live: true, linkConnected: true };
const standby = (peers: PeerView[], replicaSource: string | undefined, at = "a:1") =>
  readiness({ role: "standby", serving: false, peers, active: at, replicaSource });

describe("readiness", () => {
  it("is ready for an active that serves, not for one that holds grants", () => {
    const base = { role: "active" as const, peers: undefined, active: "a:1", replicaSource: undefined };
    expect(readiness({ ...base, serving: true })).toEqual({
      ready: true,
      role: "active",
      reason: "active and serving",
    });
    expect(readiness({ ...base, serving: false }).ready).toBe(false);
  });

  it("says why an active holds grants, and until when for an epoch ahead of its clock", () => {
    const base = {
      role: "active" as const,
      serving: false,
      peers: undefined,
      active: "a:1",
      replicaSource: undefined,
    };
    expect(
      readiness({ ...base, heldFor: "clock", holdingUntilMs: Date.UTC(2026, 11, 2, 10, 0, 5) }).reason,
    ).toBe("active but holding grants until 2026-12-02T10:00:05.000Z: its new epoch is ahead of its clock");
    expect(readiness({ ...base, heldFor: "stall" }).reason).toBe(
      "active but holding grants: confirming it is still the active after a stall",
    );
  });

  it("is ready for a standby that holds a live active's snapshot, with its link to it up", () => {
    expect(standby([active, self], "a:1")).toEqual({
      ready: true,
      role: "standby",
      reason: "standby in sync with the active a:1",
    });
  });

  it("is not ready for a standby without the active's snapshot yet, or that lost its active or link", () => {
    expect(standby([active, self], undefined).reason).toBe("standby: syncing with the active a:1");
    expect(standby([active, self], "c:1").ready).toBe(false);
    expect(standby([{ ...active, live: false }, self], "a:1").reason).toBe(
      "standby: the active a:1 is not live",
    );
    expect(standby([{ ...active, role: "standby" }, self], "a:1").ready).toBe(false);
    expect(standby([{ ...active, linkConnected: false }, self], "a:1").reason).toBe(
      "standby: no link to the active a:1",
    );
    expect(
      readiness({
        role: "standby",
        serving: false,
        peers: [active, self],
        active: undefined,
        replicaSource: undefined,
      }).reason,
    ).toBe("standby: no live active to follow");
  });
});
