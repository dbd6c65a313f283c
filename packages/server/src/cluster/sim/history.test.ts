import { composeToken } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { History } from "./history.js";

/** Each check of the simulator's checker fails on the history it exists for, and only on it. */
function history(coordinated = false) {
  let now = 0;
  const h = new History(() => now, coordinated);
  return { h, at: (ms: number) => (now = ms) };
}

/** A grant under its cluster's lease (coordinated runs). */
const leased = (cluster: string) => ({ leased: true, cluster });

const E1 = 256n + 0n; // round 1, node 0
const E2 = 512n + 1n; // round 2, node 1
const t = (epoch: bigint, seq: number) => composeToken(epoch, BigInt(seq));

describe("History (the simulator's checker)", () => {
  it("a token issued twice fails, a replay of the same acquire does not", () => {
    const { h } = history();
    h.issued("a#1.1", "a", "k", t(E1, 1), "r1", 1_000, E1);
    h.issued("a#1.1", "a", "k", t(E1, 1), "r1", 1_000, E1);
    expect(h.failures).toEqual([]);
    h.issued("b#1.1", "b", "j", t(E1, 1), "r2", 1_000, E1);
    expect(h.failures[0]).toMatch(/issued twice/);
  });

  it("a token below an earlier one fails only if the earlier epoch had reached the granting node", () => {
    const { h, at } = history();
    h.issued("b#1.1", "b", "k", t(E2, 1), "r1", 1_000, E2);
    at(10);
    // A partition: `a` never heard of E2, so its lower token is allowed (and differs).
    h.issued("a#1.1", "a", "k", t(E1, 5), "r2", 1_000, E1);
    expect(h.failures).toEqual([]);
    // Told of E2 and still below it: the token went backwards.
    h.issued("a#1.1", "a", "k", t(E1, 6), "r3", 1_000, E2);
    expect(h.failures[0]).toMatch(/went backwards/);
  });

  it("a lone promotion must grant above every token issued before it promoted", () => {
    const { h, at } = history();
    h.issued("b#1.1", "b", "k", t(E2, 1), "r1", 1_000, E2);
    at(100);
    h.promoted("a#2.1", new Set(), true);
    h.issued("a#2.1", "a", "k", t(E1, 1), "r2", 1_000, E1);
    expect(h.failures[0]).toMatch(/lone restart/);
  });

  it("a waiter granted before one queued earlier on the same node fails", () => {
    const { h } = history();
    h.queued("a#1.1", "k", "r1");
    h.queued("a#1.1", "k", "r2");
    h.dequeued("a#1.1", "k", "r1", false); // timed out: r2 may go next
    h.queued("a#1.1", "k", "r3");
    h.dequeued("a#1.1", "k", "r2", true);
    expect(h.failures).toEqual([]);
    h.queued("a#1.1", "k", "r4");
    h.dequeued("a#1.1", "k", "r4", true);
    expect(h.failures[0]).toMatch(/r4 granted k before r3/);
  });

  it("a replicated holder refused by the node that promoted with it, within its lease, fails", () => {
    const { h, at } = history();
    h.issued("a#1.1", "a", "k", t(E1, 1), "r1", 1_000, E1);
    h.promoted("b#1.1", new Set([t(E1, 1)]), false);
    at(500);
    h.refusedRelease("b#1.1", "k", t(E1, 1));
    expect(h.failures[0]).toMatch(/lost the replicated holder/);
    const late = history();
    late.h.issued("a#1.1", "a", "k", t(E1, 1), "r1", 1_000, E1);
    late.h.promoted("b#1.1", new Set([t(E1, 1)]), false);
    late.at(1_000);
    late.h.refusedRelease("b#1.1", "k", t(E1, 1)); // its lease is over: R 0 is right
    expect(late.h.failures).toEqual([]);
  });

  it("an acquire or release that never settled is reported", () => {
    const { h } = history();
    h.acquireStarted("c", "c.0", "k");
    expect(h.unsettled()).toEqual(["c c.0"]);
    h.acquireSettled("c", "c.0", "granted");
    expect(h.unsettled()).toEqual(["c c.0 release"]);
    h.released("c", "c.0", "k", 1n, "released");
    expect(h.unsettled()).toEqual([]);
  });

  it("with a coordinator, each key's tokens rise in grant order across clusters; other keys may interleave", () => {
    const { h } = history(true);
    h.issued("a0#1.1", "a0", "k", t(E2, 1), "r1", 1_000, E2, leased("a"));
    // Another cluster, on its lower epoch, grants another key: allowed.
    h.issued("b0#1.1", "b0", "j", t(E1, 1), "r2", 1_000, E1, leased("b"));
    expect(h.failures).toEqual([]);
    // Then it grants `k` (its slot moved there) below a's grant of it: the move's fence broke.
    h.issued("b0#1.1", "b0", "k", t(E1, 2), "r3", 1_000, E1, leased("b"));
    expect(h.failures[0]).toMatch(/k's token went backwards/);
  });

  it("with a coordinator, a bundle's other keys' tokens rise too, and a replayed bundle grant is no step back", () => {
    const { h } = history(true);
    h.issued("a0#1.1", "a0", "k", t(E2, 1), "r1", 1_000, E2, leased("a"));
    h.issued("a0#1.1", "a0", "m", t(E2, 2), "b1", 1_000, E2, leased("a"));
    h.bundleKeys(["m", "n"], t(E2, 2));
    h.bundleKeys(["m", "n"], t(E2, 2));
    expect(h.failures).toEqual([]);
    // Another cluster, on its lower epoch, grants a bundle of j and k below a's grant of k.
    h.issued("b0#1.1", "b0", "j", t(E1, 1), "b2", 1_000, E1, leased("b"));
    expect(h.failures).toEqual([]);
    h.bundleKeys(["j", "k"], t(E1, 1));
    expect(h.failures[0]).toMatch(/k's token went backwards in a bundle/);
  });

  it("with a coordinator, two serving nodes fail only if they are of one cluster", () => {
    const { h } = history(true);
    h.serving(1, "a");
    h.serving(1, "b");
    expect(h.failures).toEqual([]);
    h.serving(2, "a");
    expect(h.failures[0]).toMatch(/2 nodes of a serve at once/);
  });
});
