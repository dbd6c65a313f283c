import { describe, expect, it } from "vitest";
import { jainIndex } from "./report.js";

describe("jainIndex", () => {
  it("is 1 when every contender got the same share", () => {
    expect(jainIndex([7, 7, 7, 7])).toBe(1);
  });

  it("is 1/n when one contender got everything", () => {
    expect(jainIndex([0, 0, 12, 0])).toBe(0.25);
  });

  it("is (Σx)² / (n·Σx²) in between", () => {
    // (1 + 2 + 3)² / (3 × (1 + 4 + 9)) = 36 / 42
    expect(jainIndex([1, 2, 3])).toBeCloseTo(36 / 42, 12);
  });

  it("is NaN when nobody got anything", () => {
    expect(jainIndex([0, 0])).toBeNaN();
    expect(jainIndex([])).toBeNaN();
  });
});
