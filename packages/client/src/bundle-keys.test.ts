import { keySlot, SlotMap } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { bundleKeys } from "./bundle-keys.js";
import { InvalidArgumentError, LockServerError } from "./errors.js";

const map = SlotMap.of(1n, new Map([["a", ["10.0.0.1:7420"]]]), [{ from: 0, to: 16383, cluster: "a" }]);

describe("bundleKeys (acquireAll's keys as they go on the wire)", () => {
  it("drops repeats and sorts in code-point order, the order lockd holds them in", () => {
    expect(bundleKeys(["b", "a", "b", "😀", "\uffff"], 1024, undefined)).toEqual(["a", "b", "\uffff", "😀"]);
  });

  it("refuses an empty list and bad keys", () => {
    expect(() => bundleKeys([], 1024, undefined)).toThrow(InvalidArgumentError);
    expect(() => bundleKeys(["a", "b c"], 1024, undefined)).toThrow(InvalidArgumentError);
  });

  it("with a slot map, refuses keys of two slots with CROSS_SLOT before anything is sent", () => {
    expect(keySlot("acct:1")).not.toBe(keySlot("acct:2"));
    expect(() => bundleKeys(["acct:1", "acct:2"], 1024, map)).toThrow(
      expect.objectContaining({ serverCode: "CROSS_SLOT" }),
    );
    expect(() => bundleKeys(["acct:1", "acct:2"], 1024, map)).toThrow(LockServerError);
    expect(bundleKeys(["{acct}:2", "{acct}:1"], 1024, map)).toEqual(["{acct}:1", "{acct}:2"]);
    // Without a map slots do not matter (one cluster serves every key).
    expect(bundleKeys(["acct:1", "acct:2"], 1024, undefined)).toEqual(["acct:1", "acct:2"]);
  });
});
