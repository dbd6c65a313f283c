import { LockClient } from "@lock/client";
import { cycleLoad } from "./client-load-loops.js";
import { BENCH_LEASE_MS, type Locker } from "./lockers/locker.js";
import type { SlotsLoad, SlotsLoadOptions } from "./slots-workers.js";

/**
 * Load generator of bench/src/slots-bench.ts, run as its own pinned process: `inflight`
 * acquire+release loops (client-load-loops.ts `cycleLoad`) through one @lock/client LockClient
 * given one cluster's address; with several clusters it learns the slot map from the first `S` and
 * sends each key to its slot's cluster. Prints one JSON line: a SlotsLoad.
 */
const options = JSON.parse(process.argv[2] ?? "{}") as SlotsLoadOptions;
const client = new LockClient({ servers: [options.server] });
await new Promise<void>((resolve) => client.once("connect", () => resolve()));
if (options.primeKey !== undefined) {
  // Its slot's cluster runs no node: the acquire is redirected (`S`, which fetches the map), then
  // finds no server to take it.
  await client.acquire(options.primeKey, { leaseMs: BENCH_LEASE_MS, waitMs: 1_000 }).then(
    () => {
      throw new Error(`the prime key ${options.primeKey} was granted: its slot is served`);
    },
    () => undefined,
  );
}
let redirects = 0;
client.on("redirect", () => {
  redirects += 1;
});
const locker: Locker = {
  acquire: (key) => client.acquire(`${options.keyPrefix}${key}`, { leaseMs: BENCH_LEASE_MS }),
  close: () => client.close(),
};
const started = performance.now();
const cpuBefore = process.cpuUsage();
const load = await cycleLoad(locker, options.inflight, options.durationMs);
const cpu = process.cpuUsage(cpuBefore);
const result: SlotsLoad = {
  ...load,
  cpuMs: (cpu.user + cpu.system) / 1000,
  wallMs: performance.now() - started,
  redirects,
};
await locker.close();
console.log(JSON.stringify(result));
process.exit(0);
