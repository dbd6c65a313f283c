/**
 * The read rule on a real Redis: the shared contract (with its model test), the read script's replies
 * and refusals, and the fence key's value, which holds both marks.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { describeReadFenceContract } from "../contract/read-contract.js";
import { StaleTokenError } from "../errors.js";
import { fence, fenceRead } from "../fence.js";
import { redisFixture } from "../testing/fixtures.js";
import { type RedisSandbox, racingRedisClient, redisSandbox, uniqueName } from "../testing/sandbox.js";
import { type RedisFenceReadTx, RedisStore } from "./index.js";

describeReadFenceContract("redis", redisFixture);

describe("RedisStore.fenceRead()", () => {
  let sandbox: RedisSandbox;
  let store: RedisStore;
  let keyPrefix: string;
  const fresh = (label: string) => ({
    resource: uniqueName(label),
    data: `${sandbox.prefix}${uniqueName(`${label}-data`)}`,
  });

  beforeAll(async () => {
    sandbox = await redisSandbox();
    keyPrefix = `${sandbox.prefix}fence:`;
    store = new RedisStore({ client: sandbox.client, keyPrefix });
  });
  afterAll(() => sandbox?.close());

  it("runs the reads in the script and hands their replies back, as EVAL returns them", async () => {
    const { resource, data } = fresh("replies");
    await fence(store, resource, 5n, (tx) => [
      tx.call("SET", data, "v"),
      tx.call("HSET", `${data}:h`, "f", "1"),
    ]);
    const replies = await fenceRead(store, resource, 6n, (tx) =>
      Promise.all([tx.call("GET", data), tx.call("HGETALL", `${data}:h`), tx.call("GET", `${data}:missing`)]),
    );
    expect(replies).toEqual(["v", ["f", "1"], null]);
  });

  it("keeps both marks in the fence key: the write's token, then a comma and the recorded read's", async () => {
    const { resource } = fresh("value");
    const value = () => sandbox.client.get(keyPrefix + resource);
    await fenceRead(store, resource, 40n, () => undefined, { record: true });
    expect(await value()).toBe(",40"); // only read so far
    await fence(store, resource, 41n, () => undefined);
    expect(await value()).toBe("41"); // a write clears the read mark: as @lock/fence 0.1 wrote it
    await fenceRead(store, resource, 2n ** 64n - 1n, () => undefined, { record: true });
    expect(await value()).toBe("41,18446744073709551615");
    await fenceRead(store, resource, 42n, () => undefined, { record: true }); // lower: the mark stays
    expect(await value()).toBe("41,18446744073709551615");
    expect([await store.current(resource), await store.currentRead(resource)]).toEqual([41n, 2n ** 64n - 1n]);
  });

  const refused: [string, (tx: RedisFenceReadTx, data: string) => unknown][] = [
    ["a write command", (tx, data) => tx.call("SET" as never, data, "x")],
    ["a command outside the allowed set", (tx, data) => tx.call("KEYS" as never, data)],
    ["a wrong argument count", (tx, data) => tx.call("EXISTS", data, `${data}:other`)],
    ["a read of a fence key", (tx) => tx.call("GET", `${keyPrefix}someone-else`)],
  ];
  for (const [what, read] of refused) {
    it(`refuses ${what} in a read (FENCE_BAD_READ), recording nothing`, async () => {
      const { resource, data } = fresh("bad-read");
      const attempt = fenceRead(store, resource, 1n, (tx) => read(tx, data), { record: true });
      await expect(attempt).rejects.toMatchObject({ code: "FENCE_BAD_READ" });
      expect(await store.currentRead(resource)).toBeUndefined();
    });
  }

  it("refuses an async read, and records nothing when a read fails in the script", async () => {
    const { resource, data } = fresh("failing-read");
    await expect(fenceRead(store, resource, 1n, async () => "x")).rejects.toMatchObject({
      code: "FENCE_BAD_READ",
    });
    await sandbox.client.set(data, "a string");
    const attempt = fenceRead(store, resource, 1n, (tx) => tx.call("LRANGE", data, 0, -1), { record: true });
    await expect(attempt).rejects.toMatchObject({ code: "FENCE_BAD_READ", cause: { name: "ReplyError" } });
    expect(await store.currentRead(resource)).toBeUndefined();
  });

  it("refuses in the script a read whose token turned stale after the pre-check, recording nothing", async () => {
    const { resource, data } = fresh("race");
    await fence(store, resource, 3n, () => undefined);
    // A newer writer records 10 right after this store's GET, before its script runs.
    const racing = racingRedisClient(sandbox.client, "10");
    let reply: Promise<unknown> | undefined;
    const read = vi.fn((tx: RedisFenceReadTx) => {
      reply = tx.call("GET", data);
    });
    const attempt = fenceRead(new RedisStore({ client: racing, keyPrefix }), resource, 5n, read, {
      record: true,
    });
    await expect(attempt).rejects.toMatchObject({ code: "FENCE_STALE_READ", currentToken: 10n });
    expect(read).toHaveBeenCalledOnce();
    await expect(reply).rejects.toBeInstanceOf(StaleTokenError);
    expect(await sandbox.client.get(keyPrefix + resource)).toBe("10");
  });
});
