import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hashTag, KEY_SLOTS, keySlot } from "./key-slot.js";

/** The definition, straight from the bytes: CRC-16/XMODEM bit by bit over TextEncoder's output. */
function referenceSlot(key: string): number {
  let crc = 0;
  for (const byte of new TextEncoder().encode(hashTag(key))) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % KEY_SLOTS;
}

describe("key slots", () => {
  it("match Redis Cluster's slots for the same keys (CRC-16/XMODEM mod 16384)", () => {
    // CRC-16/XMODEM's check value is 0x31C3 for "123456789".
    expect(keySlot("123456789")).toBe(0x31c3 % KEY_SLOTS);
    // `CLUSTER KEYSLOT` in Redis answers these.
    expect(keySlot("foo")).toBe(12182);
    expect(keySlot("bar")).toBe(5061);
    expect(keySlot("somekey")).toBe(11058);
  });

  it("hash only the tag between the first { and the first } after it, if it is not empty", () => {
    expect(keySlot("{user1000}.following")).toBe(keySlot("{user1000}.followers"));
    expect(keySlot("{user1000}.following")).toBe(keySlot("user1000"));
    expect(hashTag("foo{}{bar}")).toBe("foo{}{bar}");
    expect(hashTag("foo{{bar}}zap")).toBe("{bar");
    expect(hashTag("foo{bar}{zap}")).toBe("bar");
    expect(hashTag("no-tag}{")).toBe("no-tag}{");
    expect(hashTag("{")).toBe("{");
  });

  it("hash keys of any characters as their UTF-8 bytes", () => {
    expect(keySlot("é")).toBe(referenceSlot("é"));
    expect(keySlot("鍵")).toBe(referenceSlot("鍵"));
    expect(keySlot("🔒")).toBe(referenceSlot("🔒"));
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }), (key) => {
        const slot = keySlot(key);
        expect(slot).toBe(referenceSlot(key));
        expect(slot).toBeGreaterThanOrEqual(0);
        expect(slot).toBeLessThan(KEY_SLOTS);
      }),
      { numRuns: 500 },
    );
  });
});
