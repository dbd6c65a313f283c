import { describe, expect, it } from "vitest";
import { GrantGaps, gapMs } from "./grant-gaps.js";

describe("GrantGaps", () => {
  it("has no gap before a second grant", () => {
    const gaps = new GrantGaps();
    expect(gaps.longest).toBeUndefined();
    gaps.grant(5);
    expect(gaps.longest).toBeUndefined();
    expect(gaps.grants).toBe(1);
  });

  it("keeps the longest stretch between consecutive grants, with its ends", () => {
    const gaps = new GrantGaps();
    for (const at of [10, 11, 12, 250, 251, 300]) gaps.grant(at);
    expect(gaps.longest).toEqual({ from: 12, to: 250 });
    expect(gapMs(gaps.longest!)).toBe(238);
    expect(gaps.grants).toBe(6);
  });

  it("keeps the first of equally long stretches", () => {
    const gaps = new GrantGaps();
    for (const at of [0, 4, 8]) gaps.grant(at);
    expect(gaps.longest).toEqual({ from: 0, to: 4 });
  });
});
