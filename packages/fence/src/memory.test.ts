import { describe, expect, it } from "vitest";
import { describeReadFenceContract } from "./contract/read-contract.js";
import { fence } from "./fence.js";
import { MemoryStore } from "./memory.js";
import { memoryFixture } from "./testing/fixtures.js";

// The store contract runs against it in testing/readme/contract.test.ts, through @lock/fence/testing.

describe("MemoryStore", () => {
  it("holds the resource while an async write awaits, so a stale writer cannot slip in", async () => {
    const store = new MemoryStore();
    const order: string[] = [];
    let finishFirst!: () => void;
    const first = fence(store, "doc", 5n, async () => {
      order.push("5 starts");
      await new Promise<void>((resolve) => {
        finishFirst = resolve;
      });
      order.push("5 ends");
    });
    const stale = fence(store, "doc", 4n, () => order.push("4 wrote"));
    // Expected from the start: the refusal may come before `first` settles (see postgres/read.test.ts).
    const refused = expect(stale).rejects.toMatchObject({ code: "FENCE_STALE_TOKEN", currentToken: 5n });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(order).toEqual(["5 starts"]);
    finishFirst();
    await first;
    await refused;
    expect(order).toEqual(["5 starts", "5 ends"]);
  });

  it("passes the resource, token and previous token to the write", async () => {
    const store = new MemoryStore();
    await fence(store, "doc", 3n, () => undefined);
    await expect(fence(store, "doc", "8", (tx) => tx)).resolves.toEqual({
      resource: "doc",
      token: 8n,
      previousToken: 3n,
    });
  });
});

describeReadFenceContract("memoryStore()", memoryFixture);
