import { randomBytes } from "node:crypto";
import type { ClientLoadOptions } from "./client-load.js";
import { contendLoad, cycleLoad } from "./client-load-loops.js";
import { openLocker } from "./lockers/open.js";

/**
 * Client-library load generator, run as its own (pinned) process by the benches through
 * bench/src/client-load.ts: `cycles` (each of `inflight` loops on a key of its own) or `contend`
 * (`inflight` contenders on one key) against one lock system through its usual client library
 * (bench/src/lockers/). Prints one JSON line: a CycleLoad or a ContendLoad, with the process's CPU
 * time over the load (`clientCpuMs`, warm-up included).
 */
const options = JSON.parse(process.argv[2] ?? "{}") as ClientLoadOptions;
const locker = await openLocker(options.target);
const cpuBefore = process.cpuUsage();
const result =
  options.scenario === "contend"
    ? await contendLoad(
        locker,
        `bench:contend:${randomBytes(6).toString("hex")}`,
        options.inflight,
        options.durationMs,
      )
    : await cycleLoad(locker, options.inflight, options.durationMs);
const cpu = process.cpuUsage(cpuBefore);
await locker.close();
console.log(JSON.stringify({ ...result, clientCpuMs: (cpu.user + cpu.system) / 1000 }));
process.exit(0);
