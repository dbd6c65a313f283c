/**
 * Writes given as data, redisCommands(): one round trip (the script) where a write function takes two
 * (the GET pre-check, then the script), and the same refusals, on a real Redis.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import { expectOnlyAcceptedApplied, race } from "../testing/race.js";
import { recordingClient } from "../testing/recording-client.js";
import { type RedisSandbox, redisSandbox, uniqueName } from "../testing/sandbox.js";
import { type RedisFenceTx, RedisStore, redisCommands } from "./index.js";

describe("redisCommands(): a fenced write given as data", () => {
  let sandbox: RedisSandbox;
  let keyPrefix: string;
  const fresh = (label: string) => ({
    resource: uniqueName(label),
    data: `${sandbox.prefix}${uniqueName(`${label}-data`)}`,
  });
  /** A store whose every command is recorded. */
  const recorded = () => {
    const { client, sent } = recordingClient(sandbox.client);
    return { store: new RedisStore({ client, keyPrefix }), sent };
  };

  beforeAll(async () => {
    sandbox = await redisSandbox();
    keyPrefix = `${sandbox.prefix}fence:`;
  });
  afterAll(() => sandbox?.close());

  it("sends one command per fenced write, the script, where a write function sends two", async () => {
    const { resource, data } = fresh("round-trips");
    const { store, sent } = recorded();
    await fence(store, resource, 1n, (tx) => tx.call("SET", data, "function")); // caches the script
    sent.length = 0;

    await fence(store, resource, 2n, (tx) => tx.call("SET", data, "function"));
    expect(sent.map(({ name }) => name)).toEqual(["GET", "EVALSHA"]);
    sent.length = 0;

    await fence(store, resource, 3n, redisCommands(["SET", data, "data"]));
    expect(sent.map(({ name }) => name)).toEqual(["EVALSHA"]);
    expect(await sandbox.client.get(data)).toBe("data");
  });

  it("refuses a stale token in that one command, applying none of the commands", async () => {
    const { resource, data } = fresh("stale");
    const { store, sent } = recorded();
    await fence(store, resource, 10n, redisCommands(["SET", data, "10"]));
    sent.length = 0;

    const refusal = fence(
      store,
      resource,
      9n,
      redisCommands(["SET", data, "9"], ["RPUSH", `${data}:log`, "9"]),
    );
    await expect(refusal).rejects.toBeInstanceOf(StaleTokenError);
    await expect(refusal).rejects.toMatchObject({
      code: "FENCE_STALE_TOKEN",
      presentedToken: 9n,
      currentToken: 10n,
    });
    expect(sent.map(({ name }) => name)).toEqual(["EVALSHA"]);
    expect(await sandbox.client.get(data)).toBe("10");
    expect(await sandbox.client.exists(`${data}:log`)).toBe(0);
    expect(await store.current(resource)).toBe(10n);
  });

  it("resolves with every command's reply, in order, and advances the token", async () => {
    const { resource, data } = fresh("replies");
    const store = new RedisStore({ client: sandbox.client, keyPrefix });
    const replies = await fence(
      store,
      resource,
      2n ** 64n - 1n,
      redisCommands(["INCR", `${data}:n`], ["HSET", `${data}:h`, "a", "1", "b", "2"], ["SET", data, "v"]),
    );
    expect(replies).toEqual([1, 2, "OK"]);
    expect(await store.current(resource)).toBe(2n ** 64n - 1n);
    // No commands at all: the token alone advances.
    await expect(fence(store, uniqueName("empty"), 1n, redisCommands())).resolves.toEqual([]);
  });

  it("refuses what tx.call() refuses, when the write is made (before any store sees it)", () => {
    const refused = [
      () => redisCommands(["FLUSHALL" as never, "k"]),
      () => redisCommands(["GET" as never, "k"]),
      () => redisCommands(["HSET", "k", "field-without-value"]),
      () => redisCommands(["INCRBY", "k", Number.NaN]),
      () => redisCommands(["SET", "", "v"]),
      () => redisCommands("SET k v" as never),
    ];
    for (const make of refused) expect(make).toThrow(expect.objectContaining({ code: "FENCE_BAD_WRITE" }));
  });

  it("refuses a fence key among the commands before sending anything", async () => {
    const { resource } = fresh("fence-key");
    const { store, sent } = recorded();
    const attempt = fence(store, resource, 1n, redisCommands(["SET", `${keyPrefix}someone-else`, "0"]));
    await expect(attempt).rejects.toMatchObject({ code: "FENCE_BAD_WRITE" });
    expect(sent).toEqual([]);
  });

  it("queues the same commands when called as a plain write (through a wrapper), the general path", async () => {
    const { resource, data } = fresh("wrapped");
    const { store, sent } = recorded();
    const write = redisCommands(["SET", data, "v"], ["RPUSH", `${data}:log`, "a"]);
    const wrapped = vi.fn((tx: RedisFenceTx) => write(tx));
    await expect(fence(store, resource, 1n, wrapped)).resolves.toEqual(["OK", 1]);
    expect(sent.map(({ name }) => name)).toEqual(["GET", "EVALSHA"]);
    // Stale: the wrapper is a write function, so the pre-check keeps it from being called.
    await expect(fence(store, resource, 0n, wrapped)).rejects.toBeInstanceOf(StaleTokenError);
    expect(wrapped).toHaveBeenCalledOnce();
  });

  it("never applies a refused write while writers of both kinds race with interleaved tokens (property)", async () => {
    const racers = await Promise.all(
      Array.from({ length: 4 }, async () => new RedisStore({ client: await sandbox.connect(), keyPrefix })),
    );
    const writes = fc.array(
      fc.record({ token: fc.bigInt({ min: 0n, max: 30n }), asData: fc.boolean(), racer: fc.nat(3) }),
      { minLength: 1, maxLength: 24 },
    );
    await fc.assert(
      fc.asyncProperty(writes, async (planned) => {
        const { resource, data } = fresh("property");
        const log = `${data}:log`;
        const outcomes = await race(planned, ({ token, asData, racer }) => {
          const entry = token.toString();
          const write = asData
            ? redisCommands(["RPUSH", log, entry], ["SET", data, entry])
            : (tx: RedisFenceTx) => Promise.all([tx.call("RPUSH", log, entry), tx.call("SET", data, entry)]);
          return fence(racers[racer]!, resource, token, write);
        });
        const applied = (await sandbox.client.lrange(log, 0, -1)).map(BigInt);
        const highest = expectOnlyAcceptedApplied(applied, outcomes);
        expect(await sandbox.client.get(data)).toBe(highest.toString());
        expect(await racers[0]!.current(resource)).toBe(highest);
      }),
      { numRuns: 30 },
    );
  });
});
