/**
 * Redis Cluster runs a script only when every key it declares hashes to one slot. A fenced call
 * declares its fence key and every key it touches, so they must share a hash tag; otherwise Redis
 * refuses the script before running it, and fence() says so with FENCE_CROSS_SLOT. On a one-node
 * cluster of the test's own (the shared server is standalone).
 */
import type { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StaleTokenError } from "../errors.js";
import { fence, fenceRead } from "../fence.js";
import { type PrivateRedis, startPrivateRedis } from "../testing/private-redis.js";
import { type RedisFenceTx, RedisStore, redisCommands } from "./index.js";

describe("RedisStore on Redis Cluster", () => {
  let server: PrivateRedis;
  let cluster: Cluster;
  let store: RedisStore;

  beforeAll(async () => {
    server = await startPrivateRedis({ cluster: true });
    cluster = await server.connectCluster();
    store = new RedisStore({ client: cluster });
  });
  afterAll(() => server?.stop());

  const writes = {
    "commands as data": (key: string) => redisCommands(["SET", key, "paid"]),
    "a write function": (key: string) => (tx: RedisFenceTx) => tx.call("SET", key, "paid"),
  };
  for (const [path, write] of Object.entries(writes)) {
    it(`fences keys that share the resource's hash tag (${path})`, async () => {
      const resource = `{order:${path}}`;
      await fence(store, resource, 2n, write(`${resource}:status`));
      expect(await cluster.get(`${resource}:status`)).toBe("paid");
      await expect(fence(store, resource, 1n, write(`${resource}:status`))).rejects.toBeInstanceOf(
        StaleTokenError,
      );
    });

    it(`refuses keys in another slot with FENCE_CROSS_SLOT, running nothing (${path})`, async () => {
      const resource = `{invoice:${path}}`;
      await fence(store, resource, 1n, () => undefined);
      // No hash tag: "invoice-status" hashes to a slot of its own.
      const attempt = fence(store, resource, 2n, write(`invoice-status:${path}`));
      await expect(attempt).rejects.toMatchObject({
        code: "FENCE_CROSS_SLOT",
        cause: { message: expect.stringMatching(/^CROSSSLOT/) },
      });
      expect(await cluster.exists(`invoice-status:${path}`)).toBe(0);
      expect(await store.current(resource)).toBe(1n);
    });
  }

  it("refuses a fenced read across slots the same way", async () => {
    const resource = "{report}";
    await expect(
      fenceRead(store, resource, 1n, (tx) => tx.call("GET", "elsewhere"), { record: true }),
    ).rejects.toMatchObject({ code: "FENCE_CROSS_SLOT" });
    expect(await store.currentRead(resource)).toBeUndefined();
  });
});
