import { describe, expect, it } from "vitest";
import { formatSeconds, MAX_DURATION_MS, parseSeconds } from "./duration.js";

describe("parseSeconds", () => {
  it.each([
    ["30", 30_000],
    ["0", 0],
    ["0.25", 250],
    ["1.5", 1500],
    ["1.50", 1500],
    ["0.001", 1],
    ["0.1", 100],
    ["007", 7000],
    ["9999999999.999", MAX_DURATION_MS],
    ["0000000001", 1000],
  ])("%s → %d ms", (text, ms) => {
    expect(parseSeconds(text)).toBe(ms);
  });

  it.each([
    "",
    "-5",
    "+5",
    "1.2345",
    "1.",
    ".5",
    "1e3",
    "1E3",
    "12345678901",
    "1.5.5",
    "1,5",
    " 1",
    "1 ",
    "Infinity",
    "NaN",
    "0x10",
  ])("refuses %j", (text) => {
    expect(parseSeconds(text)).toBeUndefined();
  });
});

describe("formatSeconds", () => {
  it.each([
    [30_000, "30"],
    [250, "0.25"],
    [1500, "1.5"],
    [1, "0.001"],
    [10, "0.01"],
    [50, "0.05"],
    [120, "0.12"],
    [0, "0"],
    [1001, "1.001"],
    [MAX_DURATION_MS, "9999999999.999"],
  ])("%d ms → %s", (ms, text) => {
    expect(formatSeconds(ms)).toBe(text);
  });

  it.each([-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_DURATION_MS + 1])("throws for %d", (ms) => {
    expect(() => formatSeconds(ms)).toThrow(RangeError);
  });
});
