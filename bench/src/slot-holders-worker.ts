import { LockClient } from "@lock/client";
import type { HoldersOptions } from "./slots-workers.js";

/**
 * Holders of bench/src/slots-bench.ts `move`, run as their own pinned process: acquires every key
 * (all of one slot) through one LockClient, pipelined, and says `{"held":n}`; on SIGUSR1 releases
 * them all at once and says `{"released":n}`. With `autoExtend` the client extends each lease until
 * the source refuses (the slot is moving); the lock is then lost and its lease runs out.
 */
const options = JSON.parse(process.argv[2] ?? "{}") as HoldersOptions;
const client = new LockClient({ servers: [options.server] });
// A refused extension loses the lock: expected here, once the move has begun.
client.on("lockLost", () => undefined);
const locks = await Promise.all(
  Array.from({ length: options.count }, (_, i) =>
    client.acquire(`${options.keyPrefix}${i}`, {
      leaseMs: options.leaseMs,
      waitMs: 30_000,
      autoExtend: options.autoExtend,
    }),
  ),
);
process.once("SIGUSR1", () => {
  Promise.all(locks.map((lock) => lock.release())).then((released) => {
    console.log(JSON.stringify({ released: released.filter(Boolean).length }));
  });
});
console.log(JSON.stringify({ held: locks.length }));
