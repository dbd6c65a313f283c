import { SlotMap } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { crossSlotKey } from "../session/bundle-checks.js";
import { SlotGate } from "../slots/slot-gate.js";
import { client, serve } from "./serve.test.data.js";

/** The bundle verb (`B`) over real sockets: one token for all keys, replies by the first key sent. */
describe("B over real sockets", () => {
  it("grants every key under one token, queues B,A behind A,B and grants it when any key releases the bundle", async () => {
    const server = await serve();
    const first = await client(server);
    const second = await client(server);
    const granted = /^B acct:2 (\d+) t1$/.exec(await first.request("B acct:2 30 0 t1 acct:1"));
    expect(granted).not.toBeNull();
    const token = granted![1]!;
    expect(await first.request("A acct:1 30 0.05 s1")).toBe("T acct:1 s1");
    second.send("B acct:1 30 0 t2 acct:2");
    expect(await first.request(`R acct:1 ${token}`)).toBe("R acct:1 1");
    const next = /^B acct:1 (\d+) t2$/.exec(await second.next());
    expect(BigInt(next![1]!)).toBeGreaterThan(BigInt(token));
    expect(await second.request(`X acct:2 ${next![1]} 10`)).toBe("X acct:2 1");
    expect(await second.request(`R acct:2 ${next![1]}`)).toBe("R acct:2 1");
    expect(await second.request(`R acct:1 ${next![1]}`)).toBe("R acct:1 0");
  });

  it("times out and cancels by the first key sent, and refuses too many keys and shared keys", async () => {
    const server = await serve({ limits: { maxBundleKeys: 2 } });
    const c = await client(server);
    await c.request("A b 30 0 h");
    expect(await c.request("B c 30 0.05 t1 b")).toBe("T c t1");
    c.send("B c 30 0 t2 b");
    expect(await c.request("C b t2")).toBe("T c t2");
    expect(await c.next()).toBe("C b 1");
    expect(await c.request("B a 30 0 t3 b c")).toMatch(/^E B a TOO_MANY_BUNDLE_KEYS t3 /);
    await c.request("Q r s 30 0 r1");
    expect(await c.request("B a 30 0 t4 r")).toMatch(/^E B a KIND_MISMATCH t4 /);
    expect(server.node.waiterCount).toBe(0);
  });

  it("refuses bundles while a cluster node cannot replicate them", async () => {
    const server = await serve();
    const c = await client(server);
    server.node.lockModesRefusal = () => "the cluster node 10.0.0.9:7420 runs an older lockd";
    expect(await c.request("B a 30 0 t1 b")).toMatch(/^E B a BUNDLES_UNAVAILABLE t1 the cluster node /);
  });

  it("with a slot map, refuses keys of two slots (CROSS_SLOT) and redirects a bundle of another cluster by its first key", async () => {
    const gate = new SlotGate("east", { activeOf: () => "127.0.0.1:7102" });
    const clusters = new Map([
      ["east", ["127.0.0.1:7001"]],
      ["west", ["127.0.0.1:7102"]],
    ]);
    gate.update(
      SlotMap.of(4n, clusters, [
        { from: 0, to: 8191, cluster: "east" },
        { from: 8192, to: 16383, cluster: "west" },
      ]),
    );
    const c = await client(await serve({ slots: gate }));
    // keySlot("bar") is 5061 (east's), keySlot("foo") 12182 (west's).
    expect(await c.request("B bar 30 0 t1 foo")).toMatch(/^E B bar CROSS_SLOT t1 foo is in another key slot/);
    expect(await c.request("B {bar}:1 30 0 t2 {bar}:2")).toMatch(/^B \{bar\}:1 \d+ t2$/);
    expect(await c.request("B {foo}:1 30 0 t3 {foo}:2")).toBe("S B {foo}:1 12182 4 west 127.0.0.1:7102 t3");
  });

  it("finds a key of another slot (CROSS_SLOT), and none when the keys share a hash tag", () => {
    expect(crossSlotKey(["{acct}:a", "{acct}:b"])).toBeUndefined();
    expect(crossSlotKey(["acct:a", "acct:b"])).toBe("acct:b");
  });
});
