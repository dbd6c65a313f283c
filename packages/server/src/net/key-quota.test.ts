import { describe, expect, it } from "vitest";
import { ConnectionKeys } from "../session/connection-keys.js";
import { client, serve } from "./serve.test.data.js";

const tokenOf = (line: string) => line.split(" ")[2]!;

describe("the per-connection key quota", () => {
  it("counts held keys and queued acquires, and answers TOO_MANY_CONNECTION_KEYS past it", async () => {
    const server = await serve({ limits: { maxKeysPerConnection: 3 } });
    const other = await client(server);
    const c = await client(server);
    await other.request("A busy 30 0");
    const k1 = tokenOf(await c.request("A k1 30 0"));
    expect(await c.request("Y k2 30")).toMatch(/^Y k2 \d+$/);
    c.send("A busy 30 0 queued"); // queued behind `other`: counts too
    expect(await c.request("A k3 30 0 r3")).toMatch(/^E A k3 TOO_MANY_CONNECTION_KEYS r3 /);
    expect(await c.request("Y k3 30")).toMatch(/^E Y k3 TOO_MANY_CONNECTION_KEYS - /);
    // A key it already holds is no new key; other connections have their own quota.
    expect(await c.request(`X k1 ${k1} 30`)).toBe("X k1 1");
    expect(await other.request("A o1 30 0")).toMatch(/^A o1 \d+$/);
    expect(await c.request(`R k1 ${k1}`)).toBe("R k1 1");
    expect(await c.request("A k3 30 0")).toMatch(/^A k3 \d+$/);
  });

  it("notices keys whose lease ran out", async () => {
    const server = await serve({ limits: { maxKeysPerConnection: 1 } });
    const c = await client(server);
    const waiter = await client(server);
    expect(await c.request("A short 0.05 0")).toMatch(/^A short \d+$/);
    // The lease runs out: the waiter is granted, and `c` holds nothing any more.
    expect(await waiter.request("A short 30 0")).toMatch(/^A short \d+$/);
    expect(await c.request("A next 30 0")).toMatch(/^A next \d+$/);
  });
});

describe("ConnectionKeys", () => {
  it("walks its keys at the quota only as often as checks and time pay for it", () => {
    let now = 0;
    const keys = new ConnectionKeys(() => now);
    for (let i = 0; i < 1000; i++) keys.granted(`k${i}`, BigInt(i));
    let walks = 0;
    const stillHeld = (key: string) => {
      if (key === "k0") walks += 1;
      return true;
    };
    expect(keys.admits(0, 1000, stillHeld)).toBe(false);
    expect(walks).toBe(1); // the first check at the quota walks
    for (let i = 0; i < 100; i++) keys.admits(0, 1000, stillHeld);
    // 64 credit per check: a walk of 1000 keys every 16 checks, never one per check.
    expect(walks).toBeGreaterThan(1);
    expect(walks).toBeLessThanOrEqual(1 + Math.ceil((100 * 64) / 1000));
    now += 1000; // a second later: time paid for a walk
    const before = walks;
    keys.admits(0, 1000, stillHeld);
    expect(walks).toBe(before + 1);
  });

  it("forgets keys the engine no longer has it hold, and releases", () => {
    const keys = new ConnectionKeys(() => 0);
    keys.granted("a", 1n);
    keys.granted("b", 2n);
    keys.released("a", 9n); // another token: not ours
    expect(keys.size).toBe(2);
    keys.released("a", 1n);
    expect(keys.admits(0, 1, (key) => key !== "b")).toBe(true);
    expect(keys.size).toBe(0);
  });
});
