import { describe, expect, it } from "vitest";
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
