import type { Locker } from "./locker.js";
import { BENCH_LEASE_MS } from "./locker.js";

const RELEASE_SCRIPT =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * ioredis against Redis with the usual lock recipe: acquire `SET key value NX PX lease` with a value
 * of the holder's own, release by a compare-and-delete Lua script (`defineCommand`, so EVALSHA). One
 * connection; ioredis pipelines whatever the loops send in the same turn. The recipe does not wait:
 * acquire rejects if the key is taken.
 */
export async function redisLocker(options: { readonly port: number }): Promise<Locker> {
  const { Redis } = await import("ioredis");
  const redis = new Redis({ host: "127.0.0.1", port: options.port, lazyConnect: true });
  await redis.connect();
  redis.defineCommand("releaseLock", { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  const release = (redis as unknown as { releaseLock(key: string, value: string): Promise<number> })
    .releaseLock;
  let counter = 0;
  return {
    acquire: async (key) => {
      const value = `v${++counter}`;
      const ok = await redis.set(key, value, "PX", BENCH_LEASE_MS, "NX");
      if (ok !== "OK") throw new Error(`${key} was not free`);
      return { release: () => release.call(redis, key, value) };
    },
    close: () => redis.quit(),
  };
}
