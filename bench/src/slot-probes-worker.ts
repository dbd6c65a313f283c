import { LockClient } from "@lock/client";
import { GrantGaps } from "./grant-gaps.js";
import type { ProbeResult, ProbesOptions } from "./slots-workers.js";
import { wallNow } from "./slots-workers.js";

/**
 * Probes of bench/src/slots-bench.ts `move`, run as their own pinned process: one loop per key,
 * acquire → release → acquire… through one LockClient (it follows the slot map), each grant's time
 * noted. Says `{"ready":true}` once every key was granted; on SIGUSR1 each loop stops after its
 * next grant, so every gap ends with a real grant; then prints one ProbeResult per key as a JSON
 * array line `{"probes":[…]}`.
 */
const options = JSON.parse(process.argv[2] ?? "{}") as ProbesOptions;
const client = new LockClient({ servers: [options.server] });
let stopping = false;
process.once("SIGUSR1", () => {
  stopping = true;
});

async function probe(group: string, key: string, granted: () => void): Promise<ProbeResult> {
  const gaps = new GrantGaps();
  for (;;) {
    const lock = await client.acquire(key, { leaseMs: 10_000, waitMs: options.waitMs });
    gaps.grant(wallNow());
    if (gaps.grants === 1) granted();
    await lock.release();
    if (stopping) break;
  }
  return { group, key, grants: gaps.grants, longest: gaps.longest ?? { from: 0, to: 0 } };
}

const entries = Object.entries(options.groups).flatMap(([group, keys]) =>
  keys.map((key) => ({ group, key })),
);
let waiting = entries.length;
const loops = entries.map(({ group, key }) =>
  probe(group, key, () => {
    if (--waiting === 0) console.log(JSON.stringify({ ready: true }));
  }),
);
const probes = await Promise.all(loops);
await client.close();
console.log(JSON.stringify({ probes }));
process.exit(0);
