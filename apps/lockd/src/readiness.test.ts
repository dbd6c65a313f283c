import { describe, expect, it } from "vitest";
import { type PeerView, readiness } from "./readiness.js";

const self: PeerView = { address: "b:1", self: true, role: "standby", live: true, linkConnected: null };
const active: PeerView = { address: "a:1", self: false, role: "active", live: true, linkConnected: true };
const standby = (peers: PeerView[], followingForMs: number | undefined, at = "a:1") =>
  readiness({ role: "standby", serving: false, peers, active: at, followingForMs, syncGraceMs: 300 });

describe("readiness", () => {
  it("is ready for an active that serves, not for one that holds grants", () => {
    const base = { role: "active" as const, peers: undefined, active: "a:1", followingForMs: undefined };
    expect(readiness({ ...base, serving: true, syncGraceMs: 0 })).toEqual({
      ready: true,
      role: "active",
      reason: "active and serving",
    });
    expect(readiness({ ...base, serving: false, syncGraceMs: 0 }).ready).toBe(false);
  });

  it("is ready for a standby that has followed a live active over both links for the grace", () => {
    expect(standby([active, self], 300)).toEqual({
      ready: true,
      role: "standby",
      reason: "standby in sync with the active a:1",
    });
  });

  it("is not ready for a standby that just started following, or lost its active or link", () => {
    expect(standby([active, self], 299).reason).toBe("standby: syncing with the active a:1");
    expect(standby([active, self], undefined).ready).toBe(false);
    expect(standby([{ ...active, live: false }, self], 10_000).reason).toBe(
      "standby: the active a:1 is not live",
    );
    expect(standby([{ ...active, role: "standby" }, self], 10_000).ready).toBe(false);
    expect(standby([{ ...active, linkConnected: false }, self], 10_000).reason).toBe(
      "standby: no link to the active a:1",
    );
    expect(
      readiness({
        role: "standby",
        serving: false,
        peers: [active, self],
        active: undefined,
        followingForMs: 0,
        syncGraceMs: 0,
      }).reason,
    ).toBe("standby: no live active to follow");
  });
});
