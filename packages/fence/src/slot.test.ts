import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fence, fenceRead } from "./fence.js";
import { grantToken } from "./grant.js";
import { MemoryStore } from "./memory.js";
import { parseSlotResource, slotResource } from "./slot.js";

// Lockd keys: 1+ characters, none a space or a control character (docs/protocol.md).
const lockKey = fc
  .string({ minLength: 1, maxLength: 40, unit: "grapheme" })
  .filter((key) => key.split("").every((unit) => unit.charCodeAt(0) > 0x20 && unit.charCodeAt(0) !== 0x7f));
const slot = fc.integer({ min: 0, max: 2 ** 31 });

describe("slotResource()", () => {
  it("names a slot's resource `<key> slot <n>`, from a key and slot or from a permit", () => {
    expect(slotResource("tenant:7", 2)).toBe("tenant:7 slot 2");
    expect(slotResource({ key: "{tenant:7}", slot: 0 })).toBe("{tenant:7} slot 0");
    expect(parseSlotResource("tenant:7 slot 2")).toEqual({ key: "tenant:7", slot: 2 });
  });

  it("is one to one, and never names a lock key (property)", () => {
    fc.assert(
      fc.property(lockKey, slot, lockKey, slot, (key, n, otherKey, otherN) => {
        const resource = slotResource(key, n);
        expect(parseSlotResource(resource)).toEqual({ key, slot: n });
        expect(parseSlotResource(key)).toBeUndefined(); // a lock key has no space: never a slot's name
        if (key !== otherKey || n !== otherN) expect(slotResource(otherKey, otherN)).not.toBe(resource);
      }),
    );
  });

  it("parses only its own names", () => {
    for (const name of [
      "tenant:7",
      "tenant:7 slot",
      "tenant:7 slot 02",
      "tenant:7 slot -1",
      "a b slot 1",
      " slot 1",
    ]) {
      expect(parseSlotResource(name), name).toBeUndefined();
    }
  });

  it("refuses what cannot be a lockd key or a slot (FENCE_BAD_ARGUMENT), and names past 512 (FENCE_BAD_RESOURCE)", () => {
    for (const [key, n] of [
      ["", 0],
      ["a b", 0],
      ["a\tb", 0],
      [undefined, 0],
      ["k", -1],
      ["k", 1.5],
      ["k", Number.NaN],
      ["k", "1"],
    ] as const) {
      expect(() => slotResource(key as string, n as number), `${key} ${n}`).toThrow(
        expect.objectContaining({ code: "FENCE_BAD_ARGUMENT" }),
      );
    }
    expect(() => slotResource("k".repeat(510), 1)).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_RESOURCE" }),
    );
  });
});

describe("a lock given as the token", () => {
  const permit = { token: 10n, key: "tenant:7", slot: 1, mode: "exclusive" } as const;

  it("lets a permit fence its own slot's resource only (FENCE_SLOT_MISMATCH elsewhere)", () => {
    expect(grantToken("tenant:7 slot 1", permit, "write")).toBe(10n);
    for (const resource of ["tenant:7", "tenant:7 slot 0", "tenant:8 slot 1", "orders:1"]) {
      expect(() => grantToken(resource, permit, "write"), resource).toThrow(
        expect.objectContaining({ code: "FENCE_SLOT_MISMATCH", statusCode: 400 }),
      );
      expect(() => grantToken(resource, permit, "read"), resource).toThrow(
        expect.objectContaining({ code: "FENCE_SLOT_MISMATCH" }),
      );
    }
  });

  it("refuses a lock without a slot on a slot's resource, but not a bare token (it cannot tell)", () => {
    expect(() => grantToken("tenant:7 slot 1", { token: 10n, key: "tenant:7" }, "write")).toThrow(
      expect.objectContaining({ code: "FENCE_SLOT_MISMATCH" }),
    );
    expect(grantToken("tenant:7 slot 1", 10n, "write")).toBe(10n);
  });

  it("refuses a shared lock's token for a write (FENCE_SHARED_WRITE), not for a read", () => {
    const reader = { token: "12", key: "doc", mode: "shared" } as const;
    expect(() => grantToken("doc", reader, "write")).toThrow(
      expect.objectContaining({ code: "FENCE_SHARED_WRITE", statusCode: 400 }),
    );
    expect(grantToken("doc", reader, "read")).toBe(12n);
    expect(grantToken("doc", { token: 12n, mode: "exclusive" }, "write")).toBe(12n);
  });

  it('takes a permit as @lock/client hands it out (mode "permit" with its slot), and no permit without a slot', () => {
    const permit = { token: 20n, key: "tenant:7", mode: "permit", slot: 2, permits: 5 } as const;
    expect(grantToken(slotResource("tenant:7", 2), permit, "write")).toBe(20n);
    expect(() => grantToken("tenant:7", permit, "write")).toThrow(
      expect.objectContaining({ code: "FENCE_SLOT_MISMATCH" }),
    );
    expect(() => grantToken("tenant:7", { token: 20n, key: "tenant:7", mode: "permit" }, "write")).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_ARGUMENT" }),
    );
  });

  it("refuses a malformed lock before anything is touched", () => {
    for (const [lock, code] of [
      [{ token: 5 }, "FENCE_BAD_TOKEN"],
      [{ token: 5n, mode: "read" }, "FENCE_BAD_ARGUMENT"],
      [{ token: 5n, slot: -1, key: "k" }, "FENCE_BAD_ARGUMENT"],
      [{ token: 5n, slot: 1 }, "FENCE_BAD_ARGUMENT"], // a permit without its key cannot be checked
    ] as const) {
      expect(
        () => grantToken("k slot 1", lock, "write"),
        JSON.stringify(lock, (_, v) => String(v)),
      ).toThrow(expect.objectContaining({ code }));
    }
  });

  it("reaches fence() and fenceRead(): two live permits on their slots both write; on the whole key, refused", async () => {
    const store = new MemoryStore();
    const first = { token: 10n, key: "tenant:7", slot: 0 };
    const second = { token: 11n, key: "tenant:7", slot: 1 };
    // The later permit writes first: on one shared resource the earlier, live one would be refused.
    await expect(fence(store, slotResource(second), second, () => "second")).resolves.toBe("second");
    await expect(fence(store, slotResource(first), first, () => "first")).resolves.toBe("first");
    await expect(fence(store, "tenant:7", first, () => "never")).rejects.toMatchObject({
      code: "FENCE_SLOT_MISMATCH",
    });
    await expect(fenceRead(store, "tenant:7", second, () => "never")).rejects.toMatchObject({
      code: "FENCE_SLOT_MISMATCH",
    });
    expect(await store.current("tenant:7")).toBeUndefined();
  });
});
