import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { FENCE_ERROR_CODES, FenceError, StaleTokenError } from "./errors.js";

describe("errors", () => {
  it("documents every error code in README.md", async () => {
    const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
    const undocumented = FENCE_ERROR_CODES.filter((code) => !readme.includes(`\`${code}\``));
    expect(undocumented).toEqual([]);
  });

  it("gives every class a literal name and every error a stable code", () => {
    const base = new FenceError("FENCE_BAD_TOKEN", "bad", { cause: "why" });
    expect([base.name, base.code, base.statusCode, base.cause]).toEqual([
      "FenceError",
      "FENCE_BAD_TOKEN",
      400,
      "why",
    ]);
    const stale = new StaleTokenError("orders:1", 4n, 5n);
    expect(stale).toBeInstanceOf(FenceError);
    expect(stale).toMatchObject({
      name: "StaleTokenError",
      code: "FENCE_STALE_TOKEN",
      statusCode: 409,
      resource: "orders:1",
      presentedToken: 4n,
      currentToken: 5n,
    });
    expect(String(stale)).toMatch(/^StaleTokenError: stale fencing token for "orders:1": presented 4/);
  });
});
