import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { describeFenceContract, MALFORMED_RESOURCES, MALFORMED_TOKENS } from "../contract/contract.js";
import { StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import { redisFixture } from "../testing/fixtures.js";
import {
  REDIS_URL,
  type RedisSandbox,
  racingRedisClient,
  redisSandbox,
  uniqueName,
} from "../testing/sandbox.js";
import { LuaScript, type RedisFenceTx, RedisStore } from "./index.js";

describeFenceContract("redis", redisFixture);

describe("RedisStore", () => {
  let sandbox: RedisSandbox;
  let store: RedisStore;
  let keyPrefix: string;
  const key = (name: string) => `${sandbox.prefix}${name}`;
  /** A fresh resource and a data key that belongs to it. */
  const fresh = (label: string) => ({ resource: uniqueName(label), data: key(uniqueName(`${label}-data`)) });

  beforeAll(async () => {
    sandbox = await redisSandbox();
    keyPrefix = `${sandbox.prefix}fence:`;
    store = new RedisStore({ client: sandbox.client, keyPrefix });
  });
  afterAll(() => sandbox?.close());

  it("runs the batch atomically with the token and hands replies back", async () => {
    const { resource, data } = fresh("replies");
    const replies = await fence(store, resource, 2n ** 64n - 1n, (tx) =>
      Promise.all([
        tx.call("INCR", `${data}:n`),
        tx.call("HSET", `${data}:h`, "a", "1", "b", "2"),
        tx.call("SET", data, "v"),
      ]),
    );
    expect(replies).toEqual([1, 2, "OK"]);
    // The fence key holds the decimal token: no double ever touched it.
    expect(await sandbox.client.get(`${keyPrefix}${resource}`)).toBe("18446744073709551615");
  });

  const refusedBeforeSending: [string, (tx: RedisFenceTx, data: string) => unknown][] = [
    ["a command outside the allowed set", (tx, data) => tx.call("FLUSHALL" as never, data)],
    ["a read command", (tx, data) => tx.call("GET" as never, data)],
    ["a wrong argument count", (tx, data) => tx.call("HSET", data, "field-without-value")],
    ["a non-finite number argument", (tx, data) => tx.call("INCRBY", data, Number.NaN)],
    ["a write to a fence key", (tx) => tx.call("SET", `${keyPrefix}someone-else`, "0")],
  ];
  for (const [what, write] of refusedBeforeSending) {
    it(`refuses ${what} before anything reaches Redis`, async () => {
      const { resource, data } = fresh("invalid");
      const attempt = fence(store, resource, 1n, (tx) => {
        tx.call("RPUSH", data, "first");
        return write(tx, data);
      });
      await expect(attempt).rejects.toMatchObject({ code: "FENCE_BAD_WRITE" });
      expect(await sandbox.client.exists(data)).toBe(0);
      expect(await store.current(resource)).toBeUndefined();
    });
  }

  it("calls the write when the token turns stale between its read and the script, applies none of it", async () => {
    const { resource, data } = fresh("race");
    await fence(store, resource, 3n, () => undefined);
    // A newer holder records 10 right after this store's read of the fence key, before its script runs.
    const racing = racingRedisClient(sandbox.client, "10");
    let reply: Promise<unknown> | undefined;
    const write = vi.fn((tx: RedisFenceTx) => {
      reply = tx.call("SET", data, "written with 5");
    });
    const attempt = fence(new RedisStore({ client: racing, keyPrefix }), resource, 5n, write);
    await expect(attempt).rejects.toMatchObject({ code: "FENCE_STALE_TOKEN", currentToken: 10n });
    expect(write).toHaveBeenCalledOnce(); // the read saw 3, so the write ran and queued its command
    await expect(reply).rejects.toBeInstanceOf(StaleTokenError); // its reply settles like fence()
    expect(await sandbox.client.exists(data)).toBe(0); // the script saw 10 and applied nothing
    expect(await store.current(resource)).toBe(10n);
  });

  it("settles a write's own promise of its replies when the script refuses it (no unhandled rejection)", async () => {
    const { resource, data } = fresh("race-replies");
    await fence(store, resource, 3n, () => undefined);
    const racing = racingRedisClient(sandbox.client, "10");
    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    try {
      const attempt = fence(new RedisStore({ client: racing, keyPrefix }), resource, 5n, (tx) =>
        Promise.all([tx.call("SET", data, "written with 5"), tx.call("RPUSH", `${data}:log`, "5")]),
      );
      await expect(attempt).rejects.toMatchObject({ code: "FENCE_STALE_TOKEN", currentToken: 10n });
      // An unhandled rejection is reported once the microtasks after it have run.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("unhandledRejection", unhandled);
    }
    expect(unhandled).not.toHaveBeenCalled();
    expect(await sandbox.client.exists(data, `${data}:log`)).toBe(0);
  });

  it("refuses a batch that would hit a key of the wrong type, writing nothing", async () => {
    const { resource, data } = fresh("wrongtype");
    await sandbox.client.set(`${data}:string`, "text");
    const attempt = fence(store, resource, 1n, (tx) => {
      tx.call("RPUSH", `${data}:log`, "applied?");
      tx.call("HSET", `${data}:string`, "f", "v");
    });
    await expect(attempt).rejects.toMatchObject({ code: "FENCE_BAD_WRITE", message: /holds a string/ });
    expect(await sandbox.client.exists(`${data}:log`)).toBe(0);
    expect(await store.current(resource)).toBeUndefined();
  });

  it("does not advance the token when a command fails mid-script (earlier commands stay: Redis caveat)", async () => {
    const { resource, data } = fresh("midway");
    await fence(store, resource, 1n, () => undefined);
    await sandbox.client.set(`${data}:counter`, "not a number");
    const attempt = fence(store, resource, 2n, (tx) => {
      tx.call("RPUSH", `${data}:log`, "before the failure");
      tx.call("INCR", `${data}:counter`);
    });
    await expect(attempt).rejects.toMatchObject({
      code: "FENCE_WRITE_FAILED",
      cause: { name: "ReplyError" },
    });
    expect(await store.current(resource)).toBe(1n);
    // The documented caveat: Redis does not undo a script's earlier writes.
    expect(await sandbox.client.lrange(`${data}:log`, 0, -1)).toEqual(["before the failure"]);
  });

  it("refuses async writes, and commands queued after the write returned", async () => {
    const { resource, data } = fresh("async");
    await expect(fence(store, resource, 1n, async (tx) => tx.call("SET", data, "x"))).rejects.toMatchObject({
      code: "FENCE_BAD_WRITE",
    });
    const late = await fence(
      store,
      resource,
      1n,
      (tx) =>
        new Promise<unknown>((resolve) => {
          setImmediate(() => {
            try {
              resolve(tx.call("SET", data, "too late"));
            } catch (error) {
              resolve(error);
            }
          });
        }),
    );
    expect(late).toMatchObject({ code: "FENCE_BAD_WRITE" });
    expect(await sandbox.client.exists(data)).toBe(0);
  });

  it("works through a client with its own ioredis keyPrefix", async () => {
    const prefixed = new Redis(REDIS_URL, { keyPrefix: `${sandbox.prefix}io:`, lazyConnect: true });
    await prefixed.connect();
    try {
      const prefixedStore = new RedisStore({ client: prefixed });
      await fence(prefixedStore, "order", 3n, (tx) => tx.call("SET", "order:status", "paid"));
      expect(await sandbox.client.get(`${sandbox.prefix}io:fence:order`)).toBe("3");
      expect(await sandbox.client.get(`${sandbox.prefix}io:order:status`)).toBe("paid");
      await expect(fence(prefixedStore, "order", 2n, () => undefined)).rejects.toBeInstanceOf(
        StaleTokenError,
      );
    } finally {
      await prefixed.quit();
    }
  });

  it("falls back to EVAL when the server does not have the script, then uses the cache", async () => {
    // A script no server has seen (a random comment changes its SHA), instead of flushing the shared cache.
    const script = new LuaScript(`-- ${uniqueName("probe")}\nreturn KEYS[1] .. ARGV[1]`);
    const cached = async () => ((await sandbox.client.script("EXISTS", script.sha)) as number[])[0];
    expect(await cached()).toBe(0);
    expect(await script.run(sandbox.client, [key("k")], ["!"])).toBe(`${key("k")}!`);
    expect(await cached()).toBe(1);
    expect(await script.run(sandbox.client, [key("k")], ["?"])).toBe(`${key("k")}?`);
  });

  it("refuses malformed input called directly, writing no key at all", async () => {
    const ownPrefix = `${sandbox.prefix}${uniqueName("unchecked")}:`;
    const unchecked = new RedisStore({ client: sandbox.client, keyPrefix: `${ownPrefix}fence:` });
    const write = vi.fn((tx: RedisFenceTx) => tx.call("SET", `${ownPrefix}data`, "written"));
    for (const bad of MALFORMED_TOKENS) {
      await expect(unchecked.fence("order", bad as bigint, write)).rejects.toMatchObject({
        code: "FENCE_BAD_TOKEN",
      });
    }
    for (const bad of MALFORMED_RESOURCES) {
      await expect(unchecked.fence(bad as string, 1n, write)).rejects.toMatchObject({
        code: "FENCE_BAD_RESOURCE",
      });
    }
    expect(write).not.toHaveBeenCalled();
    expect(await sandbox.client.keys(`${ownPrefix}*`)).toEqual([]);
    // The resource still works: no unparsable token was left behind.
    await expect(fence(unchecked, "order", 1n, () => "ok")).resolves.toBe("ok");
  });

  it("refuses an empty key prefix", () => {
    expect(() => new RedisStore({ client: sandbox.client, keyPrefix: "" })).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_OPTIONS" }),
    );
  });
});
