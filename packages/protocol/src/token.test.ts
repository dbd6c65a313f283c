import { describe, expect, it } from "vitest";
import {
  composeEpoch,
  composeToken,
  EPOCH_BITS,
  epochNodeId,
  epochRound,
  formatToken,
  isValidEpoch,
  MAX_EPOCH,
  MAX_NODE_ID,
  MAX_ROUND,
  MAX_SEQUENCE,
  MAX_TOKEN,
  NODE_ID_BITS,
  parseToken,
  ROUND_BITS,
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
  it("is round (32) · node id (8) · sequence (24), the epoch being round · node id", () => {
    expect(EPOCH_BITS + SEQUENCE_BITS).toBe(64);
    expect(ROUND_BITS + NODE_ID_BITS).toBe(EPOCH_BITS);
    expect(composeEpoch(1n, 0)).toBe(256n);
    expect(composeEpoch(1n, 3)).toBe(259n);
    expect(epochRound(259n)).toBe(1n);
    expect(epochNodeId(259n)).toBe(3);
    expect(composeToken(1n, 1n)).toBe(16_777_217n);
    expect(composeToken(MAX_EPOCH, MAX_SEQUENCE)).toBe(MAX_TOKEN);
    expect(composeEpoch(MAX_ROUND, MAX_NODE_ID)).toBe(MAX_EPOCH);
    expect(tokenEpoch(16_777_217n)).toBe(1n);
    expect(tokenSequence(16_777_217n)).toBe(1n);
    expect(tokenEpoch(MAX_TOKEN)).toBe(MAX_EPOCH);
    expect(tokenSequence(MAX_TOKEN)).toBe(MAX_SEQUENCE);
  });

  it("orders every token of a newer epoch above every token of an older one, and rounds above node ids", () => {
    expect(composeToken(2n, 0n)).toBeGreaterThan(composeToken(1n, MAX_SEQUENCE));
    expect(composeEpoch(2n, 0)).toBeGreaterThan(composeEpoch(1n, MAX_NODE_ID));
  });

  it("keeps tokens below 2^63 (a signed 64-bit column) for rounds below 2^31", () => {
    expect(composeToken(composeEpoch(2n ** 31n - 1n, MAX_NODE_ID), MAX_SEQUENCE)).toBe(2n ** 63n - 1n);
  });

  it("refuses parts out of range", () => {
    expect(() => composeToken(MAX_EPOCH + 1n, 0n)).toThrow(RangeError);
    expect(() => composeToken(0n, MAX_SEQUENCE + 1n)).toThrow(RangeError);
    expect(() => composeToken(-1n, 0n)).toThrow(RangeError);
    expect(() => tokenEpoch(MAX_TOKEN + 1n)).toThrow(RangeError);
    expect(() => composeEpoch(MAX_ROUND + 1n, 0)).toThrow(RangeError);
    expect(() => composeEpoch(0n, MAX_NODE_ID + 1)).toThrow(RangeError);
    expect(() => composeEpoch(0n, 1.5)).toThrow(RangeError);
    expect(() => epochRound(MAX_EPOCH + 1n)).toThrow(RangeError);
    expect(isValidEpoch(MAX_EPOCH)).toBe(true);
    expect(isValidEpoch(MAX_EPOCH + 1n)).toBe(false);
    expect(isValidEpoch(-1n)).toBe(false);
  });
});
