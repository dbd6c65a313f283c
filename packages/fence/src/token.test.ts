import { describe, expect, it } from "vitest";
import { FenceError } from "./errors.js";
import { checkFenceInput } from "./fence-input.js";
import { assertResource } from "./resource.js";
import { MAX_TOKEN, parseToken } from "./token.js";

describe("parseToken", () => {
  const valid: [unknown, bigint][] = [
    [0n, 0n],
    [1n, 1n],
    [MAX_TOKEN, MAX_TOKEN],
    ["0", 0n],
    ["9007199254740993", 2n ** 53n + 1n],
    ["9223372036854775808", 2n ** 63n],
    ["18446744073709551615", MAX_TOKEN],
  ];
  it.each(valid)("accepts %s", (input, expected) => {
    expect(parseToken(input)).toBe(expected);
  });

  const invalid: [string, unknown][] = [
    ["a number, even a safe integer", 5],
    ["a float", 1.5],
    ["NaN", Number.NaN],
    ["a negative bigint", -1n],
    ["2^64", MAX_TOKEN + 1n],
    ["an empty string", ""],
    ["a leading zero", "007"],
    ["a sign", "+5"],
    ["a negative string", "-1"],
    ["an exponent", "1e3"],
    ["a decimal point", "5.0"],
    ["hex", "0x10"],
    ["leading whitespace", " 5"],
    ["trailing whitespace", "5\n"],
    ["a bigint literal suffix", "5n"],
    ["2^64 as a string", "18446744073709551616"],
    ["21 digits", "100000000000000000000"],
    ["non-ASCII digits", "٥"],
    ["null", null],
    ["undefined", undefined],
    ["an object", { token: 1n }],
    ["a boxed bigint", Object(1n)],
  ];
  it.each(invalid)("refuses %s with FENCE_BAD_TOKEN", (_what, input) => {
    expect(() => parseToken(input)).toThrow(FenceError);
    expect(() => parseToken(input)).toThrow(
      expect.objectContaining({ name: "FenceError", code: "FENCE_BAD_TOKEN" }),
    );
  });

  it("keeps error messages short for huge input", () => {
    expect(() => parseToken("9".repeat(10_000))).toThrow(/^invalid fencing token "9{44}\.\.\./);
  });
});

describe("assertResource", () => {
  it.each([[""], ["x".repeat(513)], ["a\u0000b"], [42], [undefined]])("refuses %j", (resource) => {
    expect(() => assertResource(resource)).toThrow(expect.objectContaining({ code: "FENCE_BAD_RESOURCE" }));
  });
  it("accepts any other text", () => {
    expect(() => assertResource("orders:42 ünïcode 'quoted'")).not.toThrow();
  });
});

describe("checkFenceInput", () => {
  it("returns the parsed token when the resource is usable", () => {
    expect(checkFenceInput("orders:42", "18446744073709551615")).toBe(MAX_TOKEN);
  });
  it("refuses a bad token first, then a bad resource", () => {
    expect(() => checkFenceInput("", 5)).toThrow(expect.objectContaining({ code: "FENCE_BAD_TOKEN" }));
    expect(() => checkFenceInput("", 5n)).toThrow(expect.objectContaining({ code: "FENCE_BAD_RESOURCE" }));
  });
});
