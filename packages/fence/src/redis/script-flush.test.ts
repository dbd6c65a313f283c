/**
 * SCRIPT FLUSH (or a restart, or a failover to a replica that never saw the script) empties the
 * server's script cache: the next EVALSHA answers NOSCRIPT and the store sends EVAL, which caches the
 * script again. On a redis-server of the test's own: flushing the shared one would empty every other
 * run's cache.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import { type PrivateRedis, startPrivateRedis } from "../testing/private-redis.js";
import { recordingClient } from "../testing/recording-client.js";
import { type RedisFenceTx, RedisStore, redisCommands } from "./index.js";

describe("RedisStore after SCRIPT FLUSH", () => {
  let server: PrivateRedis;
  let redis: Redis;

  beforeAll(async () => {
    server = await startPrivateRedis();
    redis = await server.connect();
  });
  afterAll(() => server?.stop());

  const paths = {
    "commands as data": (key: string, value: string) => redisCommands(["SET", key, value]),
    "a write function": (key: string, value: string) => (tx: RedisFenceTx) => tx.call("SET", key, value),
  };
  for (const [path, write] of Object.entries(paths)) {
    it(`falls back to EVAL once, then EVALSHA again (${path})`, async () => {
      const { client, sent } = recordingClient(redis);
      const store = new RedisStore({ client });
      const resource = `flush:${path}`;
      await fence(store, resource, 1n, write("data", "1"));
      await redis.script("FLUSH");
      sent.length = 0;

      await fence(store, resource, 2n, write("data", "2"));
      const scripts = sent.filter(({ name }) => name !== "GET").map(({ name }) => name);
      expect(scripts).toEqual(["EVALSHA", "EVAL"]);
      expect(await redis.get("data")).toBe("2");
      sent.length = 0;

      await fence(store, resource, 3n, write("data", "3"));
      expect(sent.filter(({ name }) => name !== "GET").map(({ name }) => name)).toEqual(["EVALSHA"]);
      // Refused after a flush too: as data by the EVAL fallback, which decides like the cached script;
      // a function by the pre-check.
      await redis.script("FLUSH");
      await expect(fence(store, resource, 2n, write("data", "stale"))).rejects.toBeInstanceOf(
        StaleTokenError,
      );
      expect(await redis.get("data")).toBe("3");
    });
  }
});
