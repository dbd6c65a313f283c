import { describe, expect, it } from "vitest";
import { FENCING_TOKEN_HEADER, fencingHeaders, parseFencingHeader, parseFencingRequest } from "./headers.js";

describe("fencing headers", () => {
  it("builds the header from a held lock's token, as a decimal string", () => {
    expect(fencingHeaders({ token: 123n })).toEqual({ "fencing-token": "123" });
    expect(fencingHeaders({ token: 2n ** 64n - 1n })[FENCING_TOKEN_HEADER]).toBe("18446744073709551615");
    expect(() => fencingHeaders({ token: -1n })).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_TOKEN" }),
    );
  });

  it("parses a header value, telling missing apart from malformed", () => {
    expect(parseFencingHeader("42")).toBe(42n);
    for (const missing of [undefined, ""]) {
      expect(() => parseFencingHeader(missing)).toThrow(
        expect.objectContaining({ code: "FENCE_MISSING_TOKEN" }),
      );
    }
    for (const malformed of [["1", "2"], "1, 2", "abc"]) {
      expect(() => parseFencingHeader(malformed)).toThrow(
        expect.objectContaining({ code: "FENCE_BAD_TOKEN" }),
      );
    }
  });

  it("adds a permit's slot and a lock's mode, and parses them back", () => {
    const permit = { token: 7n, key: "tenant:7", slot: 3, mode: "exclusive" } as const;
    const headers = fencingHeaders(permit);
    expect(headers).toEqual({ "fencing-token": "7", "fencing-slot": "3", "fencing-mode": "exclusive" });
    expect(parseFencingRequest(headers)).toEqual({ token: 7n, slot: 3, mode: "exclusive" });
    expect(parseFencingRequest({ "fencing-token": "7" })).toEqual({ token: 7n });
    expect(() => fencingHeaders({ token: 7n, slot: -1 })).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_ARGUMENT" }),
    );
    expect(() => fencingHeaders({ token: 7n, mode: "read" as never })).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_ARGUMENT" }),
    );
    expect(() => parseFencingRequest({ "fencing-token": "7", "fencing-slot": ["1", "2"] })).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_TOKEN" }),
    );
  });
});
