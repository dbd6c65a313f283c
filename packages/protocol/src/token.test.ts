import { describe, expect, it } from "vitest";
import {
  composeToken,
  EPOCH_BITS,
  formatToken,
  MAX_EPOCH,
  MAX_SEQUENCE,
  MAX_TOKEN,
  parseToken,
  SEQUENCE_BITS,
  tokenEpoch,
  tokenSequence,
} from "./token.js";

describe("parseToken", () => {
  it.each([
    ["0", 0n],
    ["1", 1n],
    ["9007199254740991", 2n ** 53n - 1n],
    ["9007199254740992", 2n ** 53n],
    ["9007199254740993", 2n ** 53n + 1n],
    ["9223372036854775808", 2n ** 63n],
    ["18446744073709551615", MAX_TOKEN],
    ["10000000000000000000", 10n ** 19n],
  ])("%s", (text, value) => {
    expect(parseToken(text)).toBe(value);
  });

  it.each([
    "",
    "-0",
    "+1",
    "-1",
    "01",
    "00",
    "18446744073709551616",
    "99999999999999999999",
    "100000000000000000000",
    "1e3",
    "1.0",
    " 1",
    "1 ",
    "0x1f",
    "١٢",
    "1n",
  ])("refuses %j", (text) => {
    expect(parseToken(text)).toBeUndefined();
  });
});

describe("formatToken", () => {
  it("formats every boundary exactly", () => {
    expect(formatToken(0n)).toBe("0");
    expect(formatToken(2n ** 53n + 1n)).toBe("9007199254740993");
    expect(formatToken(MAX_TOKEN)).toBe("18446744073709551615");
  });

  it("throws for values outside u64, which are programming errors", () => {
    expect(() => formatToken(-1n)).toThrow(RangeError);
    expect(() => formatToken(MAX_TOKEN + 1n)).toThrow(RangeError);
    expect(() => formatToken(5 as unknown as bigint)).toThrow(TypeError);
  });
});

describe("token layout", () => {
  it("is epoch × 2^40 + sequence", () => {
    expect(EPOCH_BITS + SEQUENCE_BITS).toBe(64);
    expect(composeToken(1n, 1n)).toBe(1_099_511_627_777n);
    expect(composeToken(MAX_EPOCH, MAX_SEQUENCE)).toBe(MAX_TOKEN);
    expect(tokenEpoch(1_099_511_627_777n)).toBe(1n);
    expect(tokenSequence(1_099_511_627_777n)).toBe(1n);
    expect(tokenEpoch(MAX_TOKEN)).toBe(MAX_EPOCH);
    expect(tokenSequence(MAX_TOKEN)).toBe(MAX_SEQUENCE);
  });

  it("orders every token of a newer epoch above every token of an older one", () => {
    expect(composeToken(2n, 0n)).toBeGreaterThan(composeToken(1n, MAX_SEQUENCE));
  });

  it("refuses parts out of range", () => {
    expect(() => composeToken(MAX_EPOCH + 1n, 0n)).toThrow(RangeError);
    expect(() => composeToken(0n, MAX_SEQUENCE + 1n)).toThrow(RangeError);
    expect(() => composeToken(-1n, 0n)).toThrow(RangeError);
    expect(() => tokenEpoch(MAX_TOKEN + 1n)).toThrow(RangeError);
  });
});
