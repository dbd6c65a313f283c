import { ManualClock } from "@lock/deadline-heap";
import { describe, expect, it } from "vitest";
import { LockEngine } from "../engine/engine.js";
import { TokenIssuer } from "../engine/token-issuer.js";
import { Replica } from "./replica.js";

function engine() {
  return new LockEngine<unknown>({
    clock: new ManualClock(),
    tokens: new TokenIssuer(1n, () => 2n),
    events: { granted() {}, timedOut() {} },
  });
}

const held = (table: ReturnType<typeof engine>) =>
  [...table.holders()].map(({ key, token, id }) => [key, token, id ?? null]);

describe("Replica", () => {
  it("a snapshot replaces the table and names the source; only the source's changes apply", () => {
    const table = engine();
    table.installHolder("stale", 5n, 1_000, undefined);
    const replica = new Replica(table);
    expect(replica.apply("a:1", { peer: "G", seq: 1, key: "x", token: 9n, leaseMs: 100 })).toBe(false);
    replica.load("a:1", {
      epoch: 1n,
      seq: 3,
      holders: [{ key: "k", token: 7n, remainingMs: 500, id: "r1" }],
    });
    expect(replica.source).toBe("a:1");
    expect(held(table)).toEqual([["k", 7n, "r1"]]);
    expect(replica.apply("b:1", { peer: "F", seq: 4, key: "k", token: 7n })).toBe(false);
    expect(held(table)).toEqual([["k", 7n, "r1"]]);
    // An extension keeps the holder's id, which its owner may release with after a failover.
    expect(replica.apply("a:1", { peer: "X", seq: 4, key: "k", token: 7n, leaseMs: 900 })).toBe(true);
    expect(held(table)).toEqual([["k", 7n, "r1"]]);
    expect(table.holder("k")?.remainingMs).toBe(900);
    replica.apply("a:1", { peer: "G", seq: 5, key: "j", token: 8n, leaseMs: 100, id: "r2" });
    replica.apply("a:1", { peer: "F", seq: 6, key: "k", token: 7n });
    expect(held(table)).toEqual([["j", 8n, "r2"]]);
    replica.detach();
    expect(replica.source).toBeUndefined();
    expect(replica.apply("a:1", { peer: "F", seq: 7, key: "j", token: 8n })).toBe(false);
  });

  it("counts the grants it applied from its source's stream: not a snapshot's holders, extensions or frees", () => {
    const replica = new Replica(engine());
    replica.apply("b:1", { peer: "G", seq: 1, key: "x", token: 9n, leaseMs: 100 });
    replica.load("a:1", {
      epoch: 1n,
      seq: 0,
      holders: [{ key: "k", token: 7n, remainingMs: 500, id: undefined }],
    });
    replica.apply("a:1", { peer: "G", seq: 1, key: "j", token: 8n, leaseMs: 100 });
    replica.apply("a:1", { peer: "X", seq: 2, key: "j", token: 8n, leaseMs: 900 });
    replica.apply("a:1", { peer: "F", seq: 3, key: "j", token: 8n });
    replica.apply("a:1", { peer: "G", seq: 4, key: "j", token: 10n, leaseMs: 100 });
    replica.apply("b:1", { peer: "G", seq: 5, key: "y", token: 11n, leaseMs: 100 });
    expect(replica.grantsApplied).toBe(2);
  });
});
