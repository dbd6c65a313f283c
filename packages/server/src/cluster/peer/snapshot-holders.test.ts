import { permits } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { SnapshotHolders } from "./snapshot-holders.js";

describe("SnapshotHolders", () => {
  it("hands out each holder as its frame came, exclusive, shared or permit", () => {
    const holders = new SnapshotHolders();
    holders.push({ peer: "h", key: "a", token: 7n, remainingMs: 500, id: "r1" });
    holders.push({ peer: "q", key: "s", token: 8n, remainingMs: 600, mode: permits(3), slot: 2 });
    holders.push({ peer: "h", key: "b", token: 9n, remainingMs: 0 });
    expect(holders.length).toBe(3);
    expect([0, 1, 2].map((i) => holders.take(i))).toEqual([
      { key: "a", token: 7n, remainingMs: 500, id: "r1", mode: undefined, slot: undefined },
      { key: "s", token: 8n, remainingMs: 600, id: undefined, mode: permits(3), slot: 2 },
      { key: "b", token: 9n, remainingMs: 0, id: undefined, mode: undefined, slot: undefined },
    ]);
  });

  it("keeps tens of thousands in order across its chunks", () => {
    const holders = new SnapshotHolders();
    const count = 20_000;
    for (let i = 0; i < count; i++)
      holders.push(
        i % 5_000 === 7
          ? { peer: "q", key: `k${i}`, token: BigInt(i + 1), remainingMs: i, mode: permits(2), slot: 1 }
          : { peer: "h", key: `k${i}`, token: BigInt(i + 1), remainingMs: i, id: `r${i}` },
      );
    expect(holders.length).toBe(count);
    const wrong: number[] = [];
    for (let i = 0; i < count; i++) {
      const { key, token, remainingMs, id, mode } = holders.take(i);
      const shared = i % 5_000 === 7;
      const expected = key === `k${i}` && token === BigInt(i + 1) && remainingMs === i;
      if (!expected || id !== (shared ? undefined : `r${i}`) || (mode !== undefined) !== shared)
        wrong.push(i);
    }
    expect(wrong).toEqual([]);
  });
});
