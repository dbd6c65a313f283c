import { composeEpoch, epochNodeId, epochRound, MAX_EPOCH, MAX_ROUND } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import {
  clockRound,
  EpochExhaustedError,
  isImplausibleEpoch,
  MAX_LEAD_ROUNDS,
  planEpoch,
  ROUND_MS,
  ROUND_ORIGIN_MS,
  roundStartMs,
} from "./epoch-plan.js";

const NOW = ROUND_ORIGIN_MS + 1_000_000 * ROUND_MS + 250; // round 1,000,000 and a quarter second
const base = { nodeId: 2, wallMs: NOW, informed: true, maxClockSkewMs: 500 };

describe("planEpoch", () => {
  it("takes the clock's round with this node's id when it knows of nothing later", () => {
    const plan = planEpoch({ ...base, highestKnown: 0n });
    expect(plan.epoch).toBe(composeEpoch(1_000_000n, 2));
    expect(plan.serveFromMs).toBeLessThanOrEqual(NOW);
  });

  it("goes above the highest known epoch, in the same round when its node id is higher", () => {
    expect(planEpoch({ ...base, highestKnown: composeEpoch(1_000_005n, 1) }).epoch).toBe(
      composeEpoch(1_000_005n, 2),
    );
    expect(planEpoch({ ...base, highestKnown: composeEpoch(1_000_005n, 2) }).epoch).toBe(
      composeEpoch(1_000_006n, 2),
    );
    expect(planEpoch({ ...base, highestKnown: composeEpoch(1_000_005n, 7) }).epoch).toBe(
      composeEpoch(1_000_006n, 2),
    );
  });

  it("waits before granting from a round more than MAX_LEAD_ROUNDS ahead of the clock", () => {
    const ahead = planEpoch({ ...base, highestKnown: composeEpoch(1_000_000n + MAX_LEAD_ROUNDS, 5) });
    expect(epochRound(ahead.epoch)).toBe(1_000_001n + MAX_LEAD_ROUNDS);
    expect(ahead.serveFromMs).toBe(roundStartMs(1_000_001n));
    expect(ahead.serveFromMs).toBeGreaterThan(NOW);
    const within = planEpoch({ ...base, highestKnown: composeEpoch(1_000_000n + MAX_LEAD_ROUNDS - 1n, 5) });
    expect(within.serveFromMs).toBeLessThanOrEqual(NOW);
  });

  it("an uninformed node (a lone restart) goes past every round a clock within the skew could have used", () => {
    const plan = planEpoch({ ...base, highestKnown: 0n, informed: false });
    // Any node's clock reads at most NOW + 2 × skew (ours may be skew slow, theirs skew fast), and
    // may have granted from up to MAX_LEAD_ROUNDS above its clock's round.
    expect(epochRound(plan.epoch)).toBeGreaterThan(clockRound(NOW + 2 * 500) + MAX_LEAD_ROUNDS);
    // It waits until its own round lead is back within MAX_LEAD_ROUNDS: about 2 × skew + 1 s.
    expect(plan.serveFromMs - NOW).toBeGreaterThan(2 * 500);
    expect(plan.serveFromMs - NOW).toBeLessThanOrEqual(2 * 500 + ROUND_MS);
  });

  it("refuses, rather than wraps, when no epoch above the highest known fits the layout", () => {
    expect(() => planEpoch({ ...base, highestKnown: MAX_EPOCH })).toThrow(EpochExhaustedError);
    expect(
      epochNodeId(planEpoch({ ...base, nodeId: 255, highestKnown: composeEpoch(MAX_ROUND, 3) }).epoch),
    ).toBe(255);
  });
});

describe("clock rounds", () => {
  it("count whole seconds since 2026-01-01 and clamp to the layout", () => {
    expect(clockRound(ROUND_ORIGIN_MS)).toBe(0n);
    expect(clockRound(ROUND_ORIGIN_MS + 1999)).toBe(1n);
    expect(clockRound(0)).toBe(0n);
    expect(clockRound(Number.NaN)).toBe(0n);
    expect(clockRound(8.64e15)).toBe(MAX_ROUND);
  });

  it("an epoch more than a day ahead of the clock is implausible", () => {
    const today = clockRound(NOW);
    expect(isImplausibleEpoch(composeEpoch(today + 86_400n, 0), NOW)).toBe(false);
    expect(isImplausibleEpoch(composeEpoch(today + 86_401n, 0), NOW)).toBe(true);
  });
});
