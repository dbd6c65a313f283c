import { describe, expect, it } from "vitest";
import { isDecodeError, parseRequestLine } from "./index.js";

/** A raw client (`nc`) that typed a key with a space gets an error that says so (issue 20, item 6). */
describe("a word where a duration belongs", () => {
  it("says that a key cannot contain a space", () => {
    const error = parseRequestLine("A my key 30 0");
    expect(isDecodeError(error) && error.code).toBe("BAD_DURATION");
    expect(isDecodeError(error) && error.message).toMatch(/got "key": .*a key cannot contain one/);
  });

  it("keeps the plain message for a malformed number", () => {
    for (const line of ["A k -5 0", "A k 1e3 0", "A k 1.2345 0"]) {
      const error = parseRequestLine(line);
      expect(isDecodeError(error) && error.message).toBe(
        "lease must be decimal seconds with at most 3 fraction digits",
      );
    }
  });
});
