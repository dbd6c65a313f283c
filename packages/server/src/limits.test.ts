import { describe, expect, it } from "vitest";
import { DEFAULT_SERVER_LIMITS, resolveLimits, TIMER_MAX_MS } from "./limits.js";
import { serve } from "./net/serve.test.data.js";

describe("resolveLimits", () => {
  it("applies overrides to the defaults", () => {
    expect(resolveLimits({ maxKeys: 7 })).toEqual({ ...DEFAULT_SERVER_LIMITS, maxKeys: 7 });
  });

  it("refuses limits no connection could work with, instead of failing on the first one", () => {
    expect(() => resolveLimits({ maxLineBytes: 1 })).toThrow(/maxLineBytes must be an integer >= 2/);
    expect(() => resolveLimits({ maxKeyBytes: 0 })).toThrow(/maxKeyBytes must be an integer >= 1/);
    expect(() => resolveLimits({ maxKeys: -1 })).toThrow(RangeError);
  });

  it("refuses durations longer than a Node timer can wait", () => {
    for (const name of ["maxLeaseMs", "maxWaitMs", "idleTimeoutMs", "authTimeoutMs", "authFailureDelayMs"]) {
      expect(() => resolveLimits({ [name]: TIMER_MAX_MS + 1 })).toThrow(
        new RegExp(`${name} must be at most`),
      );
      expect(resolveLimits({ [name]: TIMER_MAX_MS })[name as "maxWaitMs"]).toBe(TIMER_MAX_MS);
    }
  });

  it("makes LockServer.start fail before it serves", async () => {
    await expect(serve({ limits: { maxLineBytes: 1 } })).rejects.toThrow(RangeError);
  });
});
