import { describe, expect, it } from "vitest";
import { advantage, figureSpec, formatValue, summarizeFigure } from "./headline-figures.js";

const rate = figureSpec("cycles_1024")!;
const time = figureSpec("cycle_p50_sequential")!;

describe("advantage", () => {
  it("is above 1 when lockd does better, whichever way the figure points", () => {
    expect(advantage(rate, 200, 100)).toBe(2);
    expect(advantage(time, 0.05, 0.1)).toBe(2);
    expect(advantage(time, 0.1, 0.05)).toBe(0.5);
  });
});

describe("summarizeFigure", () => {
  it("gives each system its median value and the median of the rounds' own ratios against lockd", () => {
    const rounds = [
      { lockd: 100, redis: 50 }, // 2
      { lockd: 300, redis: 100 }, // 3
      { lockd: 90, redis: 100 }, // 0.9
    ];
    expect(summarizeFigure(rate, ["lockd", "redis"], rounds)).toEqual([
      { system: "lockd", value: 100, ratio: null },
      // The ratio of the medians would be 100 / 100 = 1: the paired ratios say 2.
      { system: "redis", value: 100, ratio: 2 },
    ]);
  });
});

describe("formatValue", () => {
  it("prints rates whole, times and indexes to three decimals, nothing as n/a", () => {
    expect(formatValue(123456.7, "/s")).toBe("123,457/s");
    expect(formatValue(0.05123, "ms")).toBe("0.051 ms");
    expect(formatValue(0.99871, "")).toBe("0.999");
    expect(formatValue(null, "/s")).toBe("n/a");
    expect(formatValue(Number.NaN, "ms")).toBe("n/a");
  });
});
