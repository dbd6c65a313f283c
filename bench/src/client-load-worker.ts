import { pathToFileURL } from "node:url";
import type { LockClient } from "@lock/client";
import { measurementWindow, percentile } from "./report.js";

/**
 * Client-library load generator, run as its own (pinned) process by bench/src/client-bench.ts.
 *
 * Each of `inflight` concurrent loops repeats acquire(its own key) → release through a client
 * library, the way an application would: `@lock/client` against lockd, or ioredis against Redis with
 * the usual lock recipe (acquire `SET key value NX PX lease`, release by a compare-and-delete Lua
 * script). One op = one acquire+release cycle. Both libraries pipeline on their own: every loop's
 * request goes out in the same batch as the others'.
 *
 * Prints one JSON line: ops, seconds, and the acquire and whole-cycle latency percentiles in ms.
 */
interface Options {
  target: "lockd" | "redis";
  port: number;
  inflight: number;
  durationMs: number;
  /** Another build's @lock/client (its packages/client/dist/index.js), for bench/src/builds-bench.ts. */
  clientModule?: string;
}

const options = JSON.parse(process.argv[2] ?? "{}") as Options;
const LEASE_MS = 30_000;
const RELEASE_SCRIPT =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/** One library's acquire and release of one key, as an application would write them. */
interface Locker {
  acquire(key: string): Promise<unknown>;
  release(key: string, held: unknown): Promise<unknown>;
  close(): Promise<unknown>;
}

async function lockdLocker(port: number): Promise<Locker> {
  const { LockClient: Client } = (await import(
    options.clientModule === undefined ? "@lock/client" : pathToFileURL(options.clientModule).href
  )) as typeof import("@lock/client");
  const client = new Client({ servers: [`127.0.0.1:${port}`] });
  await new Promise<void>((resolve) => client.once("connect", () => resolve()));
  return {
    acquire: (key) => client.acquire(key, { leaseMs: LEASE_MS }),
    release: (_key, lock) => (lock as Awaited<ReturnType<LockClient["acquire"]>>).release(),
    close: () => client.close(),
  };
}

async function redisLocker(port: number): Promise<Locker> {
  // Loaded only for Redis runs, so that the lockd runs carry none of it.
  const { Redis } = await import("ioredis");
  const redis = new Redis({ host: "127.0.0.1", port, lazyConnect: true });
  await redis.connect();
  redis.defineCommand("releaseLock", { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  const release = (redis as unknown as { releaseLock(key: string, value: string): Promise<number> })
    .releaseLock;
  let counter = 0;
  return {
    acquire: async (key) => {
      const value = `v${++counter}`;
      const ok = await redis.set(key, value, "PX", LEASE_MS, "NX");
      if (ok !== "OK") throw new Error(`${key} was not free`);
      return value;
    },
    release: (key, value) => release.call(redis, key, value as string),
    close: () => redis.quit(),
  };
}

const locker = options.target === "lockd" ? await lockdLocker(options.port) : await redisLocker(options.port);
const acquireLatencies: number[] = [];
const cycleLatencies: number[] = [];
let ops = 0;
let measuring = false;
let running = true;

async function loop(slot: number): Promise<void> {
  const key = `bench:${slot}`;
  while (running) {
    const started = performance.now();
    const held = await locker.acquire(key);
    const acquired = performance.now();
    await locker.release(key, held);
    if (measuring) {
      ops += 1;
      // Sampling every cycle at 1024 in flight would measure the array more than the library.
      if (options.inflight <= 16 || ops % 64 === 0) {
        acquireLatencies.push(acquired - started);
        cycleLatencies.push(performance.now() - started);
      }
    }
  }
}

const loops = Array.from({ length: options.inflight }, (_, slot) => loop(slot));
const seconds = await measurementWindow(options.durationMs, (on) => {
  measuring = on;
});
running = false;
await Promise.all(loops);
await locker.close();

acquireLatencies.sort((a, b) => a - b);
cycleLatencies.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    ops,
    seconds,
    acquireP50: percentile(acquireLatencies, 50),
    acquireP99: percentile(acquireLatencies, 99),
    cycleP50: percentile(cycleLatencies, 50),
    cycleP99: percentile(cycleLatencies, 99),
    samples: cycleLatencies.length,
  }),
);
process.exit(0);
